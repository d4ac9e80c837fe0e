//! The gemma3 family (Gemma 3 270M … 27B, text): the shared block with embeddings scaled
//! by √width, per-head Q/K norms, RMS norms after attention and after the MLP, a GELU gate,
//! and five sliding-window layers (RoPE base 10 000) to every global one (the file's base).
//! The GGUF converter already adds Gemma's +1 to the norm weights. As in llama.cpp, q·k is
//! scaled by 1/√head width except in the 27B model (62 layers), which uses
//! 1/√(width / heads).

use anyhow::Result;
use candle_core::Device;

use super::decoder::{Decoder, DecoderConfig, SlidingWindow, Variant};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

/// Gemma 3's layer pattern around a file's window size.
pub fn sliding_window(window: usize) -> SlidingWindow {
    SlidingWindow {
        window,
        period: 6,
        rope_base: 10_000.0,
    }
}

pub fn load(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Decoder> {
    let mut cfg = DecoderConfig::from_gguf(file, Variant::GEMMA3)?;
    let window = file.u32("gemma3.attention.sliding_window")? as usize;
    cfg.sliding_window = Some(sliding_window(window));
    if cfg.n_layer == 62 {
        cfg.attn_scale = 1.0 / ((cfg.n_embd / cfg.n_head) as f64).sqrt();
    }
    Decoder::from_gguf(file, cfg, opts, device)
}
