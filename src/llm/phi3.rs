//! The phi3 family (Phi-3, Phi-3.5-mini, Phi-4-mini): the shared block with Q/K/V in one
//! `attn_qkv` tensor and gate/up in one `ffn_up` (gate rows first: llama.cpp's SWIGLU
//! split), NeoX RoPE over `rope.dimension_count` dimensions, and LongRoPE factors with an
//! attention factor in the 128k-context files. Files converted with separate Q/K/V load
//! too (llama.cpp accepts both). The files' sliding window is ignored, as llama.cpp does.

use anyhow::Result;
use candle_core::Device;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

pub fn load(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Decoder> {
    let variant = Variant {
        fused: file.has_tensor("blk.0.attn_qkv.weight"),
        ..Variant::PHI3
    };
    let cfg = DecoderConfig::from_gguf(file, variant)?;
    Decoder::from_gguf(file, cfg, opts, device)
}
