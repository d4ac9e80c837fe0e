//! Sentence embeddings on all-MiniLM-L6-v2 (the encoder in `bert`): mean pooling over
//! each text's tokens, L2-normalised, as sentence-transformers computes
//! them (a test checks cosine ≥ 0.999 against vectors the reference implementation
//! produced, at both precisions). Where the CPU has AVX-512 VNNI or AVX2 the dense layers
//! run in int8 (`Precision`); KBs need no rebuild, since int8 and f32 vectors of a text
//! agree to a cosine of 0.999.

mod bert;
mod kernels;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;

use bert::{Bert, BertConfig, Text};
use tokenizers::{Tokenizer, TruncationParams};

use crate::models::VerifiedModel;

/// The model's window: MiniLM was trained with 256 word pieces, [CLS] and [SEP] included.
pub const MAX_TOKENS: usize = 256;
/// Word pieces per forward pass. Texts are packed without padding, so a batch is bounded by
/// tokens, not texts: larger products keep both cores busy for longer between the
/// synchronisations of each layer, and the activations of 4,096 tokens stay under 60 MB.
const BATCH_TOKENS: usize = 4096;
/// A batch of at most this many word pieces (a search query) runs on one thread: its
/// products are too small to share, and handing each of the forward pass's dozens of
/// passes to the other core and waiting for it costs more than the work. One text on
/// the 2-core EPYC, p50 on one thread against two: 8 words 1.3 against 2.1 ms, 16 words
/// 2.3 / 2.8, 24 words 3.1 / 3.2, 32 words 4.1 / 3.7 (docs/PERFORMANCE.md).
const ONE_THREAD_TOKENS: usize = 32;

/// How the encoder's dense layers multiply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// f32 weights through `gemm`: sentence-transformers' arithmetic.
    F32,
    /// Weights and activations as Q8_0 blocks through the VNNI tiles the LLM uses
    /// (`llm::tiled_q8`): about twice as fast on 2 cores, cosine ≥ 0.999 to f32. Without
    /// VNNI, the same blocks as 16-bit words on AVX2: 1.1–1.2× on a Zen 3 EPYC.
    Int8,
}

impl Precision {
    /// Int8 where the CPU has AVX-512 VNNI or AVX2, unless `SEXTANT_EMBED_F32` is set.
    pub fn default_here() -> Precision {
        if crate::llm::tiled_q8::runs_here() && std::env::var_os("SEXTANT_EMBED_F32").is_none() {
            Precision::Int8
        } else {
            Precision::F32
        }
    }
}

pub struct Embedder {
    model: Bert,
    precision: Precision,
    tokenizer: Tokenizer,
    pub dim: usize,
    pub name: String,
}

impl Embedder {
    pub fn load(model: &VerifiedModel) -> Result<Self> {
        Self::load_as(model, Precision::default_here())
    }

