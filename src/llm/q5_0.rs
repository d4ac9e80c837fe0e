//! Q5_0 weights with an AVX2 dot product. candle 0.11 has SIMD kernels for Q4_0, Q8_0 and
//! the K-quants but only a scalar one for Q5_0, which is most of a Qwen2.5 Q4_K_M file
//! (rows of width 896 cannot be K-quants). Re-quantizing those to Q8_0 works but reads 55 %
//! more bytes per generated token; this block type keeps the file's 5.5 bits per weight and
//! plugs into candle's own quantized matmul (`k_quants::matmul` over any `GgmlType`), so only
//! the dot product is ours. It is ggml's `ggml_vec_dot_q5_0_q8_0` AVX2 path, in Rust.
//!
//! Layout is candle's (and ggml's) `BlockQ5_0`: element j of a 32-element block is
//! `(low or high nibble of qs[j % 16]) | bit j of qh << 4`, minus 16, times `d`.

use std::borrow::Cow;

use anyhow::{bail, Result};
use candle_core::quantized::k_quants::{BlockQ5_0, BlockQ8_0, GgmlType};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use half::f16;

pub(super) const QK: usize = 32;

#[derive(Debug, Clone, PartialEq)]
#[repr(C)]
pub struct BlockQ5_0Avx {
    d: f16,
    qh: [u8; 4],
    qs: [u8; QK / 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ5_0Avx>() == std::mem::size_of::<BlockQ5_0>());

/// candle's `BlockQ8_0` (fields are crate-private there), same `repr(C)` layout.
#[repr(C)]
pub(super) struct Q8Block {
    pub(super) d: f16,
    pub(super) qs: [i8; QK],
}
const _: () = assert!(std::mem::size_of::<Q8Block>() == std::mem::size_of::<BlockQ8_0>());

/// `xs` viewed as blocks of another type.
///
/// # Safety
/// `A` and `B` are `repr(C)` block types with the same fields (sizes and alignments are
/// checked at compile time here; the field order is the caller's word).
pub(super) unsafe fn cast_blocks<A, B>(xs: &[A]) -> &[B] {
    const { assert!(size_of::<A>() == size_of::<B>() && align_of::<A>() == align_of::<B>()) };
    // SAFETY: the same layout, as the caller guarantees; the length and lifetime are `xs`'s.
    unsafe { std::slice::from_raw_parts(xs.as_ptr() as *const B, xs.len()) }
}

/// `cast_blocks`, mutable.
///
/// # Safety
/// As for `cast_blocks`.
pub(super) unsafe fn cast_blocks_mut<A, B>(xs: &mut [A]) -> &mut [B] {
    const { assert!(size_of::<A>() == size_of::<B>() && align_of::<A>() == align_of::<B>()) };
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(xs.as_mut_ptr() as *mut B, xs.len()) }
}

fn as_candle(xs: &[BlockQ5_0Avx]) -> &[BlockQ5_0] {
    // SAFETY: both are repr(C): f16, [u8; 4], [u8; 16].
    unsafe { cast_blocks(xs) }
}

fn as_candle_mut(xs: &mut [BlockQ5_0Avx]) -> &mut [BlockQ5_0] {
    // SAFETY: as above.
    unsafe { cast_blocks_mut(xs) }
}

pub(super) fn q8_blocks(ys: &[BlockQ8_0]) -> &[Q8Block] {
    // SAFETY: both repr(C) f16 + [i8; 32].
    unsafe { cast_blocks(ys) }
}

/// The items of a `GgmlType` impl that a block type of candle's layout takes from candle's
/// own type (`$candle`), through the module's `as_candle` / `as_candle_mut` views.
macro_rules! candle_layout_items {
    ($candle:ty, $dtype:expr) => {
        const DTYPE: GgmlDType = $dtype;
        const BLCK_SIZE: usize = QK;
        type VecDotType = BlockQ8_0;

        fn to_float(xs: &[Self], ys: &mut [f32]) {
            <$candle>::to_float(as_candle(xs), ys)
        }

        fn from_float(xs: &[f32], ys: &mut [Self]) {
            <$candle>::from_float(xs, as_candle_mut(ys))
        }
    };
}
pub(super) use candle_layout_items;

impl GgmlType for BlockQ5_0Avx {
    candle_layout_items!(BlockQ5_0, GgmlDType::Q5_0);

