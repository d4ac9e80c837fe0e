//! The encoder's arithmetic on plain `f32` rows: matrix products through the `gemm` crate
//! (the library candle uses too), and the row operations around them written so that the
//! compiler vectorizes them (branch-free `erf` and `exp`, no libm calls in the loops).

use gemm::Parallelism;
use rayon::prelude::*;

/// A row-major `rows × cols` matrix view.
#[derive(Clone, Copy)]
pub struct Matrix<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
}

impl<'a> Matrix<'a> {
    /// `data` as rows of `cols` values.
    pub fn rows_of(data: &'a [f32], cols: usize) -> Self {
        Matrix {
            data,
            rows: data.len() / cols,
            cols,
        }
    }
}

/// `out (rows × n) += x (rows × k) · w (k × n)`, all row-major and contiguous; `out`
/// holds what is to be added (bias, residual) on entry.
pub fn add_product(x: Matrix, w: Matrix, out: &mut [f32]) {
    let (m, k, n) = (x.rows, x.cols, w.cols);
    assert_eq!(k, w.rows, "product of {m}×{k} by {}×{n}", w.rows);
    assert!(x.data.len() >= m * k && w.data.len() >= k * n && out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    let threads = rayon::current_num_threads();
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the three buffers hold the sizes asserted above; strides are row-major.
    unsafe {
        strided_product(
            m,
            n,
            k,
            (out.as_mut_ptr(), n as isize),
            (x.data.as_ptr(), k as isize, 1),
            (w.data.as_ptr(), n as isize, 1),
            true,
            parallelism,
        )
    }
}

/// `dst = [dst +] lhs · rhs` for strided operands: `(pointer, row stride)` for `dst` (unit
/// column stride) and `(pointer, row stride, column stride)` for the factors.
///
/// # Safety
/// Every element the strides address must lie inside its allocation, and `dst` must not
/// overlap the factors.
#[allow(clippy::too_many_arguments)]
pub unsafe fn strided_product(
    m: usize,
    n: usize,
    k: usize,
    dst: (*mut f32, isize),
    lhs: (*const f32, isize, isize),
    rhs: (*const f32, isize, isize),
    accumulate: bool,
    parallelism: Parallelism,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst.0,
        1,
        dst.1,
        accumulate,
        lhs.0,
        lhs.2,
        lhs.1,
        rhs.0,
        rhs.2,
        rhs.1,
        1.0,
        1.0,
        false,
        false,
        false,
        parallelism,
    )
}

/// Copies `row` into every row of `out` (width `row.len()`).
pub fn fill_rows(out: &mut [f32], row: &[f32]) {
    out.par_chunks_mut(row.len() * 64).for_each(|block| {
        for r in block.chunks_mut(row.len()) {
            r.copy_from_slice(row);
        }
    });
}

/// `out[r] = x[r] + row` for every row.
pub fn add_row_to(x: &[f32], row: &[f32], out: &mut [f32]) {
    let d = row.len();
    out.par_chunks_mut(d * 64)
        .zip(x.par_chunks(d * 64))
        .for_each(|(o, x)| {
            for (o, x) in o.chunks_mut(d).zip(x.chunks(d)) {
                for ((o, x), b) in o.iter_mut().zip(x).zip(row) {
                    *o = x + b;
                }
            }
        });
}

/// Layer normalisation of every row of `x` in place (two-pass mean and variance).
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let d = gamma.len();
    x.par_chunks_mut(d * 16).for_each(|block| {
        for row in block.chunks_mut(d) {
            let mean = sum(row) / d as f32;
            let var = sum_of(row, |v| (v - mean) * (v - mean)) / d as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    });
}

