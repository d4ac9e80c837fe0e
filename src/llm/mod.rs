//! The LLM runtime: GGUF loading (memory-mapped), one module per model family, the
//! tokenizer and chat template from the file's own metadata, sampling, and the decoding
//! loop. Knows nothing of schemas beyond the `Constraint` it is handed.

pub mod chat_template;
mod config;
pub mod decoder;
pub mod gemma3;
pub mod generate;
pub mod llama;
pub mod phi3;
mod positions;
pub mod q5_0;
pub mod q8_0;
pub mod qwen2;
pub mod qwen3;
#[cfg(test)]
mod reference_tests;
pub mod sampling;
pub mod synthetic;
pub mod tiled_q8;
#[cfg(test)]
pub(crate) mod tiny;
pub mod tokenizer;
pub mod weights;

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use tokenizers::Tokenizer;

use crate::constrain::GrammarEngine;
use crate::models::VerifiedModel;
use chat_template::{ChatTemplate, Message};

pub use crate::models::gguf::SUPPORTED_ARCHITECTURES;

/// A causal language model with its own KV cache.
pub trait CausalLm: Send {
    /// Feeds `tokens` at positions `pos..pos + tokens.len()` (`pos` must equal the number
    /// of tokens already cached) and returns the logits for the next token.
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Vec<f32>>;
    /// Empties the KV cache.
    fn reset(&mut self);
    /// Keeps only the first `len` cached tokens (prompt-prefix reuse).
    fn truncate(&mut self, len: usize);
    /// The token ids in the cache, in order.
    fn cached_tokens(&self) -> &[u32];
    fn n_vocab(&self) -> usize;
    fn n_ctx(&self) -> usize;
    /// How the weights are held (types as stored or re-quantized, prompt copies), for
    /// benchmarks and `--explain`.
    fn weights_summary(&self) -> String {
        String::new()
    }
}

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Force every linear weight to this type (benchmarks, tests). `None`: the file's type
    /// where candle has a SIMD kernel for it, else Q8_0 (see `weights`).
    pub decode_dtype: Option<GgmlDType>,
    /// Force f32 copies of the linear weights for prompt processing on or off. `None`:
    /// kept while they fit `weights::PREFILL_F32_BUDGET`.
    pub prefill_f32: Option<bool>,
}

impl LoadOptions {
    /// Defaults, overridable with `SEXTANT_DECODE_QUANT` (native, q8_0, q4_0, f16, f32) and
    /// `SEXTANT_PREFILL_F32` (0/1) for benchmarking.
    pub fn from_env() -> Result<Self> {
        let mut o = LoadOptions::default();
        if let Ok(q) = std::env::var("SEXTANT_DECODE_QUANT") {
            o.decode_dtype = match q.to_ascii_lowercase().as_str() {
                "native" => None,
                "q8_0" => Some(GgmlDType::Q8_0),
                "q4_0" => Some(GgmlDType::Q4_0),
                "f16" => Some(GgmlDType::F16),
                "f32" => Some(GgmlDType::F32),
                other => bail!("SEXTANT_DECODE_QUANT={other}: use native, q8_0, q4_0, f16 or f32"),
            };
        }
        if let Ok(v) = std::env::var("SEXTANT_PREFILL_F32") {
            o.prefill_f32 = Some(v != "0");
        }
        Ok(o)
    }
}

/// Sets the size of candle's CPU thread pools. Must run before the first tensor op: the
/// pools are global and sized once. Every pool (rayon for GEMM, candle's barrier pool for
/// quantized matmul) gets the same count, so they never oversubscribe the cores.
pub fn configure_threads(threads: Option<usize>) {
    let n = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    // SAFETY (edition 2021: set_var is safe): called at start-up, before any thread that
    // could read the environment is spawned.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
}

/// Keeps freed tensor memory in the process for reuse. Every op allocates its output, and
/// with glibc's defaults each large buffer is a fresh `mmap` that the kernel must fault in
/// and zero, then unmaps on free: about a third of embedding time went to page faults.
/// Measured on 12 git manual pages (406 chunks, 2 threads): ingest 37.1 s → 24.0 s.
/// Buffers up to 32 MiB (glibc's largest mmap threshold) come from the heap, and up to
/// 256 MiB of free heap is kept rather than trimmed after every large free (1 GiB was 1 s
/// faster there but kept an ingest of the hostile corpus at 1 GB instead of 0.74).
/// Call once at start-up, before other threads.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before any other thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Whether this CPU runs the AVX2 + FMA dot products of `q5_0` and `q8_0` (otherwise
/// Q5_0 is re-quantized to Q8_0, and Q8_0 keeps candle's block type).
pub(crate) fn avx2_kernels() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

