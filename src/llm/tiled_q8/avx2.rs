//! The AVX2 kernel over word tiles (`blocks::TileWordBlock`): the embedder's int8
//! products on CPUs without AVX-512 VNNI. Weights and activations are the Q8_0 blocks
//! the VNNI kernel multiplies, widened to 16 bits, so that `vpmaddwd` multiplies a row's
//! pair of weights by the activation's pair and adds them: 16 multiply-adds an
//! instruction, exact (the byte product `vpmaddubsw` would saturate), where f32 does 8.

use rayon::prelude::*;

use super::QK;

/// An activation block for the word tiles: its Q8_0 integers as 16-bit words (a pair of
/// them is what `vpmaddwd` multiplies a row's pair of weights by) and its scale.
#[derive(Clone, Copy)]
pub(super) struct ActWords {
    pub(super) qs: [i16; QK],
    pub(super) d: f32,
}

/// `m` rows of width `k` as activation blocks for the word tiles, quantized as every
/// other layout's Q8_0 activation (`kernel::quantize`).
pub(super) fn activation(xs: &[f32], m: usize, k: usize) -> Vec<ActWords> {
    let nb = k / QK;
    let mut act = vec![
        ActWords {
            qs: [0; QK],
            d: 0.0
        };
        m * nb
    ];
    let row = |(blocks, x): (&mut [ActWords], &[f32])| {
        for (a, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
            // SAFETY: word tiles, whose products alone call this, exist only where
            // `available()`.
            unsafe { quantize(x, a) }
        }
    };
    if m == 1 {
        row((&mut act, xs));
    } else {
        act.par_chunks_mut(nb).zip(xs.par_chunks(k)).for_each(row);
    }
    act
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use half::f16;

    use super::super::blocks::{Mins, TileWordBlock};
    use super::super::{QK, TILE};
    use super::ActWords;

    /// True where the AVX2 kernels (`kernel_avx2.rs` too) can run: x86-64 with AVX2, FMA
    /// and F16C (all in x86-64-v3).
    pub(in super::super) fn available() -> bool {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }

    /// 32 values as an activation block: `kernel::quantize`'s arithmetic (scale max|x| /
    /// 127 kept as f16, rounded half away from zero with the unrounded scale) in 256 bits.
    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn quantize(x: &[f32], a: &mut ActWords) {
        let (q, d) = round_block(x);
        // `packs` interleaves its operands' 128-bit halves; the permutation restores the
        // order.
        for (i, pair) in q.chunks_exact(2).enumerate() {
            let words = _mm256_permute4x64_epi64(_mm256_packs_epi32(pair[0], pair[1]), 0b11011000);
            _mm256_storeu_si256(a.qs.as_mut_ptr().add(16 * i) as *mut __m256i, words);
        }
        a.d = d;
    }

    /// 32 values as a Q8_0 block's integers (four vectors of eight, in order) and its
    /// scale as f16 keeps it, as `kernel::quantize` rounds them: the largest float below
    /// one half with the value's sign added, then truncated (LLVM's lowering of
    /// `f32::round`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn round_block(x: &[f32]) -> ([__m256i; 4], f32) {
        const HALF_BELOW: f32 = 0.499_999_97;
        let v: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(x.as_ptr().add(8 * i)));
        let sign = _mm256_set1_ps(-0.0);
        let abs = |v: __m256| _mm256_andnot_ps(sign, v);
        let m = _mm256_max_ps(
            _mm256_max_ps(abs(v[0]), abs(v[1])),
            _mm256_max_ps(abs(v[2]), abs(v[3])),
        );
        let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        let amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let half = _mm256_set1_ps(HALF_BELOW);
        let round = |v: __m256| {
            let y = _mm256_mul_ps(v, id);
            let h = _mm256_or_ps(_mm256_and_ps(y, sign), half);
            _mm256_cvttps_epi32(_mm256_add_ps(y, h))
        };
        (
            std::array::from_fn(|i| round(v[i])),
            f16::from_f32(d).to_f32(),
        )
    }

    /// One or two tiles against one to four activation rows (`act` holds whole rows of
    /// `nb` blocks); row r's 16 outputs a tile are added to `out + r·stride + 16t`, as
    /// `kernel::rows` does (word tiles have no minimums).
    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn rows(
        tiles: &[TileWordBlock],
        _: Option<&[Mins]>,
        nb: usize,
        act: &[ActWords],
        out: *mut f32,
        stride: usize,
    ) {
        for (t, tile) in tiles.chunks_exact(nb).enumerate() {
            let out = out.add(t * TILE);
            match act.len() / nb {
                4 => run::<4>(tile, nb, act, out, stride),
                3 => run::<3>(tile, nb, act, out, stride),
                2 => run::<2>(tile, nb, act, out, stride),
                _ => run::<1>(tile, nb, act, out, stride),
            }
        }
    }

    /// One tile against `R` rows: each loaded half of a weight group serves the R rows,
    /// whose 2R integer sums and the two loaded halves fit AVX2's 16 registers.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run<const R: usize>(
        tile: &[TileWordBlock],
        nb: usize,
        act: &[ActWords],
        out: *mut f32,
        stride: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        for (b, block) in tile.iter().enumerate() {
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            let rows: [*const i32; R] =
                std::array::from_fn(|r| act[r * nb + b].qs.as_ptr() as *const i32);
            let w = block.qs.as_ptr() as *const __m256i;
            // Two groups a step: twice the independent work between the loop's branches.
            for g in (0..QK / 2).step_by(2) {
                let w0 = _mm256_load_si256(w.add(2 * g));
                let w1 = _mm256_load_si256(w.add(2 * g + 1));
                let w2 = _mm256_load_si256(w.add(2 * g + 2));
                let w3 = _mm256_load_si256(w.add(2 * g + 3));
                for (s, pairs) in sums.iter_mut().zip(rows) {
                    let y = _mm256_set1_epi32(pairs.add(g).read_unaligned());
                    let z = _mm256_set1_epi32(pairs.add(g + 1).read_unaligned());
                    let p0 = _mm256_add_epi32(_mm256_madd_epi16(w0, y), _mm256_madd_epi16(w2, z));
                    let p1 = _mm256_add_epi32(_mm256_madd_epi16(w1, y), _mm256_madd_epi16(w3, z));
                    s[0] = _mm256_add_epi32(s[0], p0);
                    s[1] = _mm256_add_epi32(s[1], p1);
                }
            }
            let d0 = _mm256_load_ps(block.d.as_ptr());
            let d1 = _mm256_load_ps(block.d.as_ptr().add(8));
            for (r, (acc, s)) in acc.iter_mut().zip(&sums).enumerate() {
                let a = _mm256_set1_ps(act[r * nb + b].d);
                acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[0]), _mm256_mul_ps(d0, a), acc[0]);
                acc[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[1]), _mm256_mul_ps(d1, a), acc[1]);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (h, acc) in acc.iter().enumerate() {
                let at = out.add(r * stride + h * 8);
                _mm256_storeu_ps(at, _mm256_add_ps(_mm256_loadu_ps(at), *acc));
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) use other::*;

