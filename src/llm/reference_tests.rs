//! Each family's forward pass against llama.cpp on tiny files of that family: weights from
//! a formula that `scripts/tiny_family_reference.py` also used to write the GGUF llama.cpp
//! ran, logits recorded there (`tests/fixtures/reference/tiny-<arch>.json`). f32 weights on
//! both sides, so the logits agree to rounding; a wrong RoPE style, a missing bias or norm,
//! or a head width taken from the wrong place moves them by whole units.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde::Deserialize;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::weights::WeightSource;
use super::{CausalLm, LoadOptions};

#[derive(Deserialize)]
struct Fixture {
    architecture: String,
    config: Config,
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
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
}

/// The script's `formula`: `0.5 sin(0.1 i + s)`, norms `1 + 0.1 sin(…)`, `s` from the name.
struct FormulaWeights {
    cfg: DecoderConfig,
}

impl FormulaWeights {
    fn shape(&self, name: &str) -> Result<Vec<usize>> {
        let c = &self.cfg;
        let (q, kv) = (c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
        let stem = name.strip_suffix(".weight").or(name.strip_suffix(".bias"));
        let bias = name.ends_with(".bias");
        let part = stem.and_then(|s| s.rsplit('.').next()).unwrap_or(name);
        Ok(match (part, bias) {
            ("token_embd", _) => vec![c.n_vocab, c.n_embd],
            ("attn_q_norm" | "attn_k_norm", _) => vec![c.head_dim],
            ("output_norm" | "attn_norm" | "ffn_norm", _) => vec![c.n_embd],
            ("attn_q", true) => vec![q],
            ("attn_k" | "attn_v", true) => vec![kv],
            ("attn_q", false) => vec![q, c.n_embd],
            ("attn_k" | "attn_v", false) => vec![kv, c.n_embd],
            ("attn_output", _) => vec![c.n_embd, q],
            ("ffn_gate" | "ffn_up", _) => vec![c.n_ff, c.n_embd],
            ("ffn_down", _) => vec![c.n_embd, c.n_ff],
            _ => bail!("no tensor {name} in the tiny files"),
        })
    }
}

impl WeightSource for FormulaWeights {
    fn get(&self, name: &str) -> Result<Tensor> {
        let shape = self.shape(name)?;
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
fn difference(arch: &str, variant: Variant) -> (f32, f32) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/reference/tiny-{arch}.json"));
    let fx: Fixture = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(fx.architecture, arch);
    let c = &fx.config;
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

fn check(arch: &str, variant: Variant) {
    let (worst, scale) = difference(arch, variant);
    eprintln!(
        "tiny {arch}: largest logit difference from llama.cpp {worst:e} (largest logit {scale})"
    );
    assert!(
        worst < 1e-3 * scale.max(1.0),
        "{arch}: logits differ from llama.cpp's by up to {worst} (largest logit {scale})"
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
    let (worst, scale) = difference("qwen3", no_norm);
    assert!(worst > 1e-2 * scale.max(1.0), "{worst} vs {scale}");
}

#[test]
fn tiny_llama_matches_llama_cpp() {
    check("llama", Variant::LLAMA);
}

#[test]
fn tiny_qwen2_matches_llama_cpp() {
    check("qwen2", Variant::QWEN2);
}

#[test]
fn tiny_qwen3_matches_llama_cpp() {
    check("qwen3", Variant::QWEN3);
}
