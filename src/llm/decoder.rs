//! The decoder block the model families share: pre-norm attention with grouped-query heads
//! and RoPE, then a gated MLP. A family (`llama`, `qwen2`, …) is a `DecoderConfig` read
//! from its GGUF keys plus a `Variant` of the few places families differ (both in
//! `config`); positions (RoPE angles, masks) are in `positions`.
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
use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

pub use super::config::{Activation, DecoderConfig, RopeStyle, SlidingWindow, Variant};
use super::positions::{causal_mask, RopeAngles};
use super::token_table::Table;
use super::weights::{
    GgufWeights, Linear, PromptRows, WeightReport, WeightSource, PREFILL_F32_BUDGET,
};
use super::{CausalLm, LoadOptions};
use crate::models::gguf::GgufFile;

/// Prompt tokens per forward pass. A longer prompt runs in pieces: each piece's
/// activations and attention scores are the whole prompt's divided by the pieces (a
/// 512-token prompt's scores alone were 9–15 MB a layer, the peak of a loaded model's
/// memory), and 128 rows still keep the tiled products busy.
const PROMPT_PIECE: usize = 128;

struct Layer {
    /// Sees only the sliding window (and uses the local RoPE angles).
    local: bool,
    attn_norm: Tensor,
    /// gemma3's norms of the attention and MLP outputs.
    post_norms: Option<(Tensor, Tensor)>,
    /// Per-head Q and K norms (`Variant::qk_norm`), `(head_dim,)`.
    qk_norm: Option<(Tensor, Tensor)>,
    wqkv: Linear,
    wo: Linear,
    ffn_norm: Tensor,
    w_gate_up: Linear,
    w_down: Linear,
}

