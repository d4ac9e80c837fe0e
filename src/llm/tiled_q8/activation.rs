//! Activation rows quantized to blocks as ggml quantizes them for each weight type: per
//! 32 values with an f16 scale (Q8_0), or per 256 with an f32 one (Q8_K, for Q4_K).

use half::f16;

use super::kernel::{self, Layout};
use super::{available, kernel_avx2, on_pool, Pool, Shared, QK};

/// An activation block: bytes, scale, -128 × their sum (see `TileBlock`), and scale ×
/// sum, rounded to f16 (ggml's Q8_1 `s`, which a Q4_1 block's minimum multiplies) and
/// not (which a Q4_K block's minimum multiplies, as ggml's Q4_K × Q8_K product takes
/// the exact sums).
#[derive(Clone, Copy)]
pub(super) struct Act {
    pub(super) qs: [i8; QK],
    pub(super) d: f32,
    pub(super) correction: i32,
    pub(super) scaled_sum: f32,
    pub(super) scaled_sum_f32: f32,
}

impl Act {
    pub(super) const ZERO: Act = Act {
        qs: [0; QK],
        d: 0.0,
        correction: 0,
        scaled_sum: 0.0,
        scaled_sum_f32: 0.0,
    };
}

/// `m` rows of width `k` as activation blocks, row after row, quantized as candle's
/// `BlockQ8_0::from_float` does (scale max|x| / 127 kept as f16, bytes rounded half away
/// from zero with the unrounded scale) but 32 values at a time (`kernel::quantize`):
/// candle's loop made a prompt's product spend a sixth of its time quantizing.
pub(super) fn quantize_rows(xs: &[f32], m: usize, k: usize, pool: Pool) -> Vec<Act> {
    let nb = k / QK;
    let mut act = vec![Act::ZERO; m * nb];
    let quantize: unsafe fn(&[f32], &mut Act) = if available() {
        kernel::quantize
    } else {
        kernel_avx2::quantize
    };
    let acts = Shared(act.as_mut_ptr());
    let row = |r: usize| {
        // SAFETY: row r alone writes its `nb` blocks of `act`, which outlives the call.
        let blocks = unsafe { std::slice::from_raw_parts_mut(acts.at(r * nb), nb) };
        for (a, x) in blocks.iter_mut().zip(xs[r * k..].chunks_exact(QK)) {
            // SAFETY: tiles exist, and this runs, only where `runs_here()`: with VNNI, or
            // else with AVX2.
            unsafe { quantize(x, a) }
        }
    };
    if m == 1 {
        // One token while decoding: not worth a parallel call.
        row(0);
    } else {
        // On the pool that runs the products: rayon's threads beside candle's spinning
        // ones cost a Qwen prompt 5–10 % on 2 cores.
        on_pool(pool, m, row);
    }
    act
}

/// `m` rows of width `k` as activation blocks for layout `L`.
pub(super) fn activation<L: Layout>(xs: &[f32], m: usize, k: usize, pool: Pool) -> Vec<Act> {
    if L::Q8K {
        quantize_rows_q8k(xs, m, k, pool)
    } else {
        quantize_rows(xs, m, k, pool)
    }
}

/// `m` rows of width `k` (a multiple of 256) as activation blocks quantized as ggml's Q8_K
/// (candle's `BlockQ8K::from_float`): one f32 scale per 256 values, the value of largest
/// magnitude at -127. What llama.cpp multiplies a Q4_K weight by; Gemma 3's logits moved
/// by more than the reference test allows with Q8_0's per-32 activation blocks.
fn quantize_rows_q8k(xs: &[f32], m: usize, k: usize, pool: Pool) -> Vec<Act> {
    const SUPER: usize = 256;
    let mut act = vec![Act::ZERO; m * k / QK];
    let block = |(acts, x): (&mut [Act], &[f32])| {
        let (mut max, mut amax) = (0f32, 0f32);
        for &v in x {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        if amax == 0.0 {
            return;
        }
        let iscale = -127f32 / max;
        let d = 1.0 / iscale;
        for (a, x) in acts.iter_mut().zip(x.chunks_exact(QK)) {
            for (q, v) in a.qs.iter_mut().zip(x) {
                *q = (iscale * v).round().clamp(-128.0, 127.0) as i8;
            }
            let sum: i32 = a.qs.iter().map(|&q| q as i32).sum();
            a.d = d;
            a.correction = -128 * sum;
            a.scaled_sum_f32 = d * sum as f32;
            a.scaled_sum = f16::from_f32(a.scaled_sum_f32).to_f32();
        }
    };
    let (per, acts) = (SUPER / QK, Shared(act.as_mut_ptr()));
    let unit = |i: usize| {
        // SAFETY: unit i alone writes its `per` blocks of `act`, which outlives the call.
        let acts = unsafe { std::slice::from_raw_parts_mut(acts.at(i * per), per) };
        block((acts, &xs[i * SUPER..(i + 1) * SUPER]));
    };
    let units = m * k / SUPER;
    if m == 1 {
        (0..units).for_each(unit);
    } else {
        on_pool(pool, units, unit);
    }
    act
}
