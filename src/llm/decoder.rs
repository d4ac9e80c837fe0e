//! The decoder block the model families share: pre-norm attention with grouped-query heads
//! and RoPE, then a gated MLP. A family (`llama`, `qwen2`, …) is a `DecoderConfig` read
//! from its GGUF keys plus a `Variant` of the few places families differ.
//!
//! Why our own forward pass instead of candle-transformers' models: decode speed on a
//! 2-core CPU. This one
//! - keeps a preallocated KV cache written in place (no `Tensor::cat` of the whole cache per
//!   token),
//! - runs grouped-query attention by regrouping the queries per KV head instead of
//!   materialising repeated K/V (`repeat_kv` copies the whole cache 3× per token for
//!   SmolLM2),
//! - fuses Q/K/V and gate/up into one matmul each (fewer parallel regions per token),
//! - keeps each weight in the file's type where candle has a SIMD kernel for it and
//!   re-quantizes the rest once (`weights`), with f32 prompt copies only while they fit the
//!   memory budget.

use anyhow::{bail, Context, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

use super::gguf::GgufFile;
use super::weights::{
    GgufWeights, Linear, TokenEmbedding, WeightReport, WeightSource, PREFILL_F32_BUDGET,
};
use super::{CausalLm, LoadOptions};

/// How a family applies rotary position embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Pairs of adjacent dimensions (llama: the GGUF converter permutes Q/K rows for it).
    Interleaved,
    /// The first half of the head against the second (GPT-NeoX; qwen2).
    Neox,
}

/// Where families differ within the shared block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Q, K and V projections carry biases (qwen2).
    pub qkv_bias: bool,
    /// Each head's queries and keys are RMS-normalised before RoPE (qwen3).
    pub qk_norm: bool,
    pub rope: RopeStyle,
}

impl Variant {
    pub const LLAMA: Variant = Variant {
        qkv_bias: false,
        qk_norm: false,
        rope: RopeStyle::Interleaved,
    };
    pub const QWEN2: Variant = Variant {
        qkv_bias: true,
        qk_norm: false,
        rope: RopeStyle::Neox,
    };
    pub const QWEN3: Variant = Variant {
        qkv_bias: false,
        qk_norm: true,
        rope: RopeStyle::Neox,
    };
}

#[derive(Debug, Clone)]
pub struct DecoderConfig {
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    /// Width of one attention head; `n_embd / n_head` unless the file says otherwise
    /// (qwen3: 128 with a width of 1024 and 16 heads).
    pub head_dim: usize,
    pub n_ff: usize,
    pub n_vocab: usize,
    pub n_ctx: usize,
    pub rope_base: f32,
    pub rms_eps: f64,
    pub variant: Variant,
}

impl DecoderConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// Reads the `<arch>.*` hyper-parameters every family of this block has.
    pub fn from_gguf(g: &GgufFile, variant: Variant) -> Result<Self> {
        let arch = g.architecture()?;
        let key = |k: &str| format!("{arch}.{k}");
        let n_vocab = match g.get("tokenizer.ggml.tokens") {
            Some(v) => v.to_vec()?.len(),
            None => g.u32(&key("vocab_size"))? as usize,
        };
        if g.has_tensor("rope_freqs.weight") {
            // Llama 3.1/3.2's rotary frequency factors: not applied yet (a first attempt
            // did not match llama.cpp on a tiny reference file), so say so.
            tracing::warn!(
                "{}: rope_freqs (Llama 3.1+ RoPE scaling factors) are not applied yet; this \
                 model's output will differ from llama.cpp's",
                g.path.display()
            );
        }
        let n_embd = g.u32(&key("embedding_length"))? as usize;
        let n_head = g.u32(&key("attention.head_count"))? as usize;
        Ok(DecoderConfig {
            n_layer: g.u32(&key("block_count"))? as usize,
            n_embd,
            n_head,
            head_dim: g
                .u32(&key("attention.key_length"))
                .map(|k| k as usize)
                .unwrap_or(n_embd / n_head.max(1)),
            n_kv_head: g
                .u32(&key("attention.head_count_kv"))
                .or_else(|_| g.u32(&key("attention.head_count")))? as usize,
            n_ff: g.u32(&key("feed_forward_length"))? as usize,
            n_vocab,
            n_ctx: g.u32(&key("context_length")).unwrap_or(2048) as usize,
            rope_base: g.f32(&key("rope.freq_base")).unwrap_or(10_000.0),
            rms_eps: g
                .f32(&key("attention.layer_norm_rms_epsilon"))
                .unwrap_or(1e-5) as f64,
            variant,
        })
    }

    /// Parameters of the linear layers (what f32 prompt copies would cost, ×4 bytes).
    fn linear_params(&self) -> usize {
        let hd = self.head_dim();
        let attn =
            (self.n_head + 2 * self.n_kv_head) * hd * self.n_embd + self.n_embd * self.n_embd;
        let mlp = 3 * self.n_ff * self.n_embd;
        self.n_layer * (attn + mlp)
    }
}