pub fn threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// The device the LLM runs on: the first CUDA GPU when built with `--features cuda` and
/// one is present, else the CPU.
pub fn select_device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    {
        if std::env::var("SEXTANT_CPU").is_err() {
            return Ok(Device::cuda_if_available(0)?);
        }
    }
    Ok(Device::Cpu)
}

/// A loaded LLM with everything needed to prompt it and constrain its output.
pub struct Llm {
    pub name: String,
    pub architecture: String,
    pub model: Box<dyn CausalLm>,
    pub tokenizer: Tokenizer,
    pub template: ChatTemplate,
    /// Tokens that end a turn (SmolLM2: `<|im_end|>` and `<|endoftext|>`).
    pub eos: Vec<u32>,
    pub grammar: GrammarEngine,
    pub load_ms: f64,
    pub device: Device,
}

impl Llm {
    pub fn load(model: &VerifiedModel, opts: &LoadOptions) -> Result<Self> {
        Self::load_path(&model.main_file(), &model.spec.name, opts)
    }

    pub fn load_path(path: &Path, name: &str, opts: &LoadOptions) -> Result<Self> {
        let start = Instant::now();
        let device = select_device()?;
        let file = crate::models::gguf::GgufFile::open(path)?;
        let architecture = file.architecture()?;
        let model: Box<dyn CausalLm> = match architecture.as_str() {
            "llama" => Box::new(llama::load(&file, opts, &device)?),
            "qwen2" => Box::new(qwen2::load(&file, opts, &device)?),
            "qwen3" => Box::new(qwen3::load(&file, opts, &device)?),
            "phi3" => Box::new(phi3::load(&file, opts, &device)?),
            "gemma3" => Box::new(gemma3::load(&file, opts, &device)?),
            other => bail!(
                "{}: architecture '{other}' is not supported yet (supported: {})",
                path.display(),
                SUPPORTED_ARCHITECTURES.join(", ")
            ),
        };
        let tokenizer = tokenizer::from_gguf(&file)?;
        let token_str = |key: &str| -> Option<String> {
            let id = file.u32(key).ok()?;
            tokenizer.id_to_token(id)
        };
        let bos = token_str("tokenizer.ggml.bos_token_id").unwrap_or_default();
        let eos_tok = token_str("tokenizer.ggml.eos_token_id").unwrap_or_default();
        let template_src = file
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| {
                tracing::warn!(
                    "{} has no chat template; using its family's turn format",
                    path.display()
                );
                chat_template::fallback_for(&architecture).to_string()
            });
        let template = ChatTemplate::new(&template_src, &bos, &eos_tok)
            .with_context(|| format!("{}: chat template", path.display()))?;
        let mut eos: Vec<u32> = Vec::new();
        if let Ok(id) = file.u32("tokenizer.ggml.eos_token_id") {
            eos.push(id);
        }
        for t in [
            "<|im_end|>",
            "<|endoftext|>",
            "<|eot_id|>",
            "<end_of_turn>",
            "<|end|>",
        ] {
            if let Some(id) = tokenizer.token_to_id(t) {
                if !eos.contains(&id) {
                    eos.push(id);
                }
            }
        }
        if eos.is_empty() {
            bail!("{}: no end-of-sequence token found", path.display());
        }
        let llm = Self::from_parts(name, &architecture, model, tokenizer, template, eos, device)?;
        Ok(Llm {
            load_ms: start.elapsed().as_secs_f64() * 1e3,
            ..llm
        })
    }

    /// Assembles an `Llm` from parts (tests build tiny random models this way).
    pub fn from_parts(
        name: &str,
        architecture: &str,
        model: Box<dyn CausalLm>,
        tokenizer: Tokenizer,
        template: ChatTemplate,
        eos: Vec<u32>,
        device: Device,
    ) -> Result<Self> {
        let grammar = GrammarEngine::new(&tokenizer, &eos, model.n_vocab())?;
        Ok(Llm {
            name: name.to_string(),
            architecture: architecture.to_string(),
            model,
            tokenizer,
            template,
            eos,
            grammar,
            load_ms: 0.0,
            device,
        })
    }

    /// Renders the chat and tokenizes it, ready for generation.
    pub fn chat_tokens(&self, messages: &[Message]) -> Result<Vec<u32>> {
        let text = self.template.render(messages, true)?;
        tokenizer::encode(&self.tokenizer, &text)
    }
}