/// Where token ids become rows.
enum TokenEmbedding {
    /// The table in the file's type.
    Table(Table),
    /// The tied output layer's rows, of the table's type (`Linear::rows_exactly`).
    Output(GgmlDType),
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
    rope: RopeAngles,
    /// The sliding-window layers' angles (gemma3), when their base differs.
    rope_local: Option<RopeAngles>,
    cache: Vec<KvCache>,
    cache_capacity: usize,
    /// Tokens currently in the cache.
    cached: usize,
    /// Their ids (what prefix reuse compares a new prompt against).
    cached_ids: Vec<u32>,
    report: WeightReport,
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
            || cfg.n_rot > hd
            || !cfg.n_rot.is_multiple_of(2)
        {
            bail!("unsupported head layout: {cfg:?}");
        }
        let prefill_f32 = opts
            .prefill_f32
            .unwrap_or(cfg.linear_params() * 4 <= PREFILL_F32_BUDGET);
        let bias = cfg.variant.qkv_bias;
        let out_norm = src.get("output_norm.weight")?;
        // The output layer first, while nothing else is held: its table as read and its
        // tiles are both in memory for a moment (62 MB for SmolLM2's tied table of 49k
        // tokens), which on top of the layers would set the load's peak.
        let mut out_report = WeightReport::default();
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
            PromptRows::Last,
            device,
            &mut out_report,
        )?;
        // A tied output layer held exactly (Q8_0 tiles of a Q8_0 table) is the embedding
        // table too: no second copy (145 MB for Qwen2.5 0.5B's 152k tokens).
        let embd_dtype = src.dtype("token_embd.weight")?;
        let tok_embd = if output_name == "token_embd"
            && output
                .rows_exactly(&[0], embd_dtype)
                .is_some_and(|r| r.is_ok())
        {
            TokenEmbedding::Output(embd_dtype)
        } else {
            TokenEmbedding::Table(Table::new(&src.quantized("token_embd.weight")?, device)?)
        };

        super::runtime::release_freed_memory();
        // Layers load in parallel: dequantising, fusing and re-quantising the weights (and
        // first-touching their memory) dominates load time.
        let loaded = (0..cfg.n_layer)
            .into_par_iter()
            .map(|i| -> Result<(Layer, WeightReport)> {
                let p = |n: &str| format!("blk.{i}.{n}");
                let mut r = WeightReport::default();
                let mut lin = |names: &[&str], bias: bool| {
                    let names: Vec<String> = names.iter().map(|n| p(n)).collect();
                    let rows = PromptRows::Every {
                        f32_copy: prefill_f32,
                    };
                    Linear::load(src, &names, bias, opts, rows, device, &mut r)
                };
                let (wqkv, w_gate_up) = if cfg.variant.fused {
                    (lin(&["attn_qkv"], bias)?, lin(&["ffn_up"], false)?)
                } else {
                    (
                        lin(&["attn_q", "attn_k", "attn_v"], bias)?,
                        lin(&["ffn_gate", "ffn_up"], false)?,
                    )
                };
                let wo = lin(&["attn_output"], false)?;
                let w_down = lin(&["ffn_down"], false)?;
                let norm = |n: &str| src.get(&format!("{}.weight", p(n)));
                let pair = |on: bool, a: &str, b: &str| -> Result<Option<(Tensor, Tensor)>> {
                    Ok(if on { Some((norm(a)?, norm(b)?)) } else { None })
                };
                let layer = Layer {
                    local: cfg.is_local(i),
                    qk_norm: pair(cfg.variant.qk_norm, "attn_q_norm", "attn_k_norm")?,
                    post_norms: pair(
                        cfg.variant.gemma_norms,
                        "post_attention_norm",
                        "post_ffw_norm",
                    )?,
                    attn_norm: norm("attn_norm")?,
                    wqkv,
                    wo,
                    ffn_norm: norm("ffn_norm")?,
                    w_gate_up,
                    w_down,
                };
                Ok((layer, r))
            })
            .collect::<Result<Vec<_>>>()?;
        let (layers, mut reports): (Vec<Layer>, Vec<WeightReport>) = loaded.into_iter().unzip();
        reports.push(out_report);
        let mut report = WeightReport::merged(reports);
        report.prefill_f32 = layers.iter().any(|l| l.wqkv.has_prefill_copy());
        let rope = RopeAngles::new(&cfg.rope_of(false), device)?;
        let rope_local = match &cfg.sliding_window {
            Some(_) => Some(RopeAngles::new(&cfg.rope_of(true), device)?),
            None => None,
        };
        let mut m = Decoder {
            cfg,
            device: device.clone(),
            tok_embd,
            layers,
            out_norm,
            output,
            rope,
            rope_local,
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

    fn forward_inner(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let c = &self.cfg;
        let (seq, hd, nh, nkv) = (tokens.len(), c.head_dim(), c.n_head, c.n_kv_head);
        let n_rep = nh / nkv;
        let eps = c.rms_eps as f32;
        let total = pos + seq;
        let mut x = match &self.tok_embd {
            TokenEmbedding::Table(t) => t.lookup(tokens)?,
            TokenEmbedding::Output(dtype) => self
                .output
                .rows_exactly(tokens, *dtype)
                .expect("checked at load")?
                .to_device(&self.device)?,
        }; // (seq, embd)
        if c.variant.gemma_norms {
            x = (x * (c.n_embd as f64).sqrt())?;
        }
        let rows = self.rope.at(pos, seq)?;
        let rows_local = match &self.rope_local {
            Some(t) => Some(t.at(pos, seq)?),
            None => None,
        };
        let window = c.sliding_window.as_ref().map(|w| w.window);
        let mask = |window: Option<usize>| -> Result<Option<Tensor>> {
            Ok(if seq > 1 {
                Some(causal_mask(seq, pos, n_rep, window, &self.device)?)
            } else {
                None
            })
        };
        let mask_global = mask(None)?;
        let mask_local = if window.is_some() {
            mask(window)?
        } else {
            None
        };
        for (layer, kv) in self.layers.iter().zip(self.cache.iter()) {
            let (rope, (cos, sin)) = match (&self.rope_local, &rows_local, layer.local) {
                (Some(t), Some(r), true) => (t, r),
                _ => (&self.rope, &rows),
            };
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
            let q = rope.apply(&q, cos, sin)?.squeeze(0)?;
            let k = rope.apply(&k, cos, sin)?.squeeze(0)?;
            kv.k.slice_set(&k, 1, pos)?;
            kv.v.slice_set(&v, 1, pos)?;
            // One new token on a sliding-window layer attends to the window's keys only;
            // a prompt's queries get the window in their mask.
            let (first, mask) = match (layer.local, window) {
                (true, Some(w)) if seq == 1 => (total.saturating_sub(w), None),
                (true, Some(_)) => (0, mask_local.as_ref()),
                _ => (0, mask_global.as_ref()),
            };
            let keys = kv.k.narrow(1, first, total - first)?; // (nkv, seen, hd)
            let values = kv.v.narrow(1, first, total - first)?;
            // Heads h = g * n_rep + r share KV head g: regroup queries as
            // (nkv, n_rep * seq, hd) so one batched matmul per KV head covers them.
            let qg = q.reshape((nkv, n_rep * seq, hd))?;
            let mut att = (qg.matmul(&keys.t()?)? * c.attn_scale)?;
            if let Some(mask) = mask {
                att = att.broadcast_add(mask)?;
            }
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att
                .matmul(&values)? // (nkv, n_rep * seq, hd)
                .reshape((nh, seq, hd))?
                .transpose(0, 1)?
                .reshape((seq, nh * hd))?;
            let mut attn_out = layer.wo.forward(&y)?;
            if let Some((post_attn, _)) = &layer.post_norms {
                attn_out = candle_nn::ops::rms_norm(&attn_out, post_attn, eps)?;
            }
            x = (x + attn_out)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, eps)?;
            let gu = layer.w_gate_up.forward(&h)?;
            let ff = gu.dim(1)? / 2;
            let gate = gu.narrow(1, 0, ff)?;
            let gate = match c.variant.activation {
                Activation::Silu => candle_nn::ops::silu(&gate)?,
                Activation::Gelu => gate.gelu()?,
            };
            let mut ffn_out = layer.w_down.forward(&(gate * gu.narrow(1, ff, ff)?)?)?;
            if let Some((_, post_ffn)) = &layer.post_norms {
                ffn_out = candle_nn::ops::rms_norm(&ffn_out, post_ffn, eps)?;
            }
            x = (x + ffn_out)?;
        }
        let last = x.narrow(0, seq - 1, 1)?;
        let h = candle_nn::ops::rms_norm(&last, &self.out_norm, eps)?;
        Ok(self.output.forward(&h)?.squeeze(0)?)
    }
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
        let mut logits = None;
        for (i, piece) in tokens.chunks(PROMPT_PIECE).enumerate() {
            // `cached` moves only once every piece is in: a failed piece leaves it at `pos`.
            logits = Some(self.forward_inner(piece, pos + i * PROMPT_PIECE)?);
        }
        let logits = logits.expect("tokens is not empty");
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
    use candle_core::quantized::GgmlDType;

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
        for variant in [
            Variant::LLAMA,
            Variant::QWEN2,
            Variant::QWEN3,
            Variant::PHI3,
            Variant::GEMMA3,
        ] {
            let mut m = tiny_decoder(3, variant, &exact()).unwrap();
            // Longer than one prompt piece: the second piece attends to the keys the first
            // left in the cache.
            let toks: Vec<u32> = (0..PROMPT_PIECE + 30)
                .map(|i| (i * 7 % 250) as u32 + 3)
                .collect();
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
            rope: RopeStyle::Neox,
            ..Variant::LLAMA
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