struct Layer {
    attn_norm: Tensor,
    /// Per-head Q and K norms (`Variant::qk_norm`), `(head_dim,)`.
    qk_norm: Option<(Tensor, Tensor)>,
    wqkv: Linear,
    wo: Linear,
    ffn_norm: Tensor,
    w_gate_up: Linear,
    w_down: Linear,
}

/// Per-layer K and V, `(n_kv_head, capacity, head_dim)`, written in place.
struct KvCache {
    k: Tensor,
    v: Tensor,
}

pub struct Decoder {
    cfg: DecoderConfig,
    device: Device,
    tok_embd: TokenEmbedding,
    layers: Vec<Layer>,
    out_norm: Tensor,
    output: Linear,
    cos: Tensor,
    sin: Tensor,
    cache: Vec<KvCache>,
    cache_capacity: usize,
    /// Tokens currently in the cache.
    cached: usize,
    /// Their ids (what prefix reuse compares a new prompt against).
    cached_ids: Vec<u32>,
    report: WeightReport,
}

/// Seeded random weights of a config's shapes (tests of the decoding loop: fast, and every
/// output must still satisfy the grammar).
struct RandomWeights {
    cfg: DecoderConfig,
    seed: u64,
    device: Device,
}

impl WeightSource for RandomWeights {
    fn get(&self, name: &str) -> Result<Tensor> {
        use rand::{Rng, SeedableRng};
        // Each tensor has its own stream, so the result does not depend on load order.
        let name_hash = name.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ name_hash);
        let c = &self.cfg;
        let kv = c.n_kv_head * c.head_dim();
        let q = c.n_head * c.head_dim();
        let (stem, kind) = name.rsplit_once('.').unwrap_or((name, ""));
        let dims: Vec<usize> = match (stem, kind) {
            (n, _) if n.ends_with("attn_q_norm") || n.ends_with("attn_k_norm") => {
                vec![c.head_dim()]
            }
            (n, _) if n.ends_with("norm") => vec![c.n_embd],
            (n, "bias") if n.ends_with("attn_q") => vec![q],
            (n, "bias") if n.ends_with("attn_k") || n.ends_with("attn_v") => vec![kv],
            (n, _) if n.ends_with("attn_q") => vec![q, c.n_embd],
            (n, _) if n.ends_with("attn_output") => vec![c.n_embd, q],
            (n, _) if n.ends_with("attn_k") || n.ends_with("attn_v") => vec![kv, c.n_embd],
            (n, _) if n.ends_with("ffn_gate") || n.ends_with("ffn_up") => vec![c.n_ff, c.n_embd],
            (n, _) if n.ends_with("ffn_down") => vec![c.n_embd, c.n_ff],
            ("token_embd", _) => vec![c.n_vocab, c.n_embd],
            (other, _) => bail!("random decoder: unknown tensor {other}"),
        };
        let n: usize = dims.iter().product();
        let data: Vec<f32> = if name.contains("norm") {
            vec![1.0; n]
        } else {
            (0..n).map(|_| rng.random_range(-0.5f32..0.5)).collect()
        };
        Ok(Tensor::from_vec(data, dims, &self.device)?)
    }
    fn quantized(&self, name: &str) -> Result<QTensor> {
        Ok(QTensor::quantize(&self.get(name)?, GgmlDType::F32)?)
    }
    fn has(&self, name: &str) -> bool {
        name != "output.weight"
    }
}