    fn vec_dot(n: usize, xs: &[Self], ys: &[Self::VecDotType]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if super::avx2_kernels() {
            // SAFETY: AVX2 and FMA were detected at run time.
            return unsafe { avx2::vec_dot(n, xs, q8_blocks(ys)) };
        }
        Self::vec_dot_unopt(n, xs, ys)
    }

    /// Four rows against one activation row: candle's matmul calls this for each quad of
    /// output columns, and the default is four single dot products that reload the
    /// activation and chain every block through one accumulator.
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
            // SAFETY: AVX2 and FMA were detected at run time.
            let [d0, d1, d2, d3] =
                unsafe { avx2::vec_dot_4(n, [xs0, xs1, xs2, xs3], q8_blocks(ys)) };
            return (d0, d1, d2, d3);
        }
        dot_4_by_pairs(n, [xs0, xs1, xs2, xs3], ys)
    }

    fn vec_dot_unopt(n: usize, xs: &[Self], ys: &[Self::VecDotType]) -> f32 {
        BlockQ5_0::vec_dot(n, as_candle(xs), ys)
    }
}

/// Four dot products as two `vec_dot_2` pairs: the four-row product without AVX2.
pub(super) fn dot_4_by_pairs<T: GgmlType>(
    n: usize,
    [xs0, xs1, xs2, xs3]: [&[T]; 4],
    ys: &[T::VecDotType],
) -> (f32, f32, f32, f32) {
    let (d0, d1) = T::vec_dot_2(n, xs0, xs1, ys);
    let (d2, d3) = T::vec_dot_2(n, xs2, xs3, ys);
    (d0, d1, d2, d3)
}

/// The same matrix with the AVX2 block type (a copy of the bytes; the layout is identical).
pub fn from_qtensor(q: &QTensor) -> Result<QTensor> {
    with_block_type::<BlockQ5_0Avx>(q)
}

