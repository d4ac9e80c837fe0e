//! llguidance's view of the model's vocabulary, sharing the model's tokenizer.
//!
//! `toktrie_hf_tokenizers::ByteTokenizerEnv` keeps a tokenizer of its own beside the token
//! trie, for the words the trie cannot split greedily: a second copy of a 152k-token BPE
//! is 70 MB of a 0.5B model's memory. Here the library still reads the vocabulary (token
//! bytes, special tokens, end tokens), and the environment keeps only the trie and the
//! model's own tokenizer — where the library's adjustments (no prepended space) leave
//! that tokenizer as it is; otherwise its adjusted copy is kept, as before.

use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use llguidance::toktrie::{TokEnv, TokTrie, TokenId, TokenizerEnv};
use tokenizers::Tokenizer;
use toktrie_hf_tokenizers::ByteTokenizer;

struct SharedTokenizerEnv {
    trie: TokTrie,
    tokenizer: Arc<Tokenizer>,
}

impl SharedTokenizerEnv {
    fn encode(&self, s: &str) -> Vec<TokenId> {
        self.tokenizer
            .encode(s, false)
            .expect("tokenizer error")
            .get_ids()
            .to_vec()
    }
}

impl TokenizerEnv for SharedTokenizerEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    // As `ByteTokenizerEnv` does.
    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie
            .tokenize_with_greedy_fallback(s, |s| self.encode(s))
    }

    fn tokenize_bytes_special(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(s, |s| {
            self.trie.tokenize_with_special(s, |s| self.encode(s))
        })
    }
}

/// The token environment for `tokenizer`'s model: `eos` may end the output, and the
/// vocabulary is padded to the model's `n_vocab` rows with placeholder specials.
pub fn token_env(tokenizer: &Arc<Tokenizer>, eos: &[u32], n_vocab: usize) -> Result<TokEnv> {
    let mut bt = ByteTokenizer::from_tokenizer(Tokenizer::clone(tokenizer))
        .map_err(|e| anyhow!("llguidance cannot use the tokenizer: {e}"))?;
    // Any of the model's end tokens may close the output (SmolLM2: <|im_end|> and
    // <|endoftext|>); the default is only the tokenizer's first.
    bt.set_eos_tokens(eos);
    let unchanged = same_pipeline(&bt.hf_tokenizer, tokenizer);
    let mut info = bt.tokrx_info();
    let mut token_bytes = bt.token_bytes();
    if n_vocab < token_bytes.len() {
        bail!(
            "the model has {n_vocab} output rows but its tokenizer {} tokens",
            token_bytes.len()
        );
    }
    while token_bytes.len() < n_vocab {
        let mut name = format!(".<[{}]>", token_bytes.len()).into_bytes();
        name[0] = TokTrie::SPECIAL_TOKEN_MARKER;
        token_bytes.push(name);
    }
    info.vocab_size = n_vocab as u32;
    let eos_tokens = bt.eos_tokens();
    let mut trie = TokTrie::from(&info, &token_bytes);
    if eos_tokens.len() > 1 {
        trie = trie.with_eos_tokens(&eos_tokens);
    }
    let tokenizer = if unchanged {
        tokenizer.clone()
    } else {
        Arc::new(bt.hf_tokenizer)
    };
    Ok(Arc::new(SharedTokenizerEnv { trie, tokenizer }))
}

/// Whether the two tokenizers normalize and pre-tokenize alike.
fn same_pipeline(a: &Tokenizer, b: &Tokenizer) -> bool {
    let json = |t: &Tokenizer| {
        (
            serde_json::to_string(&t.get_normalizer()).ok(),
            serde_json::to_string(&t.get_pre_tokenizer()).ok(),
        )
    };
    let (ja, jb) = (json(a), json(b));
    ja.0.is_some() && ja.1.is_some() && ja == jb
}
