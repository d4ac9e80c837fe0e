//! Builds the LLM's tokenizer from the GGUF file's own metadata (`tokenizer.ggml.*`) with
//! the `tokenizers` crate, so no separate tokenizer.json is needed.
//!
//! Why not candle's GGUF tokenizer builder: it prefixes a space to the first word even when
//! the file says `add_space_prefix = false` ("Hello" becomes `ĠHello`), which shifts every
//! prompt the model sees. Here the pre-tokenizer follows `tokenizer.ggml.pre` as llama.cpp
//! does, and tests pin known ids.
//!
//! SentencePiece vocabularies (`tokenizer.ggml.model = llama`: Gemma, Phi-3, Llama 2) store
//! scores instead of merges. llama.cpp merges the adjacent pair whose joined piece scores
//! highest; a BPE whose merges are every split of every piece, ranked by the piece's score,
//! does the same (the rule Hugging Face's converters use), with spaces as `▁` and bytes
//! of unknown characters as `<0xXX>` pieces.

use anyhow::{anyhow, bail, Result};
use std::collections::HashMap;

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::prepend::Prepend;
use tokenizers::normalizers::replace::Replace;
use tokenizers::normalizers::{NormalizerWrapper, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::models::gguf::GgufFile;

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;
const TOKEN_TYPE_NORMAL: i32 = 1;

/// The parts of a byte-level BPE vocabulary as a GGUF file stores them.
pub struct BpeParts {
    pub tokens: Vec<String>,
    /// "left right" pairs, highest priority first.
    pub merges: Vec<String>,
    /// One `llama_token_type` per token; empty means all normal.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.pre`: selects the pre-tokenizer regex.
    pub pre: String,
}

/// A SentencePiece vocabulary as a GGUF file stores it.
pub struct SpmParts {
    pub tokens: Vec<String>,
    pub scores: Vec<f32>,
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.add_space_prefix`: a `▁` before the text (Llama 2: yes; Gemma: no).
    pub add_space_prefix: bool,
    pub unknown: Option<String>,
}

pub fn from_gguf(gguf: &GgufFile) -> Result<Tokenizer> {
    let model = gguf.string("tokenizer.ggml.model")?;
    let strings = |key: &str| -> Result<Vec<String>> {
        let v = gguf
            .get(key)
            .ok_or_else(|| anyhow!("{}: metadata key '{key}' is missing", gguf.path.display()))?;
        v.to_vec()?
            .iter()
            .map(|x| Ok(x.to_string()?.clone()))
            .collect()
    };
    let token_types = match gguf.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .to_vec()?
            .iter()
            .map(|x| x.to_i32().map_err(|e| anyhow!("token_type: {e}")))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    match model {
        "gpt2" => {}
        "llama" => {
            let tokens = strings("tokenizer.ggml.tokens")?;
            let scores = match gguf.get("tokenizer.ggml.scores") {
                Some(v) => v
                    .to_vec()?
                    .iter()
                    .map(|x| x.to_f32().map_err(|e| anyhow!("scores: {e}")))
                    .collect::<Result<Vec<_>>>()?,
                None => bail!(
                    "{}: a SentencePiece vocabulary without tokenizer.ggml.scores",
                    gguf.path.display()
                ),
            };
            let unknown = gguf
                .u32("tokenizer.ggml.unknown_token_id")
                .ok()
                .and_then(|id| tokens.get(id as usize).cloned());
            let add_space_prefix = gguf
                .get("tokenizer.ggml.add_space_prefix")
                .and_then(|v| v.to_bool().ok())
                .unwrap_or(true);
            return build_spm(SpmParts {
                tokens,
                scores,
                token_types,
                add_space_prefix,
                unknown,
            });
        }
        other => bail!(
            "{}: tokenizer model '{other}' is not supported yet (supported: gpt2 byte-level \
             BPE as in SmolLM2, Qwen and Llama 3 files; llama SentencePiece as in Gemma and \
             Phi-3 files)",
            gguf.path.display()
        ),
    }
    let pre = gguf
        .get("tokenizer.ggml.pre")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_else(|| "default".into());
    build_bpe(BpeParts {
        tokens: strings("tokenizer.ggml.tokens")?,
        merges: strings("tokenizer.ggml.merges")?,
        token_types,
        pre,
    })
}

fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper> {
    // The regexes are llama.cpp's (llama-vocab.cpp) for the same `pre` names.
    const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    let split = |rx: &str| -> Result<PreTokenizerWrapper> {
        let split = Split::new(
            SplitPattern::Regex(rx.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| anyhow!("pre-tokenizer regex: {e}"))?;
        Ok(PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Split(split),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, false)),
        ])))
    };
    Ok(match pre {
        // GPT-2's own regex (ByteLevel's built-in) with digits split one by one.
        "smollm" | "starcoder" | "refact" | "codeshell" => {
            PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Digits(Digits::new(true)),
                PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
            ]))
        }
        "gpt2" | "default" | "gpt-2" => {
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true))
        }
        "llama3" | "llama-bpe" | "smaug-bpe" => split(LLAMA3)?,
        "qwen2" | "deepseek-r1-qwen" => split(QWEN2)?,
        other => bail!(
            "pre-tokenizer '{other}' is not supported yet (supported: smollm, gpt2, llama-bpe, qwen2)"
        ),
    })
}

/// Builds a byte-level BPE tokenizer. Control and user-defined tokens become added tokens,
/// so chat markers such as `<|im_start|>` in a rendered prompt map to their single ids.
pub fn build_bpe(parts: BpeParts) -> Result<Tokenizer> {
    let mut vocab = tokenizers::models::bpe::Vocab::with_capacity(parts.tokens.len());
    for (id, tok) in parts.tokens.iter().enumerate() {
        // A duplicated string keeps its first id, as llama.cpp does.
        vocab.entry(tok.clone()).or_insert(id as u32);
    }
    let merges = parts
        .merges
        .iter()
        .map(|m| {
            let (a, b) = m
                .split_once(' ')
                .ok_or_else(|| anyhow!("malformed BPE merge '{m}'"))?;
            Ok((a.to_string(), b.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| anyhow!("cannot build BPE: {e}"))?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre_tokenizer(&parts.pre)?));
    tok.with_decoder(Some(ByteLevelDecoder::default()));
    let added: Vec<AddedToken> = parts
        .token_types
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == TOKEN_TYPE_CONTROL || **t == TOKEN_TYPE_USER_DEFINED)
        .map(|(id, t)| AddedToken::from(parts.tokens[id].clone(), *t == TOKEN_TYPE_CONTROL))
        .collect();
    tok.add_special_tokens(&added);
    Ok(tok)
}

/// Builds a SentencePiece tokenizer as a byte-fallback BPE (see the module comment).
pub fn build_spm(parts: SpmParts) -> Result<Tokenizer> {
    let normal = |id: usize| {
        parts
            .token_types
            .get(id)
            .is_none_or(|&t| t == TOKEN_TYPE_NORMAL)
    };
    let mut ids: HashMap<&str, u32> = HashMap::with_capacity(parts.tokens.len());
    for (id, tok) in parts.tokens.iter().enumerate() {
        ids.entry(tok.as_str()).or_insert(id as u32);
    }
    // Every split of a normal piece into two normal pieces, ranked by the joined piece's
    // score (ties: lower id first, then the shorter left half).
    let mut merges: Vec<(f32, u32, usize, &str, &str)> = Vec::new();
    for (id, tok) in parts.tokens.iter().enumerate() {
        if !normal(id) || ids.get(tok.as_str()) != Some(&(id as u32)) {
            continue;
        }
        for (cut, _) in tok.char_indices().skip(1) {
            let (left, right) = tok.split_at(cut);
            let known = |s: &str| ids.get(s).is_some_and(|&i| normal(i as usize));
            if known(left) && known(right) {
                merges.push((parts.scores[id], id as u32, cut, left, right));
            }
        }
    }
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let merges: Vec<(String, String)> = merges
        .into_iter()
        .map(|(_, _, _, l, r)| (l.to_string(), r.to_string()))
        .collect();
    let vocab: tokenizers::models::bpe::Vocab =
        ids.iter().map(|(tok, id)| (tok.to_string(), *id)).collect();
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true);
    if let Some(unk) = &parts.unknown {
        builder = builder.unk_token(unk.clone());
    }
    let bpe = builder
        .build()
        .map_err(|e| anyhow!("cannot build the SentencePiece vocabulary: {e}"))?;
    let mut tok = Tokenizer::new(bpe);
    let spaces = Replace::new(" ", "▁").map_err(|e| anyhow!("{e}"))?;
    let mut normalizers = vec![NormalizerWrapper::Replace(spaces.clone())];
    let mut decoders = vec![
        DecoderWrapper::Replace(Replace::new("▁", " ").map_err(|e| anyhow!("{e}"))?),
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
    ];
    if parts.add_space_prefix {
        normalizers.insert(0, NormalizerWrapper::Prepend(Prepend::new("▁".into())));
        decoders.push(DecoderWrapper::Strip(Strip::new(' ', 1, 0)));
    }
    tok.with_normalizer(Some(NormalizerSequence::new(normalizers)));
    tok.with_decoder(Some(DecoderSequence::new(decoders)));
    // Control and user-defined pieces (Gemma: `<start_of_turn>`, runs of newlines, HTML
    // tags) are matched in the raw text first, as llama.cpp partitions them out.
    let added: Vec<AddedToken> = parts
        .token_types
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == TOKEN_TYPE_CONTROL || **t == TOKEN_TYPE_USER_DEFINED)
        .map(|(id, t)| {
            AddedToken::from(parts.tokens[id].clone(), *t == TOKEN_TYPE_CONTROL).normalized(false)
        })
        .collect();
    tok.add_special_tokens(&added);
    Ok(tok)
}

/// Encodes without adding any BOS/EOS (the chat template writes those itself).
pub fn encode(tok: &Tokenizer, text: &str) -> Result<Vec<u32>> {
    Ok(tok
        .encode(text, false)
        .map_err(|e| anyhow!("tokenize: {e}"))?
        .get_ids()
        .to_vec())
}

pub fn decode(tok: &Tokenizer, ids: &[u32]) -> Result<String> {
    tok.decode(ids, false)
        .map_err(|e| anyhow!("detokenize: {e}"))
}
