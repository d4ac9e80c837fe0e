//! A tiny randomly initialised llama with a byte-level tokenizer, for unit tests of the
//! decoding loop: fast, and with a grammar mask every output must still validate.

use anyhow::Result;
use candle_core::quantized::GgmlDType;
use candle_core::Device;

use super::chat_template::{ChatTemplate, CHATML};
use super::decoder::{Decoder, Variant};
use super::synthetic::random_decoder;
pub use super::synthetic::tiny_config;
use super::tokenizer::{build_bpe, BpeParts};
use super::{Llm, LoadOptions};

/// GPT-2's byte → printable character map (what byte-level BPE vocabularies store).
fn byte_to_char(b: u8) -> char {
    let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
    if printable {
        char::from_u32(b as u32).unwrap()
    } else {
        // Non-printable bytes map to 256 + their rank among non-printable bytes.
        let rank = (0..b)
            .filter(|&x| !((b'!'..=b'~').contains(&x) || (0xA1..=0xAC).contains(&x) || x >= 0xAE))
            .count();
        char::from_u32(256 + rank as u32).unwrap()
    }
}

/// Special tokens first (as SmolLM2 has them), then the 256 bytes, then a few merges so
/// multi-byte tokens exist and the grammar must handle tokens spanning lexemes.
pub fn tiny_tokenizer() -> Result<tokenizers::Tokenizer> {
    let mut tokens: Vec<String> = vec![
        "<|endoftext|>".into(),
        "<|im_start|>".into(),
        "<|im_end|>".into(),
    ];
    let mut types = vec![3, 3, 3];
    for b in 0..=255u8 {
        tokens.push(byte_to_char(b).to_string());
        types.push(1);
    }
    let merges_src = [
        ("\"", ":"),
        ("\"", ","),
        ("Ġ", "t"),
        ("e", "r"),
        ("{", "\""),
        ("Ġt", "er"),
    ];
    let mut merges = Vec::new();
    for (a, b) in merges_src {
        merges.push(format!("{a} {b}"));
        tokens.push(format!("{a}{b}"));
        types.push(1);
    }
    build_bpe(BpeParts {
        tokens,
        merges,
        token_types: types,
        pre: "smollm".into(),
    })
}

pub fn tiny_decoder(seed: u64, variant: Variant, opts: &LoadOptions) -> Result<Decoder> {
    let tok = tiny_tokenizer()?;
    random_decoder(
        tiny_config(tok.get_vocab_size(true), variant),
        seed,
        opts,
        &Device::Cpu,
    )
}

pub fn tiny_llm(seed: u64) -> Result<Llm> {
    tiny_llm_of(seed, "llama", Variant::LLAMA)
}

/// A tiny random model of one family (`architecture` is only its name in reports).
pub fn tiny_llm_of(seed: u64, architecture: &str, variant: Variant) -> Result<Llm> {
    let tok = tiny_tokenizer()?;
    let opts = LoadOptions {
        decode_dtype: Some(GgmlDType::Q8_0),
        prefill_f32: Some(true),
    };
    let mut cfg = tiny_config(tok.get_vocab_size(true), variant);
    if variant.gemma_norms {
        // Outputs run past the window, so the sliding-window path is exercised.
        cfg.sliding_window = Some(super::gemma3::sliding_window(32));
    }
    let model = random_decoder(cfg, seed, &opts, &Device::Cpu)?;
    let eos = vec![2, 0];
    Llm::from_parts(
        "tiny-random",
        architecture,
        Box::new(model),
        tok,
        ChatTemplate::new(CHATML, "", "<|im_end|>")?,
        eos,
        Device::Cpu,
    )
}
