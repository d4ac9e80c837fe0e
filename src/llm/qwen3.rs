//! The qwen3 family (Qwen3 dense models): the shared decoder block without Q/K/V biases but
//! with each head's queries and keys RMS-normalised before RoPE (`attn_q_norm`,
//! `attn_k_norm`), NeoX RoPE, and a head width from the file's `key_length` (Qwen3-0.6B:
//! 16 heads of 128 on a width of 1024).

use anyhow::Result;
use candle_core::Device;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

pub fn load(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Decoder> {
    let cfg = DecoderConfig::from_gguf(file, Variant::QWEN3)?;
    Decoder::from_gguf(file, cfg, opts, device)
}
