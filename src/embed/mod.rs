//! Sentence embeddings on all-MiniLM-L6-v2 (the encoder in `bert`, on candle tensors):
//! mean pooling over the attention mask, L2-normalised, as sentence-transformers computes
//! them (a test checks cosine ≥ 0.999 against vectors the reference implementation
//! produced).

mod bert;

use anyhow::{anyhow, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use bert::{Bert, BertConfig};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::models::VerifiedModel;

/// The model's window: MiniLM was trained with 256 word pieces, [CLS] and [SEP] included.
pub const MAX_TOKENS: usize = 256;
/// A batch pads every text to its longest, so a text this many times longer than the
/// batch's shortest starts a new one: a question's evidence sentences are mostly short
/// with a long option entry or code block among them, and 13 sentences padded to one
/// 250-piece entry cost more than the 14 embedded apart.
const MAX_PADDING: usize = 2;
/// Texts per forward pass. Texts are sorted by length first, so a batch pads little. 16 is
/// as fast as 32 (12 git manual pages, 406 chunks: 23.0 vs 22.3 s) with 40 % less peak
/// memory: the attention scores of 32 texts of 256 tokens alone are 100 MB per layer.
const BATCH: usize = 16;

pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    device: Device,
    pub dim: usize,
    pub name: String,
}

impl Embedder {
    pub fn load(model: &VerifiedModel) -> Result<Self> {
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
        let bert =
            Bert::load(vb, &config).with_context(|| format!("loading {}", weights.display()))?;
        let tok_path = model.file("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tok_path)
            .map_err(|e| anyhow!("cannot load {}: {e}", tok_path.display()))?;
        // The shipped tokenizer.json pads and truncates to a fixed 128: pad to the longest
        // text of each batch instead, and truncate at the model's real window.
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| anyhow!("tokenizer truncation: {e}"))?;
        Ok(Embedder {
            model: bert,
            tokenizer,
            device,
            dim,
            name: model.spec.name.clone(),
        })
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
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        let lengths: Vec<usize> = order.iter().map(|&i| texts[i].len()).collect();
        for range in batches(&lengths) {
            let batch = &order[range];
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let vectors = self.embed_batch(&inputs)?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow!("tokenize: {e}"))?;
        let n = enc.len();
        let len = enc.first().map(|e| e.len()).unwrap_or(0);
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            enc.iter().flat_map(|e| f(e).to_vec()).collect()
        };
        let ids = Tensor::from_vec(flat(&|e| e.get_ids()), (n, len), &self.device)?;
        let types = Tensor::from_vec(flat(&|e| e.get_type_ids()), (n, len), &self.device)?;
        let mask = Tensor::from_vec(flat(&|e| e.get_attention_mask()), (n, len), &self.device)?;
        let hidden = self.model.forward(&ids, &types, &mask)?; // (n, len, dim)
                                                               // Mean over real tokens only.
        let mask_f = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
        let summed = hidden.broadcast_mul(&mask_f)?.sum(1)?; // (n, dim)
        let counts = mask_f.sum(1)?.clamp(1e-9, f64::MAX)?; // (n, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        let normed = mean.broadcast_div(&norm)?;
        Ok(normed.to_vec2()?)
    }
}

/// Consecutive batches over texts of these lengths (ascending): at most `BATCH` texts,
/// none more than `MAX_PADDING` times the first's length (bytes stand in for word pieces).
fn batches(lengths: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &len) in lengths.iter().enumerate() {
        if i > start && (i - start == BATCH || len > MAX_PADDING * lengths[start].max(1)) {
            out.push(start..i);
            start = i;
        }
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
    fn batches_bound_size_and_padding() {
        // Short sentences together, the long entry alone.
        assert_eq!(batches(&[30, 35, 40, 60, 250]), vec![0..4, 4..5]);
        assert_eq!(batches(&[]), Vec::<std::ops::Range<usize>>::new());
        // Uniform chunks: full batches of BATCH.
        let uniform = vec![600; 40];
        assert_eq!(batches(&uniform), vec![0..16, 16..32, 32..40]);
        // Every text in exactly one batch, in order.
        let lengths: Vec<usize> = (0..100).map(|i| i * i).collect();
        let b = batches(&lengths);
        assert_eq!(b.first().unwrap().start, 0);
        assert_eq!(b.last().unwrap().end, 100);
        assert!(b.windows(2).all(|w| w[0].end == w[1].start));
    }
}