/// Elsewhere the kernel is never called: word tiles are built only where `available()`.
#[cfg(not(target_arch = "x86_64"))]
mod other {
    use super::super::blocks::{Mins, TileWordBlock};
    use super::ActWords;

    pub(in super::super) fn available() -> bool {
        false
    }

    pub(in super::super) unsafe fn quantize(_: &[f32], _: &mut ActWords) {
        unreachable!("word tiles are built only where `avx2::available()`")
    }

    pub(in super::super) unsafe fn rows(
        _: &[TileWordBlock],
        _: Option<&[Mins]>,
        _: usize,
        _: &[ActWords],
        _: *mut f32,
        _: usize,
    ) {
        unreachable!("word tiles are built only where `avx2::available()`")
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::Module;

    use super::super::blocks::word_tiles;
    use super::super::tests::{activation_rows, assert_near_product, matrix};
    use super::super::{TiledQ8, Weights};
    use super::*;

    /// `q`'s Q8_0 weights as word tiles, whatever the CPU (a VNNI one builds byte tiles).
    fn as_words(q: &QTensor) -> TiledQ8 {
        let mut tiled = TiledQ8::from_parts(std::slice::from_ref(q)).unwrap();
        let Weights::Bytes(bytes) = &tiled.weights else {
            panic!("Q8_0 converts to byte tiles");
        };
        tiled.weights = Weights::Words(word_tiles(bytes));
        tiled
    }

    #[test]
    fn word_tiles_multiply_as_candles_q8_0_matmul() {
        if !available() {
            eprintln!("no AVX2 here: the word kernel is not exercised");
            return;
        }
        // Widths of 3 and 5 blocks, a partial tile, and weights at the ends of the range
        // (where a byte product would saturate).
        for (n, k, seed) in [(70, 160, 3), (37, 96, 8)] {
            let mut w = matrix(n, k, seed);
            if seed == 8 {
                w = (w.sign().unwrap() * 100.0).unwrap();
            }
            let q = QTensor::quantize(&w, GgmlDType::Q8_0).unwrap();
            let tiled = as_words(&q);
            // 1: the one-row path; 3, 6, 9: four rows at a time with partial groups.
            for rows in [1, 3, 6, 9] {
                let x = activation_rows(rows, k);
                let got = tiled.forward(&x).unwrap();
                let want = QMatMul::from_qtensor(QTensor::quantize(&w, GgmlDType::Q8_0).unwrap())
                    .unwrap()
                    .forward(&x)
                    .unwrap();
                assert_near_product(&got, &want, &format!("{n}×{k}, rows {rows}"));
            }
        }
    }
}
