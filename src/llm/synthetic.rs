//! Decoders with seeded random weights: of a default model's exact shape, or tiny, on any
//! device. A GPU machine gets no model files (the weights stay on this side), so its speed
//! is measured on the default models' shapes and its correctness as the logits of the same
//! random weights on the CPU and on the GPU (`sextant bench gpu`, docs/GPU.md). Unit tests
//! of the decoding loop use the tiny ones (`tiny`).

use std::time::Instant;

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::config::{DecoderConfig, Variant};
use super::decoder::Decoder;
use super::sampling::{Sampler, SamplingParams};
use super::weights::WeightSource;
use super::{CausalLm, LoadOptions};

/// A default model's shape, as its GGUF file gives it (a test compares them).
pub struct Shape {
    pub name: &'static str,
    pub config: DecoderConfig,
}

/// The shapes of the two default LLMs (`models/manifest.toml`).
pub fn default_shapes() -> Vec<Shape> {
    let base = DecoderConfig {
        n_layer: 30,
        n_embd: 576,
        n_head: 9,
        n_kv_head: 3,
        head_dim: 64,
        n_ff: 1536,
        n_vocab: 49_152,
        n_ctx: 8192,
        rope_base: 100_000.0,
        n_rot: 64,
        rope_factors: None,
        rope_attn_factor: 1.0,
        sliding_window: None,
        attn_scale: 0.125,
        // GGUF stores it as f32.
        rms_eps: f64::from(1e-5f32),
        variant: Variant::LLAMA,
    };
    vec![
        Shape {
            name: "smollm2-135m-instruct",
            config: base.clone(),
        },
        Shape {
            name: "qwen2.5-coder-0.5b-instruct",
            config: DecoderConfig {
                n_layer: 24,
                n_embd: 896,
                n_head: 14,
                n_kv_head: 2,
                n_ff: 4864,
                n_vocab: 151_936,
                n_ctx: 32_768,
                rope_base: 1_000_000.0,
                rms_eps: f64::from(1e-6f32),
                variant: Variant::QWEN2,
                ..base
            },
        },
    ]
}

/// Every family the engine runs, by GGUF architecture name.
pub const FAMILIES: [(&str, Variant); 5] = [
    ("llama", Variant::LLAMA),
    ("qwen2", Variant::QWEN2),
    ("qwen3", Variant::QWEN3),
    ("phi3", Variant::PHI3),
    ("gemma3", Variant::GEMMA3),
];

/// A tiny decoder config of one family (300 tokens, 2 layers, width 64).
pub fn tiny_shape(variant: Variant) -> DecoderConfig {
    tiny_config(300, variant)
}

/// A tiny decoder config (2 layers, width 64, 4 heads over 2 KV heads).
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

/// The first CUDA GPU, or an error that says how to get one.
pub fn cuda_device() -> Result<Device> {
    if !candle_core::utils::cuda_is_available() {
        bail!(
            "this sextant was built without CUDA: build it with scripts/cuda-build.sh \
             (see docs/GPU.md)"
        );
    }
    Device::new_cuda(0).map_err(|e| {
        anyhow::anyhow!(
            "no CUDA GPU could be opened ({e}): check the driver and CUDA_VISIBLE_DEVICES"
        )
    })
}

/// How far two models of the same weights agree on one prompt.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Agreement {
    /// The largest difference between their logits after the prompt.
    pub max_logit_diff: f32,
    /// Greedy steps after the prompt on which both chose the same token, before the first
    /// on which they did not.
    pub same_tokens: usize,
    pub steps: usize,
}

/// Runs `prompt` through both models, then `steps` greedy tokens each on its own choices.
pub fn agreement(
    a: &mut dyn CausalLm,
    b: &mut dyn CausalLm,
    prompt: &[u32],
    steps: usize,
) -> Result<Agreement> {
    a.reset();
    b.reset();
    let (mut la, mut lb) = (a.forward(prompt, 0)?, b.forward(prompt, 0)?);
    let max_logit_diff = la
        .iter()
        .zip(&lb)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    let mut same_tokens = 0;
    for step in 0..steps {
        let (ta, tb) = (argmax(&la), argmax(&lb));
        if ta != tb {
            break;
        }
        same_tokens += 1;
        let pos = prompt.len() + step;
        la = a.forward(&[ta], pos)?;
        lb = b.forward(&[tb], pos)?;
    }
    Ok(Agreement {
        max_logit_diff,
        same_tokens,
        steps,
    })
}

