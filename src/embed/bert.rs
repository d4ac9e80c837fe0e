//! The BERT encoder of all-MiniLM-L6-v2, written out here instead of taking
//! candle-transformers' `BertModel`. Same weights and the same arithmetic, laid out for
//! speed on a CPU: perf on 2 cores showed a fifth of embedding time outside the matrix
//! products in that model, mostly in libm's scalar `erf` (GELU) and a softmax made of four
//! tensor passes. Here:
//! - the Q/K/V projections are one matrix product;
//! - the attention scale is folded into the query;
//! - the softmax is candle's fused last-dimension kernel;
//! - GELU uses a branch-free `erf` (Abramowitz–Stegun 7.1.26, |error| < 1.5e-7) over a
//!   polynomial `exp`, which the compiler vectorizes, on rayon's threads.
//!
//! A test checks the vectors against sentence-transformers' (cosine ≥ 0.999).

use anyhow::{bail, Result};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Module, Shape, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The keys of a BERT `config.json` this encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}

pub struct Bert {
    word: Embedding,
    position: Tensor,
    token_type: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    up: Linear,
    down: Linear,
    ffn_norm: LayerNorm,
}

fn linear(vb: &VarBuilder, rows: usize, cols: usize) -> Result<Linear> {
    Ok(Linear::new(
        vb.get((rows, cols), "weight")?,
        Some(vb.get(rows, "bias")?),
    ))
}

fn layer_norm(vb: &VarBuilder, dim: usize, eps: f64) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(dim, "weight")?,
        vb.get(dim, "bias")?,
        eps,
    ))
}

impl Bert {
    /// Loads the encoder from `vb` (tensors named as Hugging Face's `BertModel` saves
    /// them, with or without a `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        if config.hidden_act != "gelu" {
            bail!(
                "hidden_act {:?} is not supported (MiniLM and BERT use \"gelu\")",
                config.hidden_act
            );
        }
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let d = config.hidden_size;
        if config.num_attention_heads == 0 || !d.is_multiple_of(config.num_attention_heads) {
            bail!(
                "hidden_size {d} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        let word = Embedding::new(e.get((config.vocab_size, d), "word_embeddings.weight")?, d);
        let position = e.get(
            (config.max_position_embeddings, d),
            "position_embeddings.weight",
        )?;
        let token_type = Embedding::new(
            e.get((config.type_vocab_size, d), "token_type_embeddings.weight")?,
            d,
        );
        let norm = layer_norm(&e.pp("LayerNorm"), d, config.layer_norm_eps)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention.self");
            let part = |name: &str| -> Result<(Tensor, Tensor)> {
                Ok((
                    a.pp(name).get((d, d), "weight")?,
                    a.pp(name).get(d, "bias")?,
                ))
            };
            let (q, k, v) = (part("query")?, part("key")?, part("value")?);
            let qkv = Linear::new(
                Tensor::cat(&[&q.0, &k.0, &v.0], 0)?,
                Some(Tensor::cat(&[&q.1, &k.1, &v.1], 0)?),
            );
            let ff = config.intermediate_size;
            layers.push(Layer {
                qkv,
                attn_out: linear(&l.pp("attention.output.dense"), d, d)?,
                attn_norm: layer_norm(
                    &l.pp("attention.output.LayerNorm"),
                    d,
                    config.layer_norm_eps,
                )?,
                up: linear(&l.pp("intermediate.dense"), ff, d)?,
                down: linear(&l.pp("output.dense"), d, ff)?,
                ffn_norm: layer_norm(&l.pp("output.LayerNorm"), d, config.layer_norm_eps)?,
            });
        }
        Ok(Bert {
            word,
            position,
            token_type,
            norm,
            layers,
            heads: config.num_attention_heads,
        })
    }

    /// The last hidden states `(n, len, hidden)` of a padded batch: `ids`, `types` and
    /// `mask` are `(n, len)` (mask 1 for real tokens, 0 for padding).
    pub fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, len) = ids.dims2()?;
        let x = (self.word.forward(ids)? + self.token_type.forward(types)?)?
            .broadcast_add(&self.position.narrow(0, 0, len)?)?;
        let mut x = self.norm.forward(&x)?;
        // Padding gets the most negative score, as transformers' extended mask does.
        let bias = ((mask.to_dtype(DType::F32)? - 1.0)? * f64::from(f32::MAX))?
            .unsqueeze(1)?
            .unsqueeze(1)?; // (n, 1, 1, len)
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (n, len, d) = x.dims3()?;
        let head = d / heads;
        let qkv = self
            .qkv
            .forward(x)?
            .reshape((n, len, 3, heads, head))?
            .permute((2, 0, 3, 1, 4))?; // (3, n, heads, len, head)
        let q = (qkv.get(0)?.contiguous()? * (1.0 / (head as f64).sqrt()))?;
        let k = qkv.get(1)?.contiguous()?;
        let v = qkv.get(2)?.contiguous()?;
        let scores = q.matmul(&k.t()?)?.broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((n, len, d))?;
        let x = self
            .attn_norm
            .forward(&(self.attn_out.forward(&context)? + x)?)?;
        let h = self.up.forward(&x)?.apply_op1_no_bwd(&GeluErf)?;
        Ok(self.ffn_norm.forward(&(self.down.forward(&h)? + x)?)?)
    }
}

