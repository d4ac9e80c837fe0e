//! How the decoder block sees token positions: rotary embedding tables (per-frequency
//! divisors, partial rotary, attention factor) and causal masks, full or within a sliding
//! window. Each piece follows llama.cpp's `ggml_rope_ext` and KV-cache mask, which the
//! tiny-file reference tests check.

use anyhow::Result;
use candle_core::{DType, Device, Tensor};

/// How a family applies rotary position embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Pairs of adjacent dimensions (llama: the GGUF converter permutes Q/K rows for it).
    Interleaved,
    /// The first half of the rotated dimensions against the second (GPT-NeoX; qwen2,
    /// phi3, gemma3).
    Neox,
}

/// One set of rotary parameters (gemma3 has two: local layers use another base).
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    pub style: RopeStyle,
    pub base: f32,
    /// Rotated dimensions per head (`rope.dimension_count`); the rest pass unchanged
    /// (Phi-4-mini rotates 96 of 128).
    pub n_rot: usize,
    /// Per-frequency divisors, `n_rot / 2` of them: Llama 3.1+ `rope_freqs`, Phi-3.5's
    /// LongRoPE `rope_factors_short` (llama.cpp divides each angle by its factor).
    pub factors: Option<Vec<f32>>,
    /// Scales cos and sin (llama.cpp's `attn_factor`; LongRoPE files carry one).
    pub attn_factor: f32,
}

/// How cos and sin of a position's angles are made: the per-frequency inverse wavelengths,
/// with the rows for a forward call's positions computed when it asks (`at`). A table of
/// every position of the context held 2 × n_ctx × n_rot / 2 floats: 67 MB for Gemma 3's
/// two sets over 32,768 positions, more than the model's layers, for rows a call computes
/// in microseconds.
pub struct RopeAngles {
    /// `(1, n_rot / 2)`.
    inv: Tensor,
    attn_factor: f64,
    style: RopeStyle,
    n_rot: usize,
}

impl RopeAngles {
    pub fn new(rope: &Rope, device: &Device) -> Result<Self> {
        let half = rope.n_rot / 2;
        let inv: Vec<f32> = (0..half)
            .map(|i| {
                let f = 1.0 / rope.base.powf(2.0 * i as f32 / rope.n_rot as f32);
                match &rope.factors {
                    Some(factors) => f / factors[i],
                    None => f,
                }
            })
            .collect();
        Ok(RopeAngles {
            inv: Tensor::from_vec(inv, (1, half), device)?,
            attn_factor: rope.attn_factor as f64,
            style: rope.style,
            n_rot: rope.n_rot,
        })
    }

    /// cos and sin of positions `pos..pos + seq`, `(seq, n_rot / 2)` each: the same
    /// operations a whole table's rows were made by, so the same floats.
    pub fn at(&self, pos: usize, seq: usize) -> Result<(Tensor, Tensor)> {
        let t = Tensor::arange(pos as u32, (pos + seq) as u32, self.inv.device())?
            .to_dtype(DType::F32)?
            .reshape((seq, 1))?;
        let angles = t.broadcast_mul(&self.inv)?;
        Ok((
            (angles.cos()? * self.attn_factor)?,
            (angles.sin()? * self.attn_factor)?,
        ))
    }

    /// Rotates `x` of shape `(1, heads, seq, head_dim)` with rows from [`Self::at`].
    pub fn apply(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        let hd = x.dim(3)?;
        let rotate = |x: &Tensor| -> Result<Tensor> {
            Ok(match self.style {
                RopeStyle::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin)?,
                RopeStyle::Neox => candle_nn::rotary_emb::rope(x, cos, sin)?,
            })
        };
        if self.n_rot == hd {
            return rotate(x);
        }
        let head = rotate(&x.narrow(3, 0, self.n_rot)?.contiguous()?)?;
        let tail = x.narrow(3, self.n_rot, hd - self.n_rot)?.contiguous()?;
        Ok(Tensor::cat(&[&head, &tail], 3)?)
    }
}