impl Decoder {
    pub fn from_gguf(
        file: &GgufFile,
        cfg: DecoderConfig,
        opts: &LoadOptions,
        device: &Device,
    ) -> Result<Self> {
        let src = GgufWeights {
            file,
            device: device.clone(),
        };
        let mut model = Self::build(cfg, &src, opts, device)
            .with_context(|| format!("loading {}", file.path.display()))?;
        // One decode step now, so kernels that repack weights on first use do it during
        // loading rather than in the user's first answer.
        model.forward(&[0], 0)?;
        model.reset();
        Ok(model)
    }

    pub fn random(cfg: DecoderConfig, seed: u64, opts: &LoadOptions) -> Result<Self> {
        let src = RandomWeights {
            cfg: cfg.clone(),
            seed,
            device: Device::Cpu,
        };
        Self::build(cfg, &src, opts, &Device::Cpu)
    }

    pub(crate) fn build(
        cfg: DecoderConfig,
        src: &dyn WeightSource,
        opts: &LoadOptions,
        device: &Device,
    ) -> Result<Self> {
        let hd = cfg.head_dim();
        if cfg.n_head == 0
            || cfg.n_kv_head == 0
            || !cfg.n_head.is_multiple_of(cfg.n_kv_head)
            || !hd.is_multiple_of(2)
        {
            bail!("unsupported head layout: {cfg:?}");
        }
        let prefill_f32 = opts
            .prefill_f32
            .unwrap_or(cfg.linear_params() * 4 <= PREFILL_F32_BUDGET);
        let tok_embd = TokenEmbedding::new(&src.quantized("token_embd.weight")?, device)?;
        let bias = cfg.variant.qkv_bias;
        // Layers load in parallel: dequantising, fusing and re-quantising the weights (and
        // first-touching their memory) dominates load time.
        let loaded = (0..cfg.n_layer)
            .into_par_iter()
            .map(|i| -> Result<(Layer, WeightReport)> {
                let p = |n: &str| format!("blk.{i}.{n}");
                let mut r = WeightReport::default();
                let mut lin = |names: &[&str], bias: bool| {
                    let names: Vec<String> = names.iter().map(|n| p(n)).collect();
                    Linear::load(src, &names, bias, opts, prefill_f32, device, &mut r)
                };
                let wqkv = lin(&["attn_q", "attn_k", "attn_v"], bias)?;
                let wo = lin(&["attn_output"], false)?;
                let w_gate_up = lin(&["ffn_gate", "ffn_up"], false)?;
                let w_down = lin(&["ffn_down"], false)?;
                let qk_norm = if cfg.variant.qk_norm {
                    Some((
                        src.get(&format!("{}.weight", p("attn_q_norm")))?,
                        src.get(&format!("{}.weight", p("attn_k_norm")))?,
                    ))
                } else {
                    None
                };
                let layer = Layer {
                    qk_norm,
                    attn_norm: src.get(&format!("{}.weight", p("attn_norm")))?,
                    wqkv,
                    wo,
                    ffn_norm: src.get(&format!("{}.weight", p("ffn_norm")))?,
                    w_gate_up,
                    w_down,
                };
                Ok((layer, r))
            })
            .collect::<Result<Vec<_>>>()?;
        let (layers, reports): (Vec<Layer>, Vec<WeightReport>) = loaded.into_iter().unzip();
        let mut report = WeightReport::merged(reports);
        report.prefill_f32 = prefill_f32;
        let out_norm = src.get("output_norm.weight")?;
        // Tied embeddings (SmolLM2, Qwen2.5 0.5B in some files) have no output.weight. The
        // output layer runs once per step on one row: never an f32 copy.
        let output_name = if src.has("output.weight") {
            "output"
        } else {
            "token_embd"
        };
        let output = Linear::load(
            src,
            &[output_name.to_string()],
            false,
            opts,
            false,
            device,
            &mut report,
        )?;

        let (cos, sin) = rope_tables(&cfg, device)?;
        let mut m = Decoder {
            cfg,
            device: device.clone(),
            tok_embd,
            layers,
            out_norm,
            output,
            cos,
            sin,
            cache: Vec::new(),
            cache_capacity: 0,
            cached: 0,
            cached_ids: Vec::new(),
            report,
        };
        m.grow_cache(256)?;
        Ok(m)
    }

    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// Grows the KV cache to hold at least `need` tokens (doubling, so growth is rare).
    fn grow_cache(&mut self, need: usize) -> Result<()> {
        if need <= self.cache_capacity {
            return Ok(());
        }
        let cap = need
            .next_power_of_two()
            .max(256)
            .min(self.cfg.n_ctx.max(need));
        let hd = self.cfg.head_dim();
        let nkv = self.cfg.n_kv_head;
        let zeros = || Tensor::zeros((nkv, cap, hd), DType::F32, &self.device);
        let mut cache = Vec::with_capacity(self.cfg.n_layer);
        for old in self.cache.iter() {
            let (k, v) = (zeros()?, zeros()?);
            if self.cached > 0 {
                k.slice_set(&old.k.narrow(1, 0, self.cached)?.contiguous()?, 1, 0)?;
                v.slice_set(&old.v.narrow(1, 0, self.cached)?.contiguous()?, 1, 0)?;
            }
            cache.push(KvCache { k, v });
        }
        for _ in cache.len()..self.cfg.n_layer {
            cache.push(KvCache {
                k: zeros()?,
                v: zeros()?,
            });
        }
        self.cache = cache;
        self.cache_capacity = cap;
        Ok(())
    }

