//! The BERT encoder of all-MiniLM-L6-v2, written out here instead of taking
//! candle-transformers' `BertModel`. Same weights and the same arithmetic, laid out for a
//! CPU:
//! - **No padding.** A batch's texts are packed end to end, so the dense layers multiply
//!   only real tokens and attention runs per text over its own length: there is no mask.
//! - **Fused adds.** Bias and residual are written into a product's output before `gemm`
//!   adds the product to it, so no pass over the activations adds them afterwards.
//! - The Q/K/V projections are one product, the attention scale is folded into the query
//!   weights, and GELU, softmax and layer norm are loops the compiler vectorizes
//!   (`kernels`).
//!
//! perf on 2 cores showed half of embedding time outside the matrix products when this
//! ran on candle tensors: element-wise passes, libm's `expf` in the softmax, zeroed
//! allocations and padding. A test checks the vectors against sentence-transformers'
//! (cosine ≥ 0.999).

use anyhow::{bail, Result};
use candle_core::{DType, Tensor};
use candle_nn::VarBuilder;
use gemm::Parallelism;
use rayon::prelude::*;
use serde::Deserialize;

use crate::llm::tiled_q8::TiledQ8;

use super::kernels::{
    add_product, add_row_to, fill_rows, gelu, layer_norm, softmax, strided_product, Matrix,
};

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
    #[serde(default = "gelu_name")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn gelu_name() -> String {
    "gelu".into()
}

/// One text's word pieces and their token types.
pub struct Text<'a> {
    pub ids: &'a [u32],
    pub types: &'a [u32],
}

pub struct Bert {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    config: BertConfig,
}

/// A dense layer's weights: f32 transposed to `in × out` so that `x · w` is row-major, or
/// Q8_0 tiles multiplied with VNNI or AVX2 (`tiled_q8`).
enum Weights {
    F32(Vec<f32>),
    Int8(TiledQ8),
}

struct Dense {
    w: Weights,
    b: Vec<f32>,
    inputs: usize,
}

impl Dense {
    /// `out += x · w` for the rows of `x` (width `inputs`).
    fn add_product(&self, x: &[f32], out: &mut [f32]) {
        match &self.w {
            Weights::F32(w) => add_product(
                Matrix::rows_of(x, self.inputs),
                Matrix {
                    data: w,
                    rows: self.inputs,
                    cols: self.b.len(),
                },
                out,
            ),
            Weights::Int8(tiles) => tiles.add_product(x, x.len() / self.inputs, out),
        }
    }
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn apply(&self, x: &mut [f32]) {
        layer_norm(x, &self.gamma, &self.beta, self.eps)
    }
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    up: Dense,
    down: Dense,
    ffn_norm: Norm,
}

fn values(t: &Tensor) -> Result<Vec<f32>> {
    Ok(t.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?)
}

/// A dense layer from Hugging Face's `out × in` weight and bias.
fn dense(weight: &Tensor, bias: &Tensor, int8: bool) -> Result<Dense> {
    let (outputs, inputs) = weight.dims2()?;
    let w = if int8 {
        Weights::Int8(TiledQ8::from_f32(&values(weight)?, outputs, inputs)?)
    } else {
        Weights::F32(values(&weight.t()?.contiguous()?)?)
    };
    Ok(Dense {
        w,
        b: values(bias)?,
        inputs,
    })
}

fn linear(vb: &VarBuilder, rows: usize, cols: usize, int8: bool) -> Result<Dense> {
    dense(
        &vb.get((rows, cols), "weight")?,
        &vb.get(rows, "bias")?,
        int8,
    )
}

fn layer_norm_of(vb: &VarBuilder, dim: usize, eps: f64) -> Result<Norm> {
    Ok(Norm {
        gamma: values(&vb.get(dim, "weight")?)?,
        beta: values(&vb.get(dim, "bias")?)?,
        eps: eps as f32,
    })
}