/// `q`'s bytes as blocks of `T`, a type with the same `repr(C)` layout as candle's block of
/// `T::DTYPE` (checked by the callers' size assertions), so candle's matmul calls `T`'s
/// dot products.
pub(super) fn with_block_type<T: GgmlType + Send + Sync + 'static>(q: &QTensor) -> Result<QTensor> {
    if q.dtype() != T::DTYPE {
        bail!("expected a {:?} tensor, got {:?}", T::DTYPE, q.dtype());
    }
    let bytes: Cow<[u8]> = q.data()?;
    let size = std::mem::size_of::<T>();
    if !bytes.len().is_multiple_of(size) {
        bail!(
            "{} bytes are no whole number of {:?} blocks",
            bytes.len(),
            T::DTYPE
        );
    }
    let count = bytes.len() / size;
    let mut blocks: Vec<T> = Vec::with_capacity(count);
    // SAFETY: `T` is plain data (an f16 and byte arrays, every bit pattern valid) and the
    // buffer holds `count` of them; the bytes are copied before the length is set.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), blocks.as_mut_ptr() as *mut u8, bytes.len());
        blocks.set_len(count);
    }
    let storage = QStorage::Cpu(Box::new(blocks));
    Ok(QTensor::new(storage, q.shape().clone())?)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use super::{BlockQ5_0Avx, Q8Block, QK};

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::llm) unsafe fn hsum(x: __m256) -> f32 {
        let hi = _mm256_extractf128_ps(x, 1);
        let lo = _mm256_castps256_ps128(x);
        let s = _mm_add_ps(hi, lo);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// 32 bytes: the 16 low nibbles of `qs`, then the 16 high nibbles.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn nibbles(qs: &[u8; 16]) -> __m256i {
        let tmp = _mm_loadu_si128(qs.as_ptr() as *const __m128i);
        let bytes = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
        _mm256_and_si256(bytes, _mm256_set1_epi8(0x0f))
    }

    /// 0xff in byte j where bit j of `qh` is set, else 0.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn bits(qh: &[u8; 4]) -> __m256i {
        let x32 = i32::from_le_bytes(*qh);
        let shuf = _mm256_set_epi64x(
            0x0303030303030303,
            0x0202020202020202,
            0x0101010101010101,
            0x0000000000000000,
        );
        let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(x32), shuf);
        let bit_mask = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
        let bytes = _mm256_or_si256(bytes, bit_mask);
        _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1))
    }

    /// Sum of the 32 products of signed bytes, as 8 f32 partial sums.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn mul_sum_i8(x: __m256i, y: __m256i) -> __m256 {
        let ax = _mm256_sign_epi8(x, x);
        let sy = _mm256_sign_epi8(y, x);
        let dot = _mm256_maddubs_epi16(ax, sy);
        let summed = _mm256_madd_epi16(_mm256_set1_epi16(1), dot);
        _mm256_cvtepi32_ps(summed)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn vec_dot(n: usize, xs: &[BlockQ5_0Avx], ys: &[Q8Block]) -> f32 {
        let nb = n / QK;
        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs[..nb].iter().zip(&ys[..nb]) {
            let d = _mm256_set1_ps(x.d.to_f32() * y.d.to_f32());
            // A clear fifth bit means the value is nibble - 16: OR 0xF0 into the byte makes
            // exactly that two's-complement number; a set bit leaves the nibble (16..31 - 16).
            let hi = _mm256_andnot_si256(bits(&x.qh), _mm256_set1_epi8(0xf0u8 as i8));
            let bx = _mm256_or_si256(nibbles(&x.qs), hi);
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            acc = _mm256_fmadd_ps(d, mul_sum_i8(bx, by), acc);
        }
        hsum(acc)
    }

    /// Four Q5_0 rows against one Q8_0 row. The weights are taken unsigned (0..31, the
    /// fifth bit ORed in) so `maddubs` needs no sign trick and the activation's bytes are
    /// shared by the four rows; the 16 every weight is offset by comes back as 16 times the
    /// activation's block sum, computed once for the four.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn vec_dot_4(n: usize, xs: [&[BlockQ5_0Avx]; 4], ys: &[Q8Block]) -> [f32; 4] {
        let nb = n / QK;
        let ones8 = _mm256_set1_epi8(1);
        let ones16 = _mm256_set1_epi16(1);
        let fifth = _mm256_set1_epi8(0x10);
        let mut acc = [_mm256_setzero_ps(); 4];
        let ys = &ys[..nb];
        let xs = xs.map(|x| &x[..nb]);
        for (b, y) in ys.iter().enumerate() {
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let dy = y.d.to_f32();
            // 16 * (sum of the activation's bytes), as 8 i32 partial sums.
            let offset = _mm256_slli_epi32(
                _mm256_madd_epi16(ones16, _mm256_maddubs_epi16(ones8, by)),
                4,
            );
            for (acc, x) in acc.iter_mut().zip(&xs) {
                let x = &x[b];
                let bx = _mm256_or_si256(nibbles(&x.qs), _mm256_and_si256(bits(&x.qh), fifth));
                let dot = _mm256_madd_epi16(ones16, _mm256_maddubs_epi16(bx, by));
                let sum = _mm256_cvtepi32_ps(_mm256_sub_epi32(dot, offset));
                *acc = _mm256_fmadd_ps(_mm256_set1_ps(x.d.to_f32() * dy), sum, *acc);
            }
        }
        acc.map(|a| hsum(a))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use candle_core::quantized::QMatMul;
    use candle_core::{Device, Module, Tensor};

    /// Largest difference between candle's matmul over a `dtype` matrix of `n` rows by `k`
    /// and the same matmul over `convert`'s copy of it, for 1 and 3 activation rows. 26
    /// rows: six quads of output columns (`vec_dot_4`) and a tail of two (`vec_dot`).
    pub(in crate::llm) fn matmul_gap(
        dtype: GgmlDType,
        k: usize,
        convert: fn(&QTensor) -> Result<QTensor>,
    ) -> f32 {
        let n = 26;
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 7919 % 1001) as f32 / 500.0 - 1.0) * (1 + i % 5) as f32)
            .collect();
        let w = Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap();
        let mut gap = 0f32;
        for rows in [1, 3] {
            let q = QTensor::quantize(&w, dtype).unwrap();
            let fast = convert(&q).unwrap();
            let x: Vec<f32> = (0..rows * k)
                .map(|i| ((i * 31 % 17) as f32 - 8.0) / 4.0)
                .collect();
            let x = Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap();
            let want = QMatMul::from_qtensor(q).unwrap().forward(&x).unwrap();
            let got = QMatMul::from_qtensor(fast).unwrap().forward(&x).unwrap();
            let diff = (want - got).unwrap().abs().unwrap().flatten_all().unwrap();
            gap = gap.max(diff.max(0).unwrap().to_scalar::<f32>().unwrap());
        }
        gap
    }

    #[test]
    fn avx2_q5_0_matmul_equals_candles_scalar_one() {
        // The build targets x86-64-v3 (.cargo/config.toml), which has AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        assert!(crate::llm::avx2_kernels());
        let gap = matmul_gap(GgmlDType::Q5_0, 96, from_qtensor);
        assert!(gap < 1e-3, "{gap}");
    }
}