    fn rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        Ok(match self.cfg.variant.rope {
            RopeStyle::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin)?,
            RopeStyle::Neox => candle_nn::rotary_emb::rope(x, cos, sin)?,
        })
    }

    fn forward_inner(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let c = &self.cfg;
        let (seq, hd, nh, nkv) = (tokens.len(), c.head_dim(), c.n_head, c.n_kv_head);
        let n_rep = nh / nkv;
        let eps = c.rms_eps as f32;
        let total = pos + seq;
        let mut x = self.tok_embd.lookup(tokens)?; // (seq, embd)
        let cos = self.cos.narrow(0, pos, seq)?;
        let sin = self.sin.narrow(0, pos, seq)?;
        let mask = if seq > 1 {
            Some(causal_mask(seq, pos, n_rep, &self.device)?)
        } else {
            None
        };
        let scale = 1.0 / (hd as f64).sqrt();
        for (layer, kv) in self.layers.iter().zip(self.cache.iter()) {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, eps)?;
            let qkv = layer.wqkv.forward(&h)?; // (seq, (nh + 2 nkv) hd)
            let heads = |start: usize, n: usize| -> Result<Tensor> {
                Ok(qkv
                    .narrow(1, start, n * hd)?
                    .reshape((seq, n, hd))?
                    .transpose(0, 1)?
                    .contiguous()?)
            };
            let (mut q, mut k) = (heads(0, nh)?, heads(nh * hd, nkv)?);
            if let Some((qn, kn)) = &layer.qk_norm {
                q = candle_nn::ops::rms_norm(&q, qn, eps)?;
                k = candle_nn::ops::rms_norm(&k, kn, eps)?;
            }
            let (q, k) = (q.unsqueeze(0)?, k.unsqueeze(0)?);
            let v = heads((nh + nkv) * hd, nkv)?;
            let q = self.rope(&q, &cos, &sin)?.squeeze(0)?;
            let k = self.rope(&k, &cos, &sin)?.squeeze(0)?;
            kv.k.slice_set(&k, 1, pos)?;
            kv.v.slice_set(&v, 1, pos)?;
            let keys = kv.k.narrow(1, 0, total)?; // (nkv, total, hd)
            let values = kv.v.narrow(1, 0, total)?;
            // Heads h = g * n_rep + r share KV head g: regroup queries as
            // (nkv, n_rep * seq, hd) so one batched matmul per KV head covers them.
            let qg = q.reshape((nkv, n_rep * seq, hd))?;
            let mut att = (qg.matmul(&keys.t()?)? * scale)?;
            if let Some(mask) = &mask {
                att = att.broadcast_add(mask)?;
            }
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att
                .matmul(&values)? // (nkv, n_rep * seq, hd)
                .reshape((nh, seq, hd))?
                .transpose(0, 1)?
                .reshape((seq, nh * hd))?;
            x = (x + layer.wo.forward(&y)?)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, eps)?;
            let gu = layer.w_gate_up.forward(&h)?;
            let ff = gu.dim(1)? / 2;
            let a = (candle_nn::ops::silu(&gu.narrow(1, 0, ff)?)? * gu.narrow(1, ff, ff)?)?;
            x = (x + layer.w_down.forward(&a)?)?;
        }
        let last = x.narrow(0, seq - 1, 1)?;
        let h = candle_nn::ops::rms_norm(&last, &self.out_norm, eps)?;
        Ok(self.output.forward(&h)?.squeeze(0)?)
    }
}