/// Softmax of one row in place.
pub fn softmax(row: &mut [f32]) {
    let max = lanes(row, f32::NEG_INFINITY, |a, v| a.max(v))
        .into_iter()
        .fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / sum(row);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// The sum of `xs`.
fn sum(xs: &[f32]) -> f32 {
    sum_of(xs, |v| v)
}

/// The sum of `f` over `xs`.
#[inline(always)]
fn sum_of(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    lanes(xs, 0.0, |a, v| a + f(v)).iter().sum()
}

/// `xs` folded into 16 independent lanes (lane i takes every 16th value from i): a
/// reduction the compiler vectorizes, where one running total would be a serial chain of
/// dependent additions (it may not reorder float arithmetic on its own).
#[inline(always)]
fn lanes(xs: &[f32], init: f32, fold: impl Fn(f32, f32) -> f32) -> [f32; 16] {
    let mut acc = [init; 16];
    let mut blocks = xs.chunks_exact(16);
    for block in blocks.by_ref() {
        for (a, &v) in acc.iter_mut().zip(block) {
            *a = fold(*a, v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(blocks.remainder()) {
        *a = fold(*a, v);
    }
    acc
}

/// GELU as BERT defines it, x·(1 + erf(x/√2))/2, in place.
pub fn gelu(x: &mut [f32]) {
    x.par_chunks_mut(1 << 14).for_each(|block| {
        for v in block.iter_mut() {
            *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
        }
    });
}

/// erf by Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7), branch-free.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    (1.0 - poly * exp(-a * a)).copysign(x)
}

/// e^x for x ≤ 0 (inputs below -87 give ~0): Cephes' polynomial after range reduction,
/// branch-free and without `round` (a libm call in scalar code) so that loops over it
/// vectorize.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let p = p * r * r + r + 1.0;
    // 2^n built from its bits: adding 1.5·2^23 leaves n + 127 (in 1..=127 here) in the
    // low mantissa bits, which the shift moves into the exponent field. A float-to-int
    // cast would do the same, but Rust's saturating cast does not vectorize.
    let biased = (n + (127.0 + 12_582_912.0)).to_bits();
    p * f32::from_bits(biased << 23)
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
    fn gelu_matches_the_definition_on_any_length() {
        let xs: Vec<f32> = (0..40_000).map(|i| (i as f32 - 20_000.0) * 3e-4).collect();
        let mut got = xs.clone();
        gelu(&mut got);
        for (x, g) in xs.iter().zip(got) {
            let want = 0.5 * *x as f64 * (1.0 + libm::erf(*x as f64 / 2f64.sqrt()));
            assert!(
                (g as f64 - want).abs() < 1e-6,
                "gelu({x}) = {g}, want {want}"
            );
        }
    }

    #[test]
    fn product_adds_to_what_out_holds() {
        // x (2×3) · w (3×2) + [10, 20] per row.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let w = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let mut out = vec![0.0; 4];
        fill_rows(&mut out, &[10.0, 20.0]);
        let x = Matrix {
            data: &x,
            rows: 2,
            cols: 3,
        };
        let w = Matrix {
            data: &w,
            rows: 3,
            cols: 2,
        };
        add_product(x, w, &mut out);
        assert_eq!(out, vec![14.0, 25.0, 20.0, 31.0]);
    }

    #[test]
    fn layer_norm_and_softmax_rows() {
        let mut x = vec![1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0];
        layer_norm(&mut x, &[1.0; 4], &[0.5; 4], 1e-12);
        let want = [-1.341_640_8, -0.447_213_6, 0.447_213_6, 1.341_640_8];
        for (g, w) in x[..4].iter().zip(want) {
            assert!((g - (w + 0.5)).abs() < 1e-5, "{g} vs {}", w + 0.5);
        }
        assert!(x[4..].iter().all(|v| (v - 0.5).abs() < 1e-5));
        let mut row = vec![1.0, 2.0, 3.0];
        softmax(&mut row);
        let z: f32 = [1f32, 2.0, 3.0].iter().map(|v| v.exp()).sum();
        for (g, v) in row.iter().zip([1f32, 2.0, 3.0]) {
            assert!((g - v.exp() / z).abs() < 1e-6);
        }
    }
}