/// GELU as BERT defines it, x·(1 + erf(x/√2))/2, on contiguous f32 tensors.
struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "gelu-erf-fast"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        use rayon::prelude::*;
        let (CpuStorage::F32(data), Some((start, end))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("gelu-erf-fast takes a contiguous f32 tensor");
        };
        let input = &data[start..end];
        let mut out = vec![0f32; input.len()];
        out.par_chunks_mut(1 << 14)
            .zip(input.par_chunks(1 << 14))
            .for_each(|(o, i)| {
                for (o, &x) in o.iter_mut().zip(i) {
                    *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
                }
            });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7), branch-free.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    (1.0 - poly * exp(-a * a)).copysign(x)
}

/// e^x for x ≤ 0 (inputs below -87 give ~0): Cephes' polynomial after range reduction,
/// branch-free so that loops over it vectorize.
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let p = p * r * r + r + 1.0;
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_erf_and_exp_match_the_library_functions() {
        let mut worst_erf = 0f64;
        let mut worst_exp = 0f64;
        for i in -100_000..=100_000 {
            let x = i as f32 * 1e-4 * 6.0; // -6 … 6
            worst_erf = worst_erf.max((erf(x) as f64 - libm::erf(x as f64)).abs());
            let y = -(x * x).min(87.0);
            let want = (y as f64).exp();
            worst_exp = worst_exp.max((exp(y) as f64 - want).abs() / want.max(1e-30));
        }
        // The formula's 1.5e-7 plus f32 rounding.
        assert!(worst_erf < 1e-6, "erf: {worst_erf:e}");
        assert!(worst_exp < 1e-6, "exp: relative {worst_exp:e}");
    }

    #[test]
    fn gelu_op_matches_the_definition_on_any_length() {
        let xs: Vec<f32> = (0..40_000).map(|i| (i as f32 - 20_000.0) * 3e-4).collect();
        let t = Tensor::from_vec(xs.clone(), xs.len(), &candle_core::Device::Cpu).unwrap();
        let got: Vec<f32> = t.apply_op1_no_bwd(&GeluErf).unwrap().to_vec1().unwrap();
        for (x, g) in xs.iter().zip(got) {
            let want = 0.5 * *x as f64 * (1.0 + libm::erf(*x as f64 / 2f64.sqrt()));
            assert!(
                (g as f64 - want).abs() < 1e-6,
                "gelu({x}) = {g}, want {want}"
            );
        }
    }
}
