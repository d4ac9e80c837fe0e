//! The llama family (SmolLM2, Llama 3.x, TinyLlama, …): the shared decoder block as is.

use anyhow::Result;
use candle_core::Device;

use super::decoder::{Decoder, DecoderConfig, Variant};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

pub fn load(file: &GgufFile, opts: &LoadOptions, device: &Device) -> Result<Decoder> {
    let cfg = DecoderConfig::from_gguf(file, Variant::LLAMA)?;
    Decoder::from_gguf(file, cfg, opts, device)
}
