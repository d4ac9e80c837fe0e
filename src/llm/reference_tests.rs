//! Each family's forward pass against llama.cpp on tiny files of that family: weights from
//! a formula that `scripts/tiny_family_reference.py` also used to write the GGUF llama.cpp
//! ran, logits recorded there (`tests/fixtures/reference/tiny-<arch>.json`). f32 weights on
//! both sides, so the logits agree to rounding; a wrong RoPE style, a missing bias or norm,
//! or a head width taken from the wrong place moves them by whole units.

use std::collections::HashMap;

use anyhow::Result;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde::Deserialize;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::synthetic::tensor_shape;
use super::weights::WeightSource;
use super::{gemma3, CausalLm, LoadOptions};

#[derive(Deserialize)]
struct Fixture {
    architecture: String,
    config: Config,
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
    /// RoPE factor tensors the file holds, by name (data, not from the formula).
    #[serde(default)]
    rope_factors: HashMap<String, Vec<f32>>,
}

#[derive(Deserialize)]
struct Config {
    n_layer: usize,
    n_embd: usize,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    n_ff: usize,
    n_vocab: usize,
    n_ctx: usize,
    rope_base: f32,
    rms_eps: f64,
    n_rot: usize,
    rope_attn_factor: f32,
    sliding_window: usize,
}

/// The script's `formula`: `0.5 sin(0.1 i + s)`, norms `1 + 0.1 sin(…)`, `s` from the name.
struct FormulaWeights {
    cfg: DecoderConfig,
}

impl WeightSource for FormulaWeights {
    fn get(&self, name: &str) -> Result<Tensor> {
        let shape = tensor_shape(&self.cfg, name)?;
        let s = (name.bytes().map(|b| b as u64).sum::<u64>() % 97) as f64 / 7.0;
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n)
            .map(|i| {
                let x = (i as f64 * 0.1 + s).sin();
                (if name.contains("norm") {
                    1.0 + 0.1 * x
                } else {
                    0.5 * x
                }) as f32
            })
            .collect();
        Ok(Tensor::from_vec(data, shape, &Device::Cpu)?)
    }
    fn quantized(&self, name: &str) -> Result<QTensor> {
        Ok(QTensor::quantize(&self.get(name)?, GgmlDType::F32)?)
    }
    fn has(&self, name: &str) -> bool {
        name != "output.weight"
    }
}

/// The largest logit difference from llama.cpp over the fixture's tokens, and the largest
/// logit (for scale).
fn difference(name: &str, arch: &str, variant: Variant) -> (f32, f32) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/reference/tiny-{name}.json"));
    let fx: Fixture = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(fx.architecture, arch);
    let c = &fx.config;
    // The loader's choice among the file's factors: Llama 3.1's, else LongRoPE's short ones.
    let rope_factors = ["rope_freqs.weight", "rope_factors_short.weight"]
        .iter()
        .find_map(|n| fx.rope_factors.get(*n).cloned());
    let cfg = DecoderConfig {
        n_layer: c.n_layer,
        n_embd: c.n_embd,
        n_head: c.n_head,
        n_kv_head: c.n_kv_head,
        head_dim: c.head_dim,
        n_ff: c.n_ff,
        n_vocab: c.n_vocab,
        n_ctx: c.n_ctx,
        rope_base: c.rope_base,
        n_rot: c.n_rot,
        rope_factors,
        rope_attn_factor: c.rope_attn_factor,
        sliding_window: (c.sliding_window > 0).then(|| gemma3::sliding_window(c.sliding_window)),
        attn_scale: 1.0 / (c.head_dim as f64).sqrt(),
        rms_eps: c.rms_eps,
        variant,
    };
    let exact = LoadOptions {
        decode_dtype: Some(GgmlDType::F32),
        prefill_f32: Some(false),
    };
    let src = FormulaWeights { cfg: cfg.clone() };
    let mut model = Decoder::build(cfg, &src, &exact, &Device::Cpu).unwrap();
    let mut worst = 0f32;
    for (i, (&tok, want)) in fx.tokens.iter().zip(&fx.logits).enumerate() {
        let got = model.forward(&[tok], i).unwrap();
        for (g, w) in got.iter().zip(want) {
            worst = worst.max((g - w).abs());
        }
    }
    let scale = fx.logits.iter().flatten().fold(0f32, |m, x| m.max(x.abs()));
    (worst, scale)
}

fn check(name: &str, arch: &str, variant: Variant) {
    let (worst, scale) = difference(name, arch, variant);
    eprintln!(
        "tiny {name}: largest logit difference from llama.cpp {worst:e} (largest logit {scale})"
    );
    assert!(
        worst < 1e-3 * scale.max(1.0),
        "{name}: logits differ from llama.cpp's by up to {worst} (largest logit {scale})"
    );
}

#[test]
fn the_comparison_tells_families_apart() {
    // The qwen3 file read as qwen2 (no Q/K norms; no biases to find, so none are asked for
    // when the variant says so) must not pass.
    let no_norm = Variant {
        qk_norm: false,
        ..Variant::QWEN3
    };
    let (worst, scale) = difference("qwen3", "qwen3", no_norm);
    assert!(worst > 1e-2 * scale.max(1.0), "{worst} vs {scale}");
    // Each gemma3 part matters: read without its norms, or with SiLU, it must miss the
    // check's tolerance by a margin.
    for wrong in [
        Variant {
            gemma_norms: false,
            ..Variant::GEMMA3
        },
        Variant {
            activation: super::decoder::Activation::Silu,
            ..Variant::GEMMA3
        },
    ] {
        let (worst, scale) = difference("gemma3", "gemma3", wrong);
        assert!(
            worst > 3e-3 * scale.max(1.0),
            "{wrong:?}: {worst} vs {scale}"
        );
    }
}

#[test]
fn tiny_llama_matches_llama_cpp() {
    check("llama", "llama", Variant::LLAMA);
}

#[test]
fn tiny_llama3_with_rope_freqs_matches_llama_cpp() {
    check("llama3", "llama", Variant::LLAMA);
}

#[test]
fn tiny_qwen2_matches_llama_cpp() {
    check("qwen2", "qwen2", Variant::QWEN2);
}

#[test]
fn tiny_qwen3_matches_llama_cpp() {
    check("qwen3", "qwen3", Variant::QWEN3);
}

#[test]
fn tiny_phi3_matches_llama_cpp() {
    check("phi3", "phi3", Variant::PHI3);
}

#[test]
fn tiny_gemma3_matches_llama_cpp() {
    check("gemma3", "gemma3", Variant::GEMMA3);
}
