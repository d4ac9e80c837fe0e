//! Q8_0 weights with a four-row AVX2 dot product. candle 0.11's generic quantized matmul
//! asks each block type for four output columns at a time (`vec_dot_4`); for Q8_0 on x86 it
//! answers with four single dot products, each reloading the activation and chaining every
//! block through one accumulator. That is the path of every Q8_0 matrix candle does not
//! repack (an input width that is not a multiple of 256, such as Qwen2.5 0.5B's 896 — its
//! 152k-row output layer and fused Q/K/V — or a CPU without VNNI). This type has candle's
//! `BlockQ8_0` layout and plugs into the same matmul (see `q5_0` for the pattern): the
//! repacked kernels still take it where they apply, since they read the bytes by dtype.

use anyhow::Result;
use candle_core::quantized::k_quants::{BlockQ8_0, GgmlType};
use candle_core::quantized::{GgmlDType, QTensor};
use half::f16;

use super::q5_0::{candle_layout_items, cast_blocks, cast_blocks_mut, dot_4_by_pairs, Q8Block, QK};

#[derive(Debug, Clone, PartialEq)]
#[repr(C)]
pub struct BlockQ8_0Avx {
    d: f16,
    qs: [i8; QK],
}
const _: () = assert!(std::mem::size_of::<BlockQ8_0Avx>() == std::mem::size_of::<BlockQ8_0>());

fn as_candle(xs: &[BlockQ8_0Avx]) -> &[BlockQ8_0] {
    // SAFETY: both are repr(C): f16, [i8; 32].
    unsafe { cast_blocks(xs) }
}

fn as_candle_mut(xs: &mut [BlockQ8_0Avx]) -> &mut [BlockQ8_0] {
    // SAFETY: as above.
    unsafe { cast_blocks_mut(xs) }
}

fn as_q8(xs: &[BlockQ8_0Avx]) -> &[Q8Block] {
    // SAFETY: the same layout again (`Q8Block` is `BlockQ8_0` with visible fields).
    unsafe { cast_blocks(xs) }
}

impl GgmlType for BlockQ8_0Avx {
    candle_layout_items!(BlockQ8_0, GgmlDType::Q8_0);

    /// candle's own (AVX2 already).
    fn vec_dot(n: usize, xs: &[Self], ys: &[Self::VecDotType]) -> f32 {
        BlockQ8_0::vec_dot(n, as_candle(xs), ys)
    }

    fn vec_dot_4(
        n: usize,
        xs0: &[Self],
        xs1: &[Self],
        xs2: &[Self],
        xs3: &[Self],
        ys: &[Self::VecDotType],
    ) -> (f32, f32, f32, f32) {
        #[cfg(target_arch = "x86_64")]
        if super::avx2_kernels() {
            let xs = [as_q8(xs0), as_q8(xs1), as_q8(xs2), as_q8(xs3)];
            // SAFETY: AVX2 and FMA were detected at run time; `Q8Block` is `BlockQ8_0`.
            let [d0, d1, d2, d3] = unsafe { avx2::vec_dot_4(n, xs, super::q5_0::q8_blocks(ys)) };
            return (d0, d1, d2, d3);
        }
        dot_4_by_pairs(n, [xs0, xs1, xs2, xs3], ys)
    }

    fn vec_dot_unopt(n: usize, xs: &[Self], ys: &[Self::VecDotType]) -> f32 {
        BlockQ8_0::vec_dot_unopt(n, as_candle(xs), ys)
    }
}

/// The same matrix with the four-row block type (a copy of the bytes).
pub fn from_qtensor(q: &QTensor) -> Result<QTensor> {
    super::q5_0::with_block_type::<BlockQ8_0Avx>(q)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::q5_0::avx2::hsum;
    use super::super::q5_0::{Q8Block, QK};

    /// Four Q8_0 rows against one Q8_0 row. `maddubs` multiplies unsigned by signed bytes:
    /// the activation's absolute values are the unsigned side, shared by the four rows, and
    /// each weight takes the activation's sign (one `sign` a row instead of two).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn vec_dot_4(n: usize, xs: [&[Q8Block]; 4], ys: &[Q8Block]) -> [f32; 4] {
        let nb = n / QK;
        let ones16 = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_ps(); 4];
        let ys = &ys[..nb];
        let xs = xs.map(|x| &x[..nb]);
        for (b, y) in ys.iter().enumerate() {
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let ay = _mm256_sign_epi8(by, by);
            let dy = y.d.to_f32();
            for (acc, x) in acc.iter_mut().zip(&xs) {
                let x = &x[b];
                let bx = _mm256_loadu_si256(x.qs.as_ptr() as *const __m256i);
                let sx = _mm256_sign_epi8(bx, by);
                let dot = _mm256_madd_epi16(ones16, _mm256_maddubs_epi16(ay, sx));
                let sum = _mm256_cvtepi32_ps(dot);
                *acc = _mm256_fmadd_ps(_mm256_set1_ps(x.d.to_f32() * dy), sum, *acc);
            }
        }
        acc.map(|a| hsum(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_row_q8_0_matmul_equals_candles() {
        // Width 160 is no multiple of 256, so candle's generic matmul runs on both sides.
        let gap = super::super::q5_0::tests::matmul_gap(GgmlDType::Q8_0, 160, from_qtensor);
        assert!(gap < 1e-3, "{gap}");
    }
}
