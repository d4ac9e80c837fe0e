//! The llama family (SmolLM2, Llama, TinyLlama, …) on candle.
//!
//! Longer than most files: the forward pass, its fused and padded weight layouts and the
//! KV cache are one unit that only changes together. It becomes the shared decoder block
//! of the model families (engine issue), split then.
//!
//! Why our own forward pass instead of candle-transformers' `quantized_llama`: decode speed
//! on a 2-core CPU. This one
//! - keeps a preallocated KV cache written in place (no `Tensor::cat` of the whole cache per
//!   token),
//! - runs grouped-query attention by regrouping the queries per KV head instead of
//!   materialising repeated K/V (`repeat_kv` copies the whole cache 3× per token for
//!   SmolLM2),
//! - fuses Q/K/V and gate/up into one matmul each (fewer parallel regions per token),
//! - re-quantises weights at load to a type with fast SIMD kernels (Q8_0 by default: the
//!   file's Q4_1 has only a scalar path) for decoding, and keeps f32 copies of the linear
//!   weights for prompt processing, where f32 GEMM is several times faster than quantized
//!   matmul (both measured: see README's Performance section).

use anyhow::{bail, Context, Result};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use rayon::prelude::*;

use super::gguf::GgufFile;
use super::{CausalLm, LoadOptions};

#[derive(Debug, Clone)]
pub struct LlamaConfig {
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub n_ff: usize,
    pub n_vocab: usize,
    pub n_ctx: usize,
    pub rope_base: f32,
    pub rms_eps: f64,
}

impl LlamaConfig {
    fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }

    pub fn from_gguf(g: &GgufFile) -> Result<Self> {
        let arch = g.architecture()?;
        let key = |k: &str| format!("{arch}.{k}");
        let n_vocab = match g.get("tokenizer.ggml.tokens") {
            Some(v) => v.to_vec()?.len(),
            None => g.u32(&key("vocab_size"))? as usize,
        };
        Ok(LlamaConfig {
            n_layer: g.u32(&key("block_count"))? as usize,
            n_embd: g.u32(&key("embedding_length"))? as usize,
            n_head: g.u32(&key("attention.head_count"))? as usize,
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
        })
    }
}

/// A linear layer with a quantized copy for decoding and, optionally, an f32 copy for
/// prompt processing.
struct Linear {
    decode: QMatMul,
    prefill: Option<Tensor>,
    /// Input width of the decode weights: the real width, or that rounded up to a multiple
    /// of 256 with zero columns (see `decode_pad_k`).
    decode_k: usize,
}

/// Below this many rows the quantized path is faster than f32 GEMM (GEMV is bandwidth
/// bound; the f32 weights are 4× the bytes of Q8_0).
const PREFILL_F32_MIN_ROWS: usize = 8;