impl Bert {
    /// Loads the encoder from `vb` (tensors named as Hugging Face's `BertModel` saves
    /// them, with or without a `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &BertConfig, int8: bool) -> Result<Self> {
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
        let heads = config.num_attention_heads;
        if heads == 0 || !d.is_multiple_of(heads) {
            bail!("hidden_size {d} is not a multiple of num_attention_heads {heads}");
        }
        let eps = config.layer_norm_eps;
        let e = vb.pp("embeddings");
        let word = values(&e.get((config.vocab_size, d), "word_embeddings.weight")?)?;
        let position = values(&e.get(
            (config.max_position_embeddings, d),
            "position_embeddings.weight",
        )?)?;
        let token_type =
            values(&e.get((config.type_vocab_size, d), "token_type_embeddings.weight")?)?;
        let norm = layer_norm_of(&e.pp("LayerNorm"), d, eps)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        let ff = config.intermediate_size;
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
            // The attention scale 1/√head goes into the query projection.
            let scale = 1.0 / ((d / heads) as f64).sqrt();
            let (qw, qb) = ((q.0 * scale)?, (q.1 * scale)?);
            let qkv = dense(
                &Tensor::cat(&[&qw, &k.0, &v.0], 0)?,
                &Tensor::cat(&[&qb, &k.1, &v.1], 0)?,
                int8,
            )?;
            layers.push(Layer {
                qkv,
                attn_out: linear(&l.pp("attention.output.dense"), d, d, int8)?,
                attn_norm: layer_norm_of(&l.pp("attention.output.LayerNorm"), d, eps)?,
                up: linear(&l.pp("intermediate.dense"), ff, d, int8)?,
                down: linear(&l.pp("output.dense"), d, ff, int8)?,
                ffn_norm: layer_norm_of(&l.pp("output.LayerNorm"), d, eps)?,
            });
        }
        Ok(Bert {
            word,
            position,
            token_type,
            norm,
            layers,
            config: config.clone(),
        })
    }

    /// The last hidden states of `texts`, packed: rows of width `hidden_size`, the first
    /// text's tokens first.
    pub fn forward(&self, texts: &[Text]) -> Result<Vec<f32>> {
        let c = &self.config;
        let d = c.hidden_size;
        let mut starts = Vec::with_capacity(texts.len() + 1);
        let mut rows = Vec::new(); // (word piece, type, position) per token
        for (n, text) in texts.iter().enumerate() {
            if text.ids.len() != text.types.len() {
                bail!(
                    "text {n}: {} ids but {} types",
                    text.ids.len(),
                    text.types.len()
                );
            }
            if text.ids.len() > c.max_position_embeddings {
                bail!(
                    "text {n} has {} word pieces; the model takes at most {}",
                    text.ids.len(),
                    c.max_position_embeddings
                );
            }
            starts.push(rows.len());
            for (p, (&id, &ty)) in text.ids.iter().zip(text.types).enumerate() {
                if id as usize >= c.vocab_size || ty as usize >= c.type_vocab_size {
                    bail!(
                        "text {n}: word piece {id} or type {ty} is outside the model's vocabulary"
                    );
                }
                rows.push((id as usize, ty as usize, p));
            }
        }
        starts.push(rows.len());
        let t = rows.len();
        let mut x = vec![0f32; t * d];
        x.par_chunks_mut(d)
            .zip(rows.par_iter())
            .for_each(|(out, &(id, ty, p))| {
                let w = &self.word[id * d..][..d];
                let pos = &self.position[p * d..][..d];
                let typ = &self.token_type[ty * d..][..d];
                for (((o, a), b), c) in out.iter_mut().zip(w).zip(pos).zip(typ) {
                    *o = a + b + c;
                }
            });
        self.norm.apply(&mut x);
        let mut buffers = Buffers::new(t, d, c.intermediate_size);
        for layer in &self.layers {
            layer.forward(&mut x, &starts, c.num_attention_heads, &mut buffers);
        }
        Ok(x)
    }
}

/// Activations reused by every layer of one forward pass.
struct Buffers {
    qkv: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
    out: Vec<f32>,
}

impl Buffers {
    fn new(tokens: usize, d: usize, ff: usize) -> Self {
        Buffers {
            qkv: vec![0.0; tokens * 3 * d],
            context: vec![0.0; tokens * d],
            attended: vec![0.0; tokens * d],
            inner: vec![0.0; tokens * ff],
            out: vec![0.0; tokens * d],
        }
    }
}

impl Layer {
    fn forward(&self, x: &mut Vec<f32>, starts: &[usize], heads: usize, b: &mut Buffers) {
        let d = self.attn_out.inputs;
        fill_rows(&mut b.qkv, &self.qkv.b);
        self.qkv.add_product(x, &mut b.qkv);
        attention(&b.qkv, starts, heads, d, &mut b.context);
        add_row_to(x, &self.attn_out.b, &mut b.attended);
        self.attn_out.add_product(&b.context, &mut b.attended);
        self.attn_norm.apply(&mut b.attended);
        fill_rows(&mut b.inner, &self.up.b);
        self.up.add_product(&b.attended, &mut b.inner);
        gelu(&mut b.inner);
        add_row_to(&b.attended, &self.down.b, &mut b.out);
        self.down.add_product(&b.inner, &mut b.out);
        self.ffn_norm.apply(&mut b.out);
        std::mem::swap(x, &mut b.out);
    }
}

/// A pointer that rayon tasks writing disjoint parts of one buffer may share.
#[derive(Clone, Copy)]
struct Shared(*mut f32);
// SAFETY: each task writes only the rows and columns of its own (text, head).
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// The element `offset` places in (taking `self` whole, so closures capture the
    /// `Send` wrapper and not its raw pointer).
    ///
    /// # Safety
    /// `offset` must lie inside the buffer.
    unsafe fn at(self, offset: usize) -> *mut f32 {
        self.0.add(offset)
    }
}

/// Scaled dot-product attention of every text with itself, each head apart: `qkv` holds
/// rows of [Q | K | V] (Q already scaled), `context` receives rows of the heads side by side.
fn attention(qkv: &[f32], starts: &[usize], heads: usize, d: usize, context: &mut [f32]) {
    let head = d / heads;
    let stride = 3 * d as isize;
    let texts = starts.len() - 1;
    let out = Shared(context.as_mut_ptr());
    (0..texts * heads)
        .into_par_iter()
        .for_each_init(Vec::new, |scores, task| {
            let (text, h) = (task / heads, task % heads);
            let (start, len) = (starts[text], starts[text + 1] - starts[text]);
            if len == 0 {
                return;
            }
            scores.resize(len * len, 0.0);
            let q = qkv[start * 3 * d + h * head..].as_ptr();
            // SAFETY: Q, K and V of this text and head lie inside `qkv` (rows start..start+len,
            // columns h·head.. of each third); the output block is this task's alone.
            unsafe {
                let (k, v) = (q.add(d), q.add(2 * d));
                strided_product(
                    len,
                    len,
                    head,
                    (scores.as_mut_ptr(), len as isize),
                    (q, stride, 1),
                    (k, 1, stride),
                    false,
                    Parallelism::None,
                );
                for row in scores.chunks_mut(len) {
                    softmax(row);
                }
                strided_product(
                    len,
                    head,
                    len,
                    (out.at(start * d + h * head), d as isize),
                    (scores.as_ptr(), len as isize, 1),
                    (v, stride, 1),
                    false,
                    Parallelism::None,
                );
            }
        });
}