/// Prompt processing and greedy generation speed of one model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Speed {
    pub prompt_tokens: usize,
    pub prompt_tok_s: f64,
    pub gen_tokens: usize,
    pub gen_tok_s: f64,
}

/// One forward over `prompt_tokens` seeded random token ids, then `gen_tokens` greedy
/// steps (each reads its logits back, as generation does).
pub fn speed(model: &mut dyn CausalLm, prompt_tokens: usize, gen_tokens: usize) -> Result<Speed> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let vocab = model.n_vocab() as u32;
    let prompt: Vec<u32> = (0..prompt_tokens.max(1))
        .map(|_| rng.random_range(0..vocab))
        .collect();
    model.reset();
    let t = Instant::now();
    let mut logits = model.forward(&prompt, 0)?;
    let prompt_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for step in 0..gen_tokens {
        logits = model.forward(&[argmax(&logits)], prompt.len() + step)?;
    }
    let gen_s = t.elapsed().as_secs_f64();
    Ok(Speed {
        prompt_tokens: prompt.len(),
        prompt_tok_s: prompt.len() as f64 / prompt_s.max(1e-9),
        gen_tokens,
        gen_tok_s: gen_tokens as f64 / gen_s.max(1e-9),
    })
}

/// The highest logit's token: greedy decoding as `sampling` does it (temperature 0, no
/// penalties).
fn argmax(logits: &[f32]) -> u32 {
    let greedy = SamplingParams {
        temperature: 0.0,
        ..SamplingParams::default()
    };
    Sampler::new(greedy).sample(logits).unwrap_or(0)
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

/// A decoder of `cfg`'s shape with seeded random weights on `device`: the same seed gives
/// the same weights on every device.
pub fn random_decoder(
    cfg: DecoderConfig,
    seed: u64,
    opts: &LoadOptions,
    device: &Device,
) -> Result<Decoder> {
    let src = RandomWeights {
        cfg: cfg.clone(),
        seed,
    };
    Decoder::build(cfg, &src, opts, device)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact() -> LoadOptions {
        LoadOptions {
            decode_dtype: Some(GgmlDType::F32),
            prefill_f32: Some(false),
        }
    }

    #[test]
    fn agreement_is_exact_for_the_same_weights_and_not_for_others() {
        let prompt: Vec<u32> = (0..12).map(|i| i * 13 % 290 + 3).collect();
        for (family, variant) in FAMILIES {
            let cfg = tiny_shape(variant);
            let mut a = random_decoder(cfg.clone(), 5, &exact(), &Device::Cpu).unwrap();
            let mut b = random_decoder(cfg.clone(), 5, &exact(), &Device::Cpu).unwrap();
            let same = agreement(&mut a, &mut b, &prompt, 16).unwrap();
            assert_eq!(same.max_logit_diff, 0.0, "{family}");
            assert_eq!(same.same_tokens, 16, "{family}");
            let mut c = random_decoder(cfg, 6, &exact(), &Device::Cpu).unwrap();
            let other = agreement(&mut a, &mut c, &prompt, 16).unwrap();
            assert!(other.max_logit_diff > 0.1, "{family}: {other:?}");
        }
    }

    #[test]
    fn speed_counts_the_tokens_it_ran() {
        let mut m = random_decoder(tiny_shape(Variant::LLAMA), 1, &exact(), &Device::Cpu).unwrap();
        let s = speed(&mut m, 20, 5).unwrap();
        assert_eq!((s.prompt_tokens, s.gen_tokens), (20, 5));
        assert!(s.prompt_tok_s > 0.0 && s.gen_tok_s > 0.0);
        assert_eq!(m.cached_tokens().len(), 25);
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn without_cuda_the_error_names_the_build_script() {
        let e = cuda_device().unwrap_err().to_string();
        assert!(e.contains("scripts/cuda-build.sh"), "{e}");
    }
}