/// candle's repacked Q8_0 kernels (AVX512-VNNI / AVX-VNNI `vpdpbusd`, 16 columns per
/// instruction) need the input width to be a multiple of 256; otherwise the generic AVX2
/// dot product runs, about 3× slower per weight on this machine. SmolLM2's width is 576,
/// so zero-padding it to 768 costs a third more multiply-adds and still wins clearly
/// (measured: README, Performance). Returns the width to pad to, if padding applies.
fn decode_pad_k(k: usize, n: usize, dtype: GgmlDType) -> Option<usize> {
    let vnni = {
        #[cfg(target_arch = "x86_64")]
        {
            (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
                || is_x86_feature_detected!("avxvnni")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    };
    let off = std::env::var("SEXTANT_PAD_K").is_ok_and(|v| v == "0");
    if !vnni || off || dtype != GgmlDType::Q8_0 || k.is_multiple_of(256) || !n.is_multiple_of(16) {
        return None;
    }
    Some(k.div_ceil(256) * 256)
}

impl Linear {
    fn new(w: Tensor, opts: &LoadOptions) -> Result<Self> {
        let (n, k) = w.dims2()?;
        let pad = if w.device().is_cpu() {
            decode_pad_k(k, n, opts.decode_dtype)
        } else {
            None
        };
        let wd = match pad {
            Some(kp) => w.pad_with_zeros(1, 0, kp - k)?,
            None => w.clone(),
        };
        let decode = match opts.decode_dtype {
            GgmlDType::F32 => QMatMul::Tensor(wd),
            GgmlDType::F16 => QMatMul::TensorF16(wd.to_dtype(DType::F16)?),
            dt => QMatMul::from_qtensor(QTensor::quantize(&wd, dt)?)?,
        };
        let prefill = if opts.prefill_f32 && opts.decode_dtype != GgmlDType::F32 {
            Some(w)
        } else {
            None
        };
        Ok(Linear {
            decode,
            prefill,
            decode_k: pad.unwrap_or(k),
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (rows, k) = x.dims2()?;
        Ok(match &self.prefill {
            Some(w) if rows >= PREFILL_F32_MIN_ROWS => x.matmul(&w.t()?)?,
            _ if self.decode_k > k => {
                self.decode
                    .forward(&x.pad_with_zeros(1, 0, self.decode_k - k)?)?
            }
            _ => self.decode.forward(x)?,
        })
    }
}

struct Layer {
    attn_norm: Tensor,
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

pub struct Llama {
    cfg: LlamaConfig,
    device: Device,
    tok_embd: Tensor,
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
}

/// Weights as f32 tensors, from a GGUF file or from a random initialisation.
trait WeightSource: Sync {
    fn get(&self, name: &str) -> Result<Tensor>;
    fn has(&self, name: &str) -> bool;
}

struct GgufWeights<'a> {
    file: &'a GgufFile,
    device: Device,
}

impl WeightSource for GgufWeights<'_> {
    fn get(&self, name: &str) -> Result<Tensor> {
        // Dequantize on the CPU: re-quantisation and fusing happen there anyway.
        let q = self.file.tensor(name, &Device::Cpu)?;
        let t = q.dequantize(&Device::Cpu)?;
        Ok(t.to_device(&self.device)?)
    }
    fn has(&self, name: &str) -> bool {
        self.file.has_tensor(name)
    }
}

struct RandomWeights {
    cfg: LlamaConfig,
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
        let hd = c.head_dim();
        let dims: Vec<usize> = match name.rsplit_once('.').map(|x| x.0).unwrap_or(name) {
            n if n.ends_with("norm") => vec![c.n_embd],
            n if n.ends_with("attn_q") || n.ends_with("attn_output") => vec![c.n_embd, c.n_embd],
            n if n.ends_with("attn_k") || n.ends_with("attn_v") => vec![c.n_kv_head * hd, c.n_embd],
            n if n.ends_with("ffn_gate") || n.ends_with("ffn_up") => vec![c.n_ff, c.n_embd],
            n if n.ends_with("ffn_down") => vec![c.n_embd, c.n_ff],
            "token_embd" => vec![c.n_vocab, c.n_embd],
            other => bail!("random llama: unknown tensor {other}"),
        };
        let n: usize = dims.iter().product();
        let data: Vec<f32> = if name.contains("norm") {
            vec![1.0; n]
        } else {
            (0..n).map(|_| rng.random_range(-0.5f32..0.5)).collect()
        };
        Ok(Tensor::from_vec(data, dims, &self.device)?)
    }
    fn has(&self, name: &str) -> bool {
        name != "output.weight"
    }
}

impl Llama {
    pub fn from_gguf(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Self> {
        let cfg = LlamaConfig::from_gguf(file)?;
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

    /// A randomly initialised model (for tests of the decoding loop: fast, and every
    /// output must still satisfy the grammar).
    pub fn random(cfg: LlamaConfig, seed: u64, opts: &LoadOptions) -> Result<Self> {
        let src = RandomWeights {
            cfg: cfg.clone(),
            seed,
            device: Device::Cpu,
        };
        Self::build(cfg, &src, opts, &Device::Cpu)
    }

    fn build(
        cfg: LlamaConfig,
        src: &dyn WeightSource,
        opts: &LoadOptions,
        device: &Device,
    ) -> Result<Self> {
        let hd = cfg.head_dim();
        if !cfg.n_embd.is_multiple_of(cfg.n_head)
            || !cfg.n_head.is_multiple_of(cfg.n_kv_head)
            || !hd.is_multiple_of(2)
        {
            bail!("unsupported head layout: {cfg:?}");
        }
        let tok_embd = src.get("token_embd.weight")?;
        // Layers load in parallel: dequantising, fusing and re-quantising ~135M weights
        // (and first-touching their memory) dominates load time.
        let layers = (0..cfg.n_layer)
            .into_par_iter()
            .map(|i| -> Result<Layer> {
                let p = |n: &str| format!("blk.{i}.{n}.weight");
                let wq = src.get(&p("attn_q"))?;
                let wk = src.get(&p("attn_k"))?;
                let wv = src.get(&p("attn_v"))?;
                let wqkv = Tensor::cat(&[&wq, &wk, &wv], 0)?;
                let gate = src.get(&p("ffn_gate"))?;
                let up = src.get(&p("ffn_up"))?;
                let gate_up = Tensor::cat(&[&gate, &up], 0)?;
                Ok(Layer {
                    attn_norm: src.get(&p("attn_norm"))?,
                    wqkv: Linear::new(wqkv, opts)?,
                    wo: Linear::new(src.get(&p("attn_output"))?, opts)?,
                    ffn_norm: src.get(&p("ffn_norm"))?,
                    w_gate_up: Linear::new(gate_up, opts)?,
                    w_down: Linear::new(src.get(&p("ffn_down"))?, opts)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let out_norm = src.get("output_norm.weight")?;
        // Tied embeddings (SmolLM2) have no output.weight.
        let output_w = if src.has("output.weight") {
            src.get("output.weight")?
        } else {
            tok_embd.clone()
        };
        let output = Linear::new(
            output_w,
            &LoadOptions {
                prefill_f32: false,
                ..opts.clone()
            },
        )?;

        let (cos, sin) = rope_tables(&cfg, device)?;
        let mut m = Llama {
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
        };
        m.grow_cache(256)?;
        Ok(m)
    }

    pub fn config(&self) -> &LlamaConfig {
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
        let mut cache = Vec::with_capacity(self.cfg.n_layer);
        for old in self.cache.iter() {
            let k = Tensor::zeros((nkv, cap, hd), DType::F32, &self.device)?;
            let v = Tensor::zeros((nkv, cap, hd), DType::F32, &self.device)?;
            if self.cached > 0 {
                k.slice_set(&old.k.narrow(1, 0, self.cached)?.contiguous()?, 1, 0)?;
                v.slice_set(&old.v.narrow(1, 0, self.cached)?.contiguous()?, 1, 0)?;
            }
            cache.push(KvCache { k, v });
        }
        for _ in cache.len()..self.cfg.n_layer {
            cache.push(KvCache {
                k: Tensor::zeros((nkv, cap, hd), DType::F32, &self.device)?,
                v: Tensor::zeros((nkv, cap, hd), DType::F32, &self.device)?,
            });
        }
        self.cache = cache;
        self.cache_capacity = cap;
        Ok(())
    }

    fn forward_inner(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let c = &self.cfg;
        let (seq, hd, nh, nkv) = (tokens.len(), c.head_dim(), c.n_head, c.n_kv_head);
        let n_rep = nh / nkv;
        let eps = c.rms_eps as f32;
        let total = pos + seq;
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self.tok_embd.index_select(&ids, 0)?; // (seq, embd)
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
            let q = qkv
                .narrow(1, 0, nh * hd)?
                .reshape((seq, nh, hd))?
                .transpose(0, 1)?
                .contiguous()?
                .unsqueeze(0)?;
            let k = qkv
                .narrow(1, nh * hd, nkv * hd)?
                .reshape((seq, nkv, hd))?
                .transpose(0, 1)?
                .contiguous()?
                .unsqueeze(0)?;
            let v = qkv
                .narrow(1, (nh + nkv) * hd, nkv * hd)?
                .reshape((seq, nkv, hd))?
                .transpose(0, 1)?
                .contiguous()?;
            // GGUF stores Q/K rows permuted for interleaved RoPE.
            let q = candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?.squeeze(0)?;
            let k = candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?.squeeze(0)?;
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

fn rope_tables(cfg: &LlamaConfig, device: &Device) -> Result<(Tensor, Tensor)> {
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

impl CausalLm for Llama {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tiny::tiny_llama;

    fn max_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn exact() -> LoadOptions {
        // Same f32 weights on both paths, so only the attention code differs.
        LoadOptions {
            decode_dtype: GgmlDType::F32,
            prefill_f32: false,
        }
    }

    #[test]
    fn one_forward_over_the_prompt_matches_token_by_token_decoding() {
        let mut m = tiny_llama(3, &exact()).unwrap();
        let toks: Vec<u32> = (0..20).map(|i| (i * 7 % 250) as u32 + 3).collect();
        let all = m.forward(&toks, 0).unwrap();
        m.reset();
        let mut last = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            last = m.forward(&[*t], i).unwrap();
        }
        assert!(max_diff(&all, &last) < 1e-3, "{}", max_diff(&all, &last));
        // A prompt split in two chunks (the second one masked against a cached prefix).
        m.reset();
        m.forward(&toks[..12], 0).unwrap();
        let split = m.forward(&toks[12..], 12).unwrap();
        assert!(max_diff(&all, &split) < 1e-3, "{}", max_diff(&all, &split));
    }

    #[test]
    fn kv_cache_growth_keeps_earlier_tokens() {
        let mut m = tiny_llama(4, &exact()).unwrap();
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
        let mut f = tiny_llama(5, &exact()).unwrap();
        let mut q = tiny_llama(5, &LoadOptions::default()).unwrap();
        let a = f.forward(&toks, 0).unwrap();
        let b = q.forward(&toks, 0).unwrap();
        let scale = a.iter().map(|x| x.abs()).fold(0.0, f32::max);
        assert!(
            max_diff(&a, &b) < 0.05 * scale,
            "{} vs {scale}",
            max_diff(&a, &b)
        );
    }

    #[test]
    fn rejects_a_position_that_does_not_match_the_cache() {
        let mut m = tiny_llama(6, &exact()).unwrap();
        m.forward(&[5, 6], 0).unwrap();
        assert!(m.forward(&[7], 5).is_err());
    }
}
