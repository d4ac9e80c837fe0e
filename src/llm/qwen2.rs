//! The qwen2 family (Qwen2, Qwen2.5, Qwen2.5-Coder): the shared decoder block with biases
//! on the Q/K/V projections and GPT-NeoX rotary embeddings (llama.cpp's `LLM_ARCH_QWEN2`
//! uses `LLAMA_ROPE_TYPE_NEOX`; the converter does not permute Q/K rows as it does for
//! llama).

use anyhow::Result;
use candle_core::Device;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

pub fn load(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Decoder> {
    let cfg = DecoderConfig::from_gguf(file, Variant::QWEN2)?;
    Decoder::from_gguf(file, cfg, opts, device)
}
