//! The loaded model: `CausalLm` (the whole interface the decoding loop needs), the load
//! options, and `Llm` (a family's model with its tokenizer, chat template and grammar
//! engine, loaded from a verified GGUF file).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use tokenizers::Tokenizer;

use super::chat_template::{self, ChatTemplate, Message};
use super::{gemma3, llama, phi3, qwen2, qwen3, select_device, tokenizer, SUPPORTED_ARCHITECTURES};
use crate::constrain::GrammarEngine;
use crate::models::VerifiedModel;

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

/// A loaded LLM with everything needed to prompt it and constrain its output.
pub struct Llm {
    pub name: String,
    pub architecture: String,
    pub model: Box<dyn CausalLm>,
    pub tokenizer: Arc<Tokenizer>,
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
        let mut file = crate::models::gguf::GgufFile::open(path)?;
        let architecture = file.architecture()?;
        if !SUPPORTED_ARCHITECTURES.contains(&architecture.as_str()) {
            bail!(
                "{}: architecture '{architecture}' is not supported yet (supported: {})",
                path.display(),
                SUPPORTED_ARCHITECTURES.join(", ")
            );
        }
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
        // The tokenizer before the weights, and the metadata's vocabulary dropped once it
        // is built: its strings (6 MB for SmolLM2, more for Gemma's 262k tokens) would
        // otherwise sit beside the weights at the load's peak. The grammar engine still
        // comes after them (`from_parts`): built first, its 21 MB sat beside the output
        // layer's transient instead (SmolLM2's peak 211 MB against 190).
        file.release_tokenizer_metadata()?;
        let model: Box<dyn CausalLm> = match architecture.as_str() {
            "llama" => Box::new(llama::load(&file, opts, &device)?),
            "qwen2" => Box::new(qwen2::load(&file, opts, &device)?),
            "qwen3" => Box::new(qwen3::load(&file, opts, &device)?),
            "phi3" => Box::new(phi3::load(&file, opts, &device)?),
            "gemma3" => Box::new(gemma3::load(&file, opts, &device)?),
            other => bail!("{}: architecture '{other}' has no loader", path.display()),
        };
        drop(file);
        let llm = Self::from_parts(name, &architecture, model, tokenizer, template, eos, device)?;
        super::runtime::release_freed_memory();
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
        let tokenizer = Arc::new(tokenizer);
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