fn rope_tables(cfg: &DecoderConfig, device: &Device) -> Result<(Tensor, Tensor)> {
    let hd = cfg.head_dim();
    let inv: Vec<f32> = (0..hd / 2)
        .map(|i| 1.0 / cfg.rope_base.powf(2.0 * i as f32 / hd as f32))
        .collect();
    let n = cfg.n_ctx;
    let inv = Tensor::from_vec(inv, (1, hd / 2), device)?;
    let t = Tensor::arange(0u32, n as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((n, 1))?;
    let freqs = t.broadcast_mul(&inv)?;
    Ok((freqs.cos()?, freqs.sin()?))
}

/// Additive mask for `seq` new tokens after `pos` cached ones, repeated for the `n_rep`
/// query heads that share a KV head: `(n_rep * seq, pos + seq)`.
fn causal_mask(seq: usize, pos: usize, n_rep: usize, device: &Device) -> Result<Tensor> {
    let total = pos + seq;
    let mut m = Vec::with_capacity(n_rep * seq * total);
    for _ in 0..n_rep {
        for i in 0..seq {
            for j in 0..total {
                m.push(if j > pos + i { f32::NEG_INFINITY } else { 0.0 });
            }
        }
    }
    Ok(Tensor::from_vec(m, (n_rep * seq, total), device)?)
}

impl CausalLm for Decoder {
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Vec<f32>> {
        if tokens.is_empty() {
            bail!("forward called with no tokens");
        }
        if pos != self.cached {
            bail!(
                "forward at position {pos} but the cache holds {} tokens",
                self.cached
            );
        }
        let total = pos + tokens.len();
        if total > self.cfg.n_ctx {
            bail!(
                "context overflow: {total} tokens exceed the model's context of {}",
                self.cfg.n_ctx
            );
        }
        self.grow_cache(total)?;
        let logits = self.forward_inner(tokens, pos)?;
        self.cached = total;
        self.cached_ids.truncate(pos);
        self.cached_ids.extend_from_slice(tokens);
        Ok(logits.to_dtype(DType::F32)?.to_vec1()?)
    }

    fn cached_tokens(&self) -> &[u32] {
        &self.cached_ids
    }

    fn reset(&mut self) {
        self.cached = 0;
        self.cached_ids.clear();
    }

    fn truncate(&mut self, len: usize) {
        self.cached = self.cached.min(len);
        self.cached_ids.truncate(self.cached);
    }

    fn n_vocab(&self) -> usize {
        self.cfg.n_vocab
    }

    fn n_ctx(&self) -> usize {
        self.cfg.n_ctx
    }

    fn weights_summary(&self) -> String {
        self.report.summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tiny::{tiny_config, tiny_decoder};

    fn max_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn exact() -> LoadOptions {
        // Same f32 weights on both paths, so only the attention code differs.
        LoadOptions {
            decode_dtype: Some(GgmlDType::F32),
            prefill_f32: Some(false),
        }
    }

    #[test]
    fn one_forward_over_the_prompt_matches_token_by_token_decoding() {
        for variant in [Variant::LLAMA, Variant::QWEN2, Variant::QWEN3] {
            let mut m = tiny_decoder(3, variant, &exact()).unwrap();
            let toks: Vec<u32> = (0..20).map(|i| (i * 7 % 250) as u32 + 3).collect();
            let all = m.forward(&toks, 0).unwrap();
            m.reset();
            let mut last = Vec::new();
            for (i, t) in toks.iter().enumerate() {
                last = m.forward(&[*t], i).unwrap();
            }
            assert!(
                max_diff(&all, &last) < 1e-3,
                "{variant:?}: {}",
                max_diff(&all, &last)
            );
            // A prompt split in two chunks (the second one masked against a cached prefix).
            m.reset();
            m.forward(&toks[..12], 0).unwrap();
            let split = m.forward(&toks[12..], 12).unwrap();
            assert!(
                max_diff(&all, &split) < 1e-3,
                "{variant:?}: {}",
                max_diff(&all, &split)
            );
        }
    }

    #[test]
    fn variants_compute_different_functions_of_the_same_weights() {
        // The biases and the RoPE style must reach the output.
        let toks: Vec<u32> = (0..8).map(|i| i + 40).collect();
        let a = tiny_decoder(9, Variant::LLAMA, &exact())
            .unwrap()
            .forward(&toks, 0)
            .unwrap();
        let neox_no_bias = Variant {
            qkv_bias: false,
            qk_norm: false,
            rope: RopeStyle::Neox,
        };
        let b = tiny_decoder(9, neox_no_bias, &exact())
            .unwrap()
            .forward(&toks, 0)
            .unwrap();
        let c = tiny_decoder(9, Variant::QWEN2, &exact())
            .unwrap()
            .forward(&toks, 0)
            .unwrap();
        let d = tiny_decoder(9, Variant::QWEN3, &exact())
            .unwrap()
            .forward(&toks, 0)
            .unwrap();
        assert!(max_diff(&a, &b) > 1e-3 && max_diff(&b, &c) > 1e-3 && max_diff(&b, &d) > 1e-3);
    }

    #[test]
    fn kv_cache_growth_keeps_earlier_tokens() {
        let mut m = tiny_decoder(4, Variant::LLAMA, &exact()).unwrap();
        let toks: Vec<u32> = (0..300).map(|i| (i * 13 % 250) as u32 + 3).collect();
        let all = m.forward(&toks, 0).unwrap();
        m.reset();
        m.forward(&toks[..200], 0).unwrap(); // capacity 256
        let mut last = Vec::new();
        for (i, t) in toks.iter().enumerate().skip(200) {
            last = m.forward(&[*t], i).unwrap(); // grows past 256
        }
        assert!(max_diff(&all, &last) < 1e-3, "{}", max_diff(&all, &last));
    }

    #[test]
    fn quantized_decoding_stays_close_to_f32() {
        let toks: Vec<u32> = (0..10).map(|i| i + 40).collect();
        let mut f = tiny_decoder(5, Variant::QWEN2, &exact()).unwrap();
        let mut q = tiny_decoder(5, Variant::QWEN2, &LoadOptions::default()).unwrap();
        let a = f.forward(&toks, 0).unwrap();
        let b = q.forward(&toks, 0).unwrap();
        let scale = a.iter().map(|x| x.abs()).fold(0.0, f32::max);
        assert!(
            max_diff(&a, &b) < 0.05 * scale,
            "{} vs {scale}",
            max_diff(&a, &b)
        );
        assert!(
            q.weights_summary().contains("F32→Q8_0"),
            "{}",
            q.weights_summary()
        );
    }

    #[test]
    fn prefill_copies_follow_the_memory_budget() {
        let small = tiny_config(300, Variant::LLAMA);
        assert!(small.linear_params() * 4 <= PREFILL_F32_BUDGET);
        let mut big = small.clone();
        (big.n_layer, big.n_embd, big.n_ff) = (24, 896, 4864);
        (big.n_head, big.n_kv_head, big.head_dim) = (14, 2, 64);
        assert!(
            big.linear_params() * 4 > PREFILL_F32_BUDGET,
            "a 0.5B model gets no f32 copies"
        );
    }

    #[test]
    fn rejects_a_position_that_does_not_match_the_cache() {
        let mut m = tiny_decoder(6, Variant::LLAMA, &exact()).unwrap();
        m.forward(&[5, 6], 0).unwrap();
        assert!(m.forward(&[7], 5).is_err());
    }
}
