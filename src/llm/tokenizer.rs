//! Builds the LLM's tokenizer from the GGUF file's own metadata (`tokenizer.ggml.*`) with
//! the `tokenizers` crate, so no separate tokenizer.json is needed.
//!
//! Why not candle's GGUF tokenizer builder: it prefixes a space to the first word even when
//! the file says `add_space_prefix = false` ("Hello" becomes `ĠHello`), which shifts every
//! prompt the model sees. Here the pre-tokenizer follows `tokenizer.ggml.pre` as llama.cpp
//! does, and tests pin known ids.

use anyhow::{anyhow, bail, Result};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use super::gguf::GgufFile;

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

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

pub fn from_gguf(gguf: &GgufFile) -> Result<Tokenizer> {
    let model = gguf.string("tokenizer.ggml.model")?;
    if model != "gpt2" {
        bail!(
            "{}: tokenizer model '{model}' is not supported yet (supported: gpt2 byte-level BPE, \
             as used by SmolLM2, Qwen2 and Llama 3 GGUFs)",
            gguf.path.display()
        );
    }
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