/// Additive mask for `seq` new tokens after `pos` cached ones, repeated for the `n_rep`
/// query heads that share a KV head: `(n_rep * seq, pos + seq)`. With a `window`, a query
/// at position q sees keys k with q - window < k <= q (llama.cpp's standard sliding
/// window).
pub fn causal_mask(
    seq: usize,
    pos: usize,
    n_rep: usize,
    window: Option<usize>,
    device: &Device,
) -> Result<Tensor> {
    let total = pos + seq;
    let mut m = Vec::with_capacity(n_rep * seq * total);
    for _ in 0..n_rep {
        for i in 0..seq {
            let q = pos + i;
            for k in 0..total {
                let hidden = k > q || window.is_some_and(|w| q - k >= w);
                m.push(if hidden { f32::NEG_INFINITY } else { 0.0 });
            }
        }
    }
    Ok(Tensor::from_vec(m, (n_rep * seq, total), device)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sliding_window_hides_keys_that_are_too_old() {
        let m = causal_mask(3, 4, 1, Some(3), &Device::Cpu).unwrap();
        let rows: Vec<Vec<f32>> = m.to_vec2().unwrap();
        let seen: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| (0..r.len()).filter(|&k| r[k] == 0.0).collect())
            .collect();
        // Queries at 4, 5, 6 see the three latest keys up to themselves.
        assert_eq!(seen, vec![vec![2, 3, 4], vec![3, 4, 5], vec![4, 5, 6]]);
        let full = causal_mask(2, 1, 2, None, &Device::Cpu).unwrap();
        assert_eq!(full.dims(), &[4, 3]);
    }

    #[test]
    fn factors_divide_the_angles_and_the_attention_factor_scales_them() {
        let plain = Rope {
            style: RopeStyle::Neox,
            base: 10_000.0,
            n_rot: 4,
            factors: None,
            attn_factor: 1.0,
        };
        let scaled = Rope {
            factors: Some(vec![1.0, 4.0]),
            attn_factor: 2.0,
            ..plain.clone()
        };
        let a = RopeAngles::new(&plain, &Device::Cpu).unwrap();
        let b = RopeAngles::new(&scaled, &Device::Cpu).unwrap();
        let (sa, sb): (Vec<Vec<f32>>, Vec<Vec<f32>>) = (
            a.at(0, 8).unwrap().1.to_vec2().unwrap(),
            b.at(0, 8).unwrap().1.to_vec2().unwrap(),
        );
        // Position 5, frequency 1: angle 5 / 100, divided by 4 in the factored table.
        assert!((sa[5][1] - (0.05f32).sin()).abs() < 1e-6);
        assert!((sb[5][1] - 2.0 * (0.0125f32).sin()).abs() < 1e-6);
        assert!((sb[5][0] - 2.0 * sa[5][0]).abs() < 1e-6);
    }

    #[test]
    fn a_calls_rows_are_those_of_the_whole_context_bit_for_bit() {
        let rope = Rope {
            style: RopeStyle::Neox,
            base: 1_000_000.0,
            n_rot: 64,
            factors: None,
            attn_factor: 1.0,
        };
        let t = RopeAngles::new(&rope, &Device::Cpu).unwrap();
        let (all_cos, all_sin) = t.at(0, 4096).unwrap();
        for (pos, seq) in [(0, 1), (17, 128), (4000, 96), (4095, 1)] {
            let (cos, sin) = t.at(pos, seq).unwrap();
            assert_eq!(cos.dims(), &[seq, 32]);
            let rows = |x: &Tensor| -> Vec<Vec<f32>> { x.to_vec2().unwrap() };
            assert_eq!(rows(&cos), rows(&all_cos.narrow(0, pos, seq).unwrap()));
            assert_eq!(rows(&sin), rows(&all_sin.narrow(0, pos, seq).unwrap()));
        }
    }

    #[test]
    fn partial_rotary_leaves_the_tail_of_each_head_alone() {
        let rope = Rope {
            style: RopeStyle::Neox,
            base: 10_000.0,
            n_rot: 4,
            factors: None,
            attn_factor: 1.0,
        };
        let t = RopeAngles::new(&rope, &Device::Cpu).unwrap();
        let x = Tensor::arange(0f32, 16.0, &Device::Cpu)
            .unwrap()
            .reshape((1, 1, 2, 8))
            .unwrap();
        let (cos, sin) = t.at(3, 2).unwrap();
        let y: Vec<f32> = t
            .apply(&x, &cos, &sin)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let x: Vec<f32> = x.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(&y[4..8], &x[4..8]);
        assert_eq!(&y[12..16], &x[12..16]);
        assert!((y[0] - x[0]).abs() > 1e-3);
    }
}