    /// Loads with the dense layers at `precision` (int8 only where
    /// `tiled_q8::runs_here()`).
    pub fn load_as(model: &VerifiedModel, precision: Precision) -> Result<Self> {
        if precision == Precision::Int8 && !crate::llm::tiled_q8::runs_here() {
            bail!("int8 embedding needs AVX-512 VNNI or AVX2, which this CPU lacks; use f32");
        }
        let device = Device::Cpu;
        let config_path = model.file("config.json");
        let config: BertConfig = serde_json::from_str(
            &std::fs::read_to_string(&config_path)
                .with_context(|| format!("cannot read {}", config_path.display()))?,
        )
        .with_context(|| format!("{} is not a BERT config", config_path.display()))?;
        let dim = config.hidden_size;
        let weights = model.file("model.safetensors");
        // SAFETY: the store never rewrites a file in place (it writes and renames).
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device)? };
        let bert = Bert::load(vb, &config, precision == Precision::Int8)
            .with_context(|| format!("loading {}", weights.display()))?;
        let tok_path = model.file("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tok_path)
            .map_err(|e| anyhow!("cannot load {}: {e}", tok_path.display()))?;
        // The shipped tokenizer.json pads and truncates to a fixed 128: texts are packed
        // without padding instead, and truncated at the model's real window.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| anyhow!("tokenizer truncation: {e}"))?;
        Ok(Embedder {
            model: bert,
            precision,
            tokenizer,
            dim,
            name: model.spec.name.clone(),
        })
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The tokenizer, for counting tokens when chunking (no padding or truncation).
    pub fn counting_tokenizer(&self) -> Tokenizer {
        let mut t = self.tokenizer.clone();
        t.with_padding(None);
        let _ = t.with_truncation(None);
        t
    }

    /// Embeds `texts`; one L2-normalised vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow!("tokenize: {e}"))?;
        let lengths: Vec<usize> = enc.iter().map(|e| e.len()).collect();
        let mut out = Vec::with_capacity(texts.len());
        for range in batches(&lengths, BATCH_TOKENS) {
            let batch: Vec<Text> = enc[range.clone()]
                .iter()
                .map(|e| Text {
                    ids: e.get_ids(),
                    types: e.get_type_ids(),
                })
                .collect();
            let tokens: usize = lengths[range.clone()].iter().sum();
            let hidden = if tokens <= ONE_THREAD_TOKENS {
                one_thread()?.install(|| self.model.forward(&batch))?
            } else {
                self.model.forward(&batch)?
            };
            let mut rows = hidden.chunks_exact(self.dim);
            for &len in &lengths[range] {
                out.push(mean_normalized(rows.by_ref().take(len), self.dim));
            }
        }
        Ok(out)
    }
}

/// A rayon pool of one thread: inside it, the forward pass's parallel loops run inline.
fn one_thread() -> Result<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    if let Some(pool) = POOL.get() {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "sextant-query-embed".into())
        .build()?;
    Ok(POOL.get_or_init(|| pool))
}

/// The mean of `rows`, L2-normalised (sentence-transformers' pooling and normalisation).
fn mean_normalized<'a>(rows: impl Iterator<Item = &'a [f32]>, dim: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dim];
    for row in rows {
        for (s, v) in sum.iter_mut().zip(row) {
            *s += v;
        }
    }
    // The mean's divisor cancels in the normalisation.
    let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    sum.iter().map(|v| v / norm).collect()
}

/// Consecutive batches over texts of these token counts: as many texts as fit in `budget`
/// tokens, and at least one.
fn batches(lengths: &[usize], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, &len) in lengths.iter().enumerate() {
        if i > start && tokens + len > budget {
            out.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += len;
    }
    if start < lengths.len() {
        out.push(start..lengths.len());
    }
    out
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_fill_a_token_budget_in_order() {
        assert_eq!(batches(&[30, 35, 40, 60, 250], 100), vec![0..2, 2..4, 4..5]);
        assert_eq!(batches(&[], 100), Vec::<std::ops::Range<usize>>::new());
        // A text over the budget still gets a batch of its own.
        assert_eq!(batches(&[300, 10], 100), vec![0..1, 1..2]);
        let lengths: Vec<usize> = (0..100).map(|i| i % 37 + 2).collect();
        let b = batches(&lengths, 256);
        assert_eq!(b.first().unwrap().start, 0);
        assert_eq!(b.last().unwrap().end, 100);
        assert!(b.windows(2).all(|w| w[0].end == w[1].start));
        assert!(b
            .iter()
            .all(|r| lengths[r.clone()].iter().sum::<usize>() <= 256));
    }

    #[test]
    fn pooling_averages_and_normalises() {
        let rows = [[3.0f32, 0.0], [1.0, 4.0]];
        let v = mean_normalized(rows.iter().map(|r| &r[..]), 2);
        let half = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - half).abs() < 1e-6 && (v[1] - half).abs() < 1e-6);
    }
}
