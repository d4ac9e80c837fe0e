//! A tiny randomly initialised llama with a byte-level tokenizer, for unit tests of the
//! decoding loop: fast, and with a grammar mask every output must still validate.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::chat_template::{ChatTemplate, CHATML};
use super::decoder::{Decoder, DecoderConfig, Variant};
use super::tokenizer::{build_bpe, BpeParts};
use super::weights::WeightSource;
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

pub fn tiny_config(n_vocab: usize, variant: Variant) -> DecoderConfig {
    DecoderConfig {
        n_layer: 2,
        n_embd: 64,
        n_head: 4,
        n_kv_head: 2,
        head_dim: 16,
        n_ff: 128,
        n_vocab,
        n_ctx: 4096,
        rope_base: 10_000.0,
        n_rot: 16,
        rope_factors: None,
        rope_attn_factor: 1.0,
        sliding_window: None,
        attn_scale: 0.25,
        rms_eps: 1e-5,
        variant,
    }
}

/// The shape of a named GGUF tensor of a decoder of this config (the weight sources of
/// tests: random here, a formula in `reference_tests`).
pub fn tensor_shape(c: &DecoderConfig, name: &str) -> Result<Vec<usize>> {
    let (q, kv) = (c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
    let bias = name.ends_with(".bias");
    let stem = name
        .strip_suffix(".weight")
        .or(name.strip_suffix(".bias"))
        .unwrap_or(name);
    let part = stem.rsplit('.').next().unwrap_or(stem);
    Ok(match (part, bias) {
        ("token_embd", _) => vec![c.n_vocab, c.n_embd],
        ("attn_q_norm" | "attn_k_norm", _) => vec![c.head_dim],
        (n, _) if n.ends_with("norm") => vec![c.n_embd],
        ("attn_q", true) => vec![q],
        ("attn_k" | "attn_v", true) => vec![kv],
        ("attn_q", false) => vec![q, c.n_embd],
        ("attn_k" | "attn_v", false) => vec![kv, c.n_embd],
        ("attn_qkv", false) => vec![q + 2 * kv, c.n_embd],
        ("attn_output", _) => vec![c.n_embd, q],
        ("ffn_up", _) if c.variant.fused => vec![2 * c.n_ff, c.n_embd],
        ("ffn_gate" | "ffn_up", _) => vec![c.n_ff, c.n_embd],
        ("ffn_down", _) => vec![c.n_embd, c.n_ff],
        _ => bail!("no tensor {name} in a test decoder"),
    })
}

/// Seeded random weights of a config's shapes (tests of the decoding loop: fast, and every
/// output must still satisfy the grammar).
struct RandomWeights {
    cfg: DecoderConfig,
    seed: u64,
}

impl WeightSource for RandomWeights {
    fn get(&self, name: &str) -> Result<Tensor> {
        use rand::{Rng, SeedableRng};
        // Each tensor has its own stream, so the result does not depend on load order.
        let name_hash = name.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ name_hash);
        let dims = tensor_shape(&self.cfg, name)?;
        let n: usize = dims.iter().product();
        let data: Vec<f32> = if name.contains("norm") {
            vec![1.0; n]
        } else {
            (0..n).map(|_| rng.random_range(-0.5f32..0.5)).collect()
        };
        Ok(Tensor::from_vec(data, dims, &Device::Cpu)?)
    }
    fn quantized(&self, name: &str) -> Result<QTensor> {
        Ok(QTensor::quantize(&self.get(name)?, GgmlDType::F32)?)
    }
    fn has(&self, name: &str) -> bool {
        name != "output.weight"
    }
}

pub fn random_decoder(cfg: DecoderConfig, seed: u64, opts: &LoadOptions) -> Result<Decoder> {
    let src = RandomWeights {
        cfg: cfg.clone(),
        seed,
    };
    Decoder::build(cfg, &src, opts, &Device::Cpu)
}

pub fn tiny_decoder(seed: u64, variant: Variant, opts: &LoadOptions) -> Result<Decoder> {
    let tok = tiny_tokenizer()?;
    random_decoder(tiny_config(tok.get_vocab_size(true), variant), seed, opts)
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
    let model = random_decoder(cfg, seed, &opts)?;
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
