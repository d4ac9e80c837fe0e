//! The shared decoder block's hyper-parameters: `DecoderConfig` (read from a GGUF file's
//! `<arch>.*` keys and RoPE factor tensors) and `Variant`, the few places families differ.

use anyhow::{bail, Result};
use candle_core::Device;

use super::positions::Rope;
pub use super::positions::RopeStyle;
use crate::models::gguf::GgufFile;

/// The MLP's gate activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Silu,
    /// tanh-approximated GELU (gemma3; ggml's `gelu`).
    Gelu,
}

/// Where families differ within the shared block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Q, K and V projections carry biases (qwen2).
    pub qkv_bias: bool,
    /// Each head's queries and keys are RMS-normalised before RoPE (qwen3, gemma3).
    pub qk_norm: bool,
    pub rope: RopeStyle,
    /// Q/K/V stored as one `attn_qkv` tensor and gate/up as one `ffn_up` of 2 n_ff rows,
    /// gate first (phi3).
    pub fused: bool,
    /// Embeddings scaled by √width, and RMS norms after attention and after the MLP, before
    /// each residual add (gemma3).
    pub gemma_norms: bool,
    pub activation: Activation,
}

impl Variant {
    pub const LLAMA: Variant = Variant {
        qkv_bias: false,
        qk_norm: false,
        rope: RopeStyle::Interleaved,
        fused: false,
        gemma_norms: false,
        activation: Activation::Silu,
    };
    pub const QWEN2: Variant = Variant {
        qkv_bias: true,
        rope: RopeStyle::Neox,
        ..Variant::LLAMA
    };
    pub const QWEN3: Variant = Variant {
        qk_norm: true,
        rope: RopeStyle::Neox,
        ..Variant::LLAMA
    };
    pub const PHI3: Variant = Variant {
        rope: RopeStyle::Neox,
        fused: true,
        ..Variant::LLAMA
    };
    pub const GEMMA3: Variant = Variant {
        qk_norm: true,
        rope: RopeStyle::Neox,
        gemma_norms: true,
        activation: Activation::Gelu,
        ..Variant::LLAMA
    };
}

/// Layers that see only the latest `window` positions (gemma3: five of every six, with
/// their own RoPE base).
#[derive(Debug, Clone, PartialEq)]
pub struct SlidingWindow {
    pub window: usize,
    /// Layer i is global when `i % period == period - 1`.
    pub period: usize,
    pub rope_base: f32,
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
    /// Rotated dimensions per head (`rope.dimension_count`, else the head width).
    pub n_rot: usize,
    /// Per-frequency RoPE divisors (Llama 3.1+ `rope_freqs`, LongRoPE short factors).
    pub rope_factors: Option<Vec<f32>>,
    /// `rope.scaling.attn_factor` (LongRoPE files), else 1.
    pub rope_attn_factor: f32,
    pub sliding_window: Option<SlidingWindow>,
    /// Multiplies q·k; 1/√head width unless a family says otherwise.
    pub attn_scale: f64,
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
        let n_embd = g.u32(&key("embedding_length"))? as usize;
        let n_head = g.u32(&key("attention.head_count"))? as usize;
        let head_dim = g
            .u32(&key("attention.key_length"))
            .map(|k| k as usize)
            .unwrap_or(n_embd / n_head.max(1));
        let mut n_ctx = g.u32(&key("context_length")).unwrap_or(2048) as usize;
        // Llama 3.1+ carries `rope_freqs`; LongRoPE files (Phi-3.5, Phi-4-mini) carry short
        // and long factors, the long ones for contexts past the original length. Sextant
        // uses the short ones and so keeps within that length (llama.cpp picks by the
        // context it runs with).
        let mut rope_factors = None;
        if g.has_tensor("rope_freqs.weight") {
            rope_factors = Some(small_tensor(g, "rope_freqs.weight")?);
        } else if g.has_tensor("rope_factors_short.weight") {
            rope_factors = Some(small_tensor(g, "rope_factors_short.weight")?);
            if let Ok(original) = g.u32(&key("rope.scaling.original_context_length")) {
                n_ctx = n_ctx.min(original as usize);
            }
        }
        let n_rot = g
            .u32(&key("rope.dimension_count"))
            .map(|n| n as usize)
            .unwrap_or(head_dim);
        if let Some(f) = &rope_factors {
            if f.len() != n_rot / 2 {
                bail!(
                    "{}: {} RoPE factors for {n_rot} rotated dimensions (expected {})",
                    g.path.display(),
                    f.len(),
                    n_rot / 2
                );
            }
        }
        Ok(DecoderConfig {
            n_layer: g.u32(&key("block_count"))? as usize,
            n_embd,
            n_head,
            head_dim,
            n_kv_head: g
                .u32(&key("attention.head_count_kv"))
                .or_else(|_| g.u32(&key("attention.head_count")))? as usize,
            n_ff: g.u32(&key("feed_forward_length"))? as usize,
            n_vocab,
            n_ctx,
            rope_base: g.f32(&key("rope.freq_base")).unwrap_or(10_000.0),
            n_rot,
            rope_factors,
            rope_attn_factor: g.f32(&key("rope.scaling.attn_factor")).unwrap_or(1.0),
            sliding_window: None,
            attn_scale: 1.0 / (head_dim as f64).sqrt(),
            rms_eps: g
                .f32(&key("attention.layer_norm_rms_epsilon"))
                .unwrap_or(1e-5) as f64,
            variant,
        })
    }

    /// The rotary parameters of layer `i` (sliding-window layers have their own base).
    pub(super) fn rope_of(&self, local: bool) -> Rope {
        Rope {
            style: self.variant.rope,
            base: match &self.sliding_window {
                Some(w) if local => w.rope_base,
                _ => self.rope_base,
            },
            n_rot: self.n_rot,
            factors: self.rope_factors.clone(),
            attn_factor: self.rope_attn_factor,
        }
    }

    /// Whether layer `i` sees only a sliding window.
    pub(super) fn is_local(&self, i: usize) -> bool {
        self.sliding_window
            .as_ref()
            .is_some_and(|w| i % w.period != w.period - 1)
    }

    /// Parameters of the linear layers (what f32 prompt copies would cost, ×4 bytes).
    pub(super) fn linear_params(&self) -> usize {
        let hd = self.head_dim();
        let attn =
            (self.n_head + 2 * self.n_kv_head) * hd * self.n_embd + self.n_embd * self.n_embd;
        let mlp = 3 * self.n_ff * self.n_embd;
        self.n_layer * (attn + mlp)
    }
}

/// A small f32 tensor of the file (RoPE factors).
fn small_tensor(g: &GgufFile, name: &str) -> Result<Vec<f32>> {
    let t = g.tensor(name, &Device::Cpu)?.dequantize(&Device::Cpu)?;
    Ok(t.flatten_all()?.to_vec1()?)
}
