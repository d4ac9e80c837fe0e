//! The LLM runtime: GGUF loading (memory-mapped), one module per model family, the
//! tokenizer and chat template from the file's own metadata, sampling, and the decoding
//! loop. Knows nothing of schemas beyond the `Constraint` it is handed.

pub mod chat_template;
pub mod choice;
mod config;
pub mod decoder;
pub mod gemma3;
pub mod generate;
pub mod llama;
mod model;
pub mod phi3;
mod positions;
pub mod q5_0;
pub mod q8_0;
pub mod qwen2;
pub mod qwen3;
#[cfg(test)]
mod reference_tests;
mod runtime;
pub mod sampling;
pub mod synthetic;
pub mod tiled_q8;
#[cfg(test)]
pub(crate) mod tiny;
pub mod token_table;
pub mod tokenizer;
pub mod weights;

pub use crate::models::gguf::SUPPORTED_ARCHITECTURES;
pub use model::{CausalLm, Llm, LoadOptions};
pub(crate) use runtime::avx2_kernels;
pub use runtime::{configure_threads, select_device, threads, tune_allocator};
