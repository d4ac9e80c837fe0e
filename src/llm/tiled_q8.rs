//! Q8_0, Q5_0, Q4_1 and Q4_K weights in tiles of 16 rows, multiplied by activation rows
//! with AVX-512 VNNI (`kernel.rs`), or else with AVX2 on the same tiles (`kernel_avx2.rs`):
//! one row at a time when decoding, four at a time for a prompt (each loaded weight group
//! serves the four). Without VNNI, a float matrix (the embedder's) is held as Q8_0 tiles
//! of 16-bit words instead (`avx2.rs`).
//!
//! candle's matmul asks a block type for at most four rows at a time, so a Q5_0 or Q8_0
//! weight costs about ten instructions per 32 multiply-adds a row (decode, `maddubs`,
//! `madd`, convert, scale). Here 16 rows are interleaved four bytes at a time, so one
//! `vpdpbusd` on a 512-bit register does 64 multiply-adds (16 rows × 4 bytes) against one
//! broadcast group of the activation, and a block's 16 scales are applied by one vector
//! multiply. candle has such kernels too (`repack_x86`), but only for widths that are a
//! multiple of 256 (Qwen2.5 0.5B's 896 is not, SmolLM2's 576 neither) and it keeps the
//! repacked copy beside the original, twice the memory; this layout is the only copy.
//!
//! Exactness: a Q8_0 block is copied. A matrix that is all Q5_0 keeps its 5-bit integers
//! (plus 16) as nibbles and a bit mask, and one all of Q4_1 or all of Q4_K its integers
//! 0..15 as nibbles with the scales and minimums of its blocks of 32 (`blocks.rs`): Q4_1's
//! as the file's f16, 5 bits a weight; Q4_K's as f32, 6 bits (a sub-block's scale is a
//! product that f16 may not hold), instead of the byte tiles' 9. They are unpacked to
//! bytes in registers (`kernel.rs`). A minimum is added as minimum × (activation scale ×
//! activation sum), as ggml's Q4_1 × Q8_1 and Q4_K × Q8_K products do. A Q5_0 part stacked with other types
//! is converted to bytes without loss (its integers -16..15 times 8, its scale over 8).
//! Other types are dequantized and re-quantized to Q8_0 as candle does. Each activation
//! block is quantized to bytes as ggml quantizes it for that weight type (per 32 values
//! with an f16 scale, per 256 with an f32 one for Q4_K), so the products are llama.cpp's
//! up to the order of summation.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;
use rayon::prelude::*;

mod avx2;
mod blocks;
mod kernel;
mod kernel_avx2;
use blocks::{
    byte_tiles, byte_weight, low_nibble, nibble_weight, q4_1_tiles, q4k_tiles, q5_0_tiles,
    word_tiles, word_weight,
};
use blocks::{Mins, Tile4Block, Tile4hBlock, Tile5Block, TileBlock, TileWordBlock};
use kernel::{Bytes, Layout, Nibbles, Nibbles4, NibblesK};
use kernel_avx2::Avx2Layout;

/// Rows per tile: one 512-bit register of 32-bit sums.
pub const TILE: usize = 16;
const QK: usize = 32;
/// Bytes of one row's block in a tile: 32 weights.
const GROUPS: usize = QK / 4;
/// A multi-row product's task: 2 tiles by 4 activation rows, 8 chains of `vpdpbusd` and
/// 8 float accumulators, which with the loaded groups fit the 32 vector registers.
const GEMM_TILES: usize = 2;
const GEMM_ROWS: usize = 4;

/// A weight matrix of `n` rows by `k` columns as tiles.
pub struct TiledQ8 {
    n: usize,
    k: usize,
    /// Tile after tile; within a tile, its `k / 32` blocks in order.
    weights: Weights,
}

enum Weights {
    /// Signed integers plus 128.
    Bytes(Vec<TileBlock>),
    /// A matrix all of Q4_1: its integers 0..15 as nibbles, with the blocks' f16 scales
    /// and minimums.
    Q4_1(Vec<Tile4hBlock>),
    /// A matrix all of Q4_K, as Q4_1 (each sub-block of 32 with its scale and minimum),
    /// and each block's minimums in the order of the blocks.
    Q4K(Vec<Tile4Block>, Vec<Mins>),
    /// A matrix all of Q5_0.
    Q5_0(Vec<Tile5Block>),
    /// Q8_0's integers as 16-bit words for the AVX2 kernel (`avx2.rs`): the embedder's
    /// int8 products where VNNI is missing.
    Words(Vec<TileWordBlock>),
}

/// A kernel over one or two tiles and one to four activation rows (`kernel::rows`).
type RowsKernel<B, A> = unsafe fn(&[B], Option<&[Mins]>, usize, &[A], *mut f32, usize);

/// True where the kernel can run: x86-64 with AVX-512 F/BW/VL and VNNI.
pub fn available() -> bool {
    #[cfg(test)]
    if tests::AVX2_ONLY.with(std::cell::Cell::get) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True where tiles can be built and multiplied: with AVX-512 VNNI (`kernel.rs`), or
/// else with AVX2 (`kernel_avx2.rs`; a float matrix, the embedder's, as word tiles:
/// `avx2.rs`).
pub fn runs_here() -> bool {
    available() || avx2::available()
}

/// Whether a weight of this type converts without loss (Q4_1 and Q4_K when the whole
/// matrix is of that type: `TiledQ8::from_parts`).
pub fn exact_from(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q8_0 | GgmlDType::Q5_0 | GgmlDType::Q4_1 | GgmlDType::Q4K
    )
}

/// How a matrix of these parts' types is held: as nibble tiles when every part is Q4_1,
/// Q4_K or Q5_0, else as "Q8_0 tiles".
pub fn held_as(dtypes: &[GgmlDType]) -> &'static str {
    match all_of(dtypes) {
        Some(GgmlDType::Q4_1) => "Q4_1 tiles",
        Some(GgmlDType::Q4K) => "Q4_K as Q4_1 tiles",
        Some(GgmlDType::Q5_0) => "Q5_0 tiles",
        _ => "Q8_0 tiles",
    }
}

/// The one type of all `dtypes`, if they share one.
fn all_of(dtypes: &[GgmlDType]) -> Option<GgmlDType> {
    let first = *dtypes.first()?;
    dtypes.iter().all(|d| *d == first).then_some(first)
}

impl TiledQ8 {
    /// The row-wise concatenation of `parts` (each `rows × k`, any GGUF type).
    pub fn from_parts(parts: &[QTensor]) -> Result<TiledQ8> {
        let k = parts[0].shape().dims2()?.1;
        if k == 0 || !k.is_multiple_of(QK) {
            bail!("width {k} is not a positive multiple of {QK}");
        }
        let mut n = 0;
        for p in parts {
            let (rows, pk) = p.shape().dims2()?;
            if pk != k {
                bail!("cannot stack a width-{pk} matrix onto width {k}");
            }
            n += rows;
        }
        let dtypes: Vec<GgmlDType> = parts.iter().map(|p| p.dtype()).collect();
        let weights = match all_of(&dtypes) {
            Some(GgmlDType::Q4_1) => Weights::Q4_1(q4_1_tiles(parts, n, k)?),
            Some(GgmlDType::Q4K) => {
                let (blocks, mins) = q4k_tiles(parts, n, k)?;
                Weights::Q4K(blocks, mins)
            }
            Some(GgmlDType::Q5_0) => Weights::Q5_0(q5_0_tiles(parts, n, k)?),
            _ => Weights::Bytes(byte_tiles(parts, n, k)?),
        };
        Ok(TiledQ8 { n, k, weights })
    }

    /// `x · Wᵀ` for `x` of shape `(m, k)`, one activation row at a time.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        if k != self.k {
            bail!("input width {k}, weights {}", self.k);
        }
        let xs = x
            .to_dtype(candle_core::DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let mut out = vec![0f32; m * self.n];
        if m == 1 {
            self.gemv(&xs, &mut out);
        } else {
            self.gemm(&xs, m, &mut out, Pool::Candle);
        }
        Ok(Tensor::from_vec(out, (m, self.n), x.device())?)
    }

    /// A float matrix of `n` rows by `k` columns (row-major), each row quantized to Q8_0
    /// blocks as ggml quantizes a weight, as byte tiles where VNNI runs, else as word
    /// tiles for AVX2 (the embedder's int8 path; `runs_here`).
    pub fn from_f32(w: &[f32], n: usize, k: usize) -> Result<TiledQ8> {
        if w.len() != n * k {
            bail!("{} values for a {n}×{k} matrix", w.len());
        }
        if !runs_here() {
            bail!("int8 products need AVX-512 VNNI or AVX2, which this CPU lacks");
        }
        let t = Tensor::from_slice(w, (n, k), &Device::Cpu)?;
        let mut tiled = TiledQ8::from_parts(&[QTensor::quantize(&t, GgmlDType::Q8_0)?])?;
        if !available() {
            if let Weights::Bytes(bytes) = &tiled.weights {
                tiled.weights = Weights::Words(word_tiles(bytes));
            }
        }
        Ok(tiled)
    }

    /// Output width (rows of the weight).
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// Row `r` of the weight as f32, appended to `out`: what candle's dequantization of
    /// the source block gives, where the conversion was exact (`exact_from`). A tied
    /// token embedding is looked up here instead of in a second copy of the table.
    pub fn append_row(&self, r: usize, out: &mut Vec<f32>) {
        let nb = self.k / QK;
        let (tile, i) = (r / TILE, r % TILE);
        for b in 0..nb {
            let at = tile * nb + b;
            match &self.weights {
                Weights::Bytes(blocks) => {
                    let tb = &blocks[at];
                    out.extend((0..QK).map(|j| byte_weight(tb, i, j) as f32 * tb.d[i]));
                }
                Weights::Q4_1(blocks) => {
                    let tb = &blocks[at];
                    let (d, m) = (tb.d[i].to_f32(), tb.m[i].to_f32());
                    out.extend((0..QK).map(|j| low_nibble(&tb.low, i, j) as f32 * d + m));
                }
                Weights::Q4K(blocks, mins) => {
                    let (tb, m) = (&blocks[at], mins[at].0[i]);
                    out.extend((0..QK).map(|j| low_nibble(&tb.low, i, j) as f32 * tb.d[i] + m));
                }
                Weights::Q5_0(blocks) => {
                    let tb = &blocks[at];
                    let byte_mask = available();
                    out.extend(
                        (0..QK).map(|j| nibble_weight(tb, i, j, byte_mask) as f32 * tb.d[i]),
                    );
                }
                Weights::Words(blocks) => {
                    let tb = &blocks[at];
                    out.extend((0..QK).map(|j| word_weight(tb, i, j) as f32 * tb.d[i]));
                }
            }
        }
    }

    /// `out += x · Wᵀ` for `m` activation rows of width `k` (row-major); `out` is `m × n`
    /// and holds what is to be added (bias, residual) on entry. Runs on rayon's pool, where
    /// the embedder's other passes run: handing each product to candle's pool in between
    /// left one pool's threads spinning while the other's waited for a core, and a
    /// query's embedding took 15–25 ms instead of 2 at the 99th percentile.
    pub fn add_product(&self, xs: &[f32], m: usize, out: &mut [f32]) {
        assert!(xs.len() >= m * self.k && out.len() >= m * self.n);
        self.gemm(xs, m, out, Pool::Rayon);
    }

    /// `x · Wᵀ` for `m` activation rows: each weight group loaded once serves four rows
    /// (a prompt's product, with no f32 copy of the weight).
    fn gemm(&self, xs: &[f32], m: usize, out: &mut [f32], pool: Pool) {
        let xs = &xs[..m * self.k];
        match &self.weights {
            Weights::Bytes(b) => self.gemm_layout::<Bytes>(b, None, xs, m, out, pool),
            Weights::Q4_1(b) => self.gemm_layout::<Nibbles4>(b, None, xs, m, out, pool),
            Weights::Q4K(b, mins) => self.gemm_layout::<NibblesK>(b, Some(mins), xs, m, out, pool),
            Weights::Q5_0(b) => self.gemm_layout::<Nibbles>(b, None, xs, m, out, pool),
            Weights::Words(b) => {
                let act = avx2::activation(xs, m, self.k);
                self.gemm_in(b, None, &act, m, out, pool, avx2::rows)
            }
        }
    }

    /// `gemm` over the tiles of layout `L`, with the VNNI kernel or else the AVX2 one.
    fn gemm_layout<L: Avx2Layout>(
        &self,
        blocks: &[L::Block],
        mins: Option<&[Mins]>,
        xs: &[f32],
        m: usize,
        out: &mut [f32],
        pool: Pool,
    ) where
        L::Block: Sync,
    {
        let act = activation::<L>(xs, m, self.k, pool);
        let kernel: RowsKernel<L::Block, Act> = if available() {
            kernel::rows::<L>
        } else {
            kernel_avx2::rows::<L>
        };
        self.gemm_in(blocks, mins, &act, m, out, pool, kernel)
    }

    #[allow(clippy::too_many_arguments)]
    fn gemm_in<B: Sync, A: Sync>(
        &self,
        blocks: &[B],
        mins: Option<&[Mins]>,
        act: &[A],
        m: usize,
        out: &mut [f32],
        pool: Pool,
        kernel: RowsKernel<B, A>,
    ) {
        let nb = self.k / QK;
        let tiles = blocks.len() / nb;
        let width = tiles * TILE;
        // The kernel adds its sums to the output; a width that is not whole tiles goes
        // through a padded buffer.
        let mut padded = if width == self.n {
            Vec::new()
        } else {
            vec![0f32; m * width]
        };
        let dst = Shared(if width == self.n {
            out.as_mut_ptr()
        } else {
            padded.as_mut_ptr()
        });
        let (tile_tasks, row_tasks) = (tiles.div_ceil(GEMM_TILES), m.div_ceil(GEMM_ROWS));
        // Tile-major task order: the tasks of one thread's chunk mostly share their weight
        // tiles (a pair is 2 × nb × 576 bytes, resident in L1/L2) and stream the rows.
        let run = |range: std::ops::Range<usize>| {
            for task in range {
                let (first, row) = (task / row_tasks * GEMM_TILES, task % row_tasks * GEMM_ROWS);
                let count = GEMM_TILES.min(tiles - first);
                let rows = GEMM_ROWS.min(m - row);
                // SAFETY: this task alone writes rows `row..row + rows`, columns of tiles
                // `first..first + count` of `padded`, which outlives the pool's call; the
                // kernel runs only where its layout was built (`runs_here()`, which
                // `Linear::load` checks; word tiles only where `avx2::available()`).
                unsafe {
                    kernel(
                        &blocks[first * nb..(first + count) * nb],
                        mins.map(|m| &m[first * nb..(first + count) * nb]),
                        nb,
                        &act[row * nb..(row + rows) * nb],
                        dst.at(row * width + first * TILE),
                        width,
                    )
                }
            }
        };
        let tasks = tile_tasks * row_tasks;
        match pool {
            Pool::Candle => candle_core::utils::barrier_pool().execute_chunked(tasks, run),
            Pool::Rayon => (0..tasks)
                .into_par_iter()
                .with_min_len(row_tasks.max(1))
                .for_each(|t| run(t..t + 1)),
        }
        for (y, p) in out.chunks_mut(self.n).zip(padded.chunks(width)) {
            for (y, p) in y.iter_mut().zip(&p[..self.n]) {
                *y += p;
            }
        }
    }

    fn gemv(&self, x: &[f32], out: &mut [f32]) {
        if !available() {
            // AVX2's kernel, and the embedder's word tiles: one row is a product of one row.
            return self.gemm(x, 1, out, Pool::Candle);
        }
        match &self.weights {
            Weights::Words(_) => unreachable!("word tiles are built only without VNNI"),
            Weights::Bytes(b) => self.gemv_in::<Bytes>(b, None, x, out),
            Weights::Q4_1(b) => self.gemv_in::<Nibbles4>(b, None, x, out),
            Weights::Q4K(b, mins) => self.gemv_in::<NibblesK>(b, Some(mins), x, out),
            Weights::Q5_0(b) => self.gemv_in::<Nibbles>(b, None, x, out),
        }
    }

    fn gemv_in<L: Layout>(
        &self,
        blocks: &[L::Block],
        mins: Option<&[Mins]>,
        x: &[f32],
        out: &mut [f32],
    ) where
        L::Block: Sync,
    {
        let nb = self.k / QK;
        let act = activation::<L>(x, 1, self.k, Pool::Candle);
        // Four tiles (64 rows) a task: four independent chains of `vpdpbusd` share each
        // broadcast of the activation. candle's barrier pool runs the tasks, as it runs
        // the K-quant products of the same forward pass: two pools would contend for the
        // cores.
        const TILES_PER_TASK: usize = 4;
        let tiles = blocks.len() / nb;
        let mut padded = vec![0f32; tiles * TILE];
        let dst = Shared(padded.as_mut_ptr());
        let tasks = tiles.div_ceil(TILES_PER_TASK);
        candle_core::utils::barrier_pool().execute_chunked(tasks, |range| {
            for task in range {
                let first = task * TILES_PER_TASK;
                let count = TILES_PER_TASK.min(tiles - first);
                // SAFETY: tasks write disjoint ranges of `padded` (tiles `first..first +
                // count`, 16 floats each), which outlives the pool's call. `TiledQ8` is
                // built only where `runs_here()` (`Linear::load` checks it), and this
                // VNNI kernel runs only where `available()` (`gemv`).
                unsafe {
                    let out = std::slice::from_raw_parts_mut(dst.at(first * TILE), count * TILE);
                    kernel::tiles::<L>(
                        &blocks[first * nb..(first + count) * nb],
                        mins.map(|m| &m[first * nb..(first + count) * nb]),
                        nb,
                        &act,
                        out,
                    )
                }
            }
        });
        for (y, p) in out.iter_mut().zip(&padded[..self.n]) {
            *y += p;
        }
    }

    /// The weights as f32 `(n, k)` (the conversion test's view of them).
    #[cfg(test)]
    fn dequantize(&self) -> Result<Tensor> {
        let mut out = Vec::with_capacity(self.n * self.k);
        for r in 0..self.n {
            self.append_row(r, &mut out);
        }
        Ok(Tensor::from_vec(out, (self.n, self.k), &Device::Cpu)?)
    }
}

/// Which thread pool runs a product's tasks: candle's for the LLM (its other operations
/// run there), rayon's for the embedder.
#[derive(Clone, Copy)]
enum Pool {
    Candle,
    Rayon,
}

/// A buffer shared by the pool's tasks (the output, each task its own tiles; the
/// activation, each task its own rows).
struct Shared<T>(*mut T);
// SAFETY: only used for disjoint writes while the owning buffer is alive (`gemm_in`,
// `gemv_in`, `quantize_rows`, `quantize_rows_q8k`).
unsafe impl<T> Sync for Shared<T> {}
impl<T> Shared<T> {
    fn at(&self, i: usize) -> *mut T {
        // SAFETY: callers stay within the buffer.
        unsafe { self.0.add(i) }
    }
}

/// Calls `f(i)` once for each `i` in `0..n`, on `pool`'s threads.
fn on_pool(pool: Pool, n: usize, f: impl Fn(usize) + Sync) {
    match pool {
        Pool::Candle => {
            candle_core::utils::barrier_pool().execute_chunked(n, |range| range.for_each(&f))
        }
        Pool::Rayon => (0..n).into_par_iter().for_each(&f),
    }
}

/// An activation block: bytes, scale, -128 × their sum (see `TileBlock`), and scale ×
/// sum, rounded to f16 (ggml's Q8_1 `s`, which a Q4_1 block's minimum multiplies) and
/// not (which a Q4_K block's minimum multiplies, as ggml's Q4_K × Q8_K product takes
/// the exact sums).
#[derive(Clone, Copy)]
struct Act {
    qs: [i8; QK],
    d: f32,
    correction: i32,
    scaled_sum: f32,
    scaled_sum_f32: f32,
}

impl Act {
    const ZERO: Act = Act {
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
fn quantize_rows(xs: &[f32], m: usize, k: usize, pool: Pool) -> Vec<Act> {
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
fn activation<L: Layout>(xs: &[f32], m: usize, k: usize, pool: Pool) -> Vec<Act> {
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

#[cfg(test)]
mod tests {
    use super::blocks::quantize_row;
    use super::*;
    use crate::llm::q5_0::q8_blocks;
    use candle_core::quantized::QMatMul;
    use candle_core::Module;

    /// `rows` activation rows of width `k`, the products' tests' input.
    pub(super) fn activation_rows(rows: usize, k: usize) -> Tensor {
        let x: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 31 % 17) as f32 - 8.0) / 4.0)
            .collect();
        Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap()
    }

    pub(super) fn matrix(n: usize, k: usize, seed: usize) -> Tensor {
        let w: Vec<f32> = (0..n * k)
            .map(|i| (((i + seed) * 7919 % 1001) as f32 / 500.0 - 1.0) * (1 + i % 5) as f32)
            .collect();
        Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap()
    }

    pub(super) fn max_gap(a: &Tensor, b: &Tensor) -> f32 {
        let d = (a - b).unwrap().abs().unwrap().flatten_all().unwrap();
        d.max(0).unwrap().to_scalar::<f32>().unwrap()
    }

    /// A product within 1e-3 of the reference's largest value (summation order apart).
    pub(super) fn assert_near_product(got: &Tensor, want: &Tensor, what: &str) {
        let flat = want.abs().unwrap().flatten_all().unwrap();
        let scale = flat.max(0).unwrap().to_scalar::<f32>().unwrap();
        let gap = max_gap(got, want);
        assert!(gap <= 1e-3 * scale.max(1.0), "{what}: {gap}");
    }

    thread_local! {
        /// Set on a test's thread to build and multiply tiles as a CPU with AVX2 but no
        /// AVX-512 VNNI does (layouts and kernels are chosen on the calling thread).
        pub(super) static AVX2_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Runs `check` with the kernels this CPU chooses, and on a VNNI CPU with AVX2 again
    /// as one without VNNI would: CI's VNNI machines test the AVX2 kernels too.
    fn on_each_kernel(check: impl Fn(&str)) {
        check(if available() { "VNNI" } else { "AVX2" });
        if available() && avx2::available() {
            AVX2_ONLY.with(|c| c.set(true));
            check("AVX2");
            AVX2_ONLY.with(|c| c.set(false));
        }
    }

    /// A 21-row matrix of `a` over a 16-row one of `b` (37 rows: two whole tiles and a
    /// partial one; width 96: three blocks) as tiles, and candle's dequantization of both.
    fn stacked(a: GgmlDType, b: GgmlDType, seed: usize) -> (TiledQ8, Tensor) {
        let qa = QTensor::quantize(&matrix(21, 96, seed), a).unwrap();
        let qb = QTensor::quantize(&matrix(16, 96, seed + 1), b).unwrap();
        let want = Tensor::cat(
            &[
                qa.dequantize(&Device::Cpu).unwrap(),
                qb.dequantize(&Device::Cpu).unwrap(),
            ],
            0,
        )
        .unwrap();
        (TiledQ8::from_parts(&[qa, qb]).unwrap(), want)
    }

    #[test]
    fn q5_0_q8_0_and_q4_1_convert_exactly_and_stack_by_rows() {
        on_each_kernel(|kernel| {
            let (tiled, want) = stacked(GgmlDType::Q5_0, GgmlDType::Q8_0, 1);
            assert!(matches!(tiled.weights, Weights::Bytes(_)));
            assert_eq!(
                max_gap(&tiled.dequantize().unwrap(), &want),
                0.0,
                "{kernel}"
            );
            // A matrix all of Q5_0 keeps its 5-bit integers.
            let (tiled, want) = stacked(GgmlDType::Q5_0, GgmlDType::Q5_0, 6);
            assert!(matches!(tiled.weights, Weights::Q5_0(_)));
            assert_eq!(
                max_gap(&tiled.dequantize().unwrap(), &want),
                0.0,
                "{kernel}"
            );
            // A matrix all of Q4_1 keeps its integers and minimums.
            let (tiled, want) = stacked(GgmlDType::Q4_1, GgmlDType::Q4_1, 4);
            assert!(matches!(tiled.weights, Weights::Q4_1(..)));
            assert!(
                max_gap(&tiled.dequantize().unwrap(), &want) <= 1e-6,
                "{kernel}"
            );
        });
    }

    /// 64 activation blocks: ties first (scale 1, so each x.5 rounds away from zero),
    /// then a block of zeros, then spread values.
    fn activations_with_ties() -> Vec<f32> {
        let mut x: Vec<f32> = (0..32 * 64)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 37.0)
            .collect();
        for (j, v) in x[..32].iter_mut().enumerate() {
            *v = if j == 0 { 127.0 } else { j as f32 - 16.5 };
        }
        x[32..64].fill(0.0);
        x
    }

    /// Both kernels' activations: VNNI's bytes and AVX2's words.
    #[test]
    fn activation_blocks_are_candles_q8_0_bit_for_bit() {
        let x = activations_with_ties();
        let blocks = quantize_row(&x);
        let candles = q8_blocks(&blocks);
        if runs_here() {
            for (i, (a, b)) in quantize_rows(&x, 64, 32, Pool::Rayon)
                .iter()
                .zip(candles)
                .enumerate()
            {
                assert_eq!(a.qs, b.qs, "block {i}");
                assert_eq!(a.d, b.d.to_f32(), "block {i}");
                let sum: i32 = b.qs.iter().map(|&q| q as i32).sum();
                assert_eq!(a.correction, -128 * sum, "block {i}");
            }
        }
        if avx2::available() {
            for (i, (a, b)) in avx2::activation(&x, 64, 32).iter().zip(candles).enumerate() {
                let want: Vec<i16> = b.qs.iter().map(|&q| q as i16).collect();
                assert_eq!(a.qs.to_vec(), want, "block {i}");
                assert_eq!(a.d, b.d.to_f32(), "block {i}");
            }
        }
        if !runs_here() {
            eprintln!("neither AVX-512 VNNI nor AVX2 here: no activation kernel is exercised");
        }
    }

    #[test]
    fn a_row_reads_back_as_candles_dequantization_bit_for_bit() {
        for dtype in [
            GgmlDType::Q8_0,
            GgmlDType::Q5_0,
            GgmlDType::Q4_1,
            GgmlDType::Q4K,
        ] {
            let (n, k) = (37, 512);
            let q = QTensor::quantize(&matrix(n, k, 5), dtype).unwrap();
            let want = q
                .dequantize(&Device::Cpu)
                .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
                .unwrap();
            let tiled = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
            // Q8_0 as AVX2's word tiles too (built on any CPU).
            let words = match &tiled.weights {
                Weights::Bytes(bytes) => Some(TiledQ8 {
                    n,
                    k,
                    weights: Weights::Words(blocks::word_tiles(bytes)),
                }),
                _ => None,
            };
            for tiled in std::iter::once(&tiled).chain(&words) {
                for r in [0, 15, 16, 36] {
                    let mut row = Vec::new();
                    tiled.append_row(r, &mut row);
                    assert_eq!(row, want[r * k..(r + 1) * k], "{dtype:?} row {r}");
                }
            }
        }
    }

    #[test]
    fn a_float_matrix_as_tiles_adds_its_product_to_the_output() {
        // Byte tiles where VNNI runs, word tiles on AVX2 alone.
        if !runs_here() {
            eprintln!("neither AVX-512 VNNI nor AVX2 here: no tile kernel is exercised");
            return;
        }
        let (n, k, m) = (48, 96, 5);
        let w: Vec<f32> = (0..n * k)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) / 10.0)
            .collect();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 13 % 19) as f32 - 9.0) / 5.0)
            .collect();
        let tiles = TiledQ8::from_f32(&w, n, k).unwrap();
        assert_eq!(tiles.outputs(), n);
        let mut out: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
        tiles.add_product(&x, m, &mut out);
        for r in 0..m {
            for c in 0..n {
                let terms = (0..k).map(|j| x[r * k + j] * w[c * k + j]);
                let magnitude: f32 = terms.clone().map(f32::abs).sum();
                let want = (r * n + c) as f32 + terms.sum::<f32>();
                let got = out[r * n + c];
                // Two 8-bit roundings: well under 1 % of the terms' magnitude.
                assert!(
                    (got - want).abs() <= 0.005 * magnitude,
                    "{r},{c}: {got} vs {want}"
                );
            }
        }
        assert!(TiledQ8::from_f32(&w, n, k + 1).is_err());
    }

    #[test]
    fn products_equal_candles_quantized_matmul() {
        if !runs_here() {
            // Never built on such a CPU (`Linear::load`); the conversion test still runs.
            eprintln!("neither AVX-512 VNNI nor AVX2 here: the tile kernels are not exercised");
            return;
        }
        on_each_kernel(|kernel| {
            for (dtype, n, k) in [
                (GgmlDType::Q8_0, 70, 160),
                (GgmlDType::Q5_0, 130, 96),
                (GgmlDType::Q4_1, 16, 64),
                (GgmlDType::Q4_1, 70, 160),
            ] {
                let q = QTensor::quantize(&matrix(n, k, 3), dtype).unwrap();
                let tiled = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
                // 1: the one-row kernel; 3, 6, 9: the multi-row kernel with partial groups.
                for rows in [1, 3, 6, 9] {
                    let x = activation_rows(rows, k);
                    let got = tiled.forward(&x).unwrap();
                    // Every type here converts exactly: candle's product over the same
                    // blocks (Q4_1 against candle's Q4_1 × Q8_1 kernel).
                    let reference = if exact_from(dtype) {
                        QTensor::quantize(&matrix(n, k, 3), dtype).unwrap()
                    } else {
                        let dense = q.dequantize(&Device::Cpu).unwrap();
                        QTensor::quantize(&dense, GgmlDType::Q8_0).unwrap()
                    };
                    let want = QMatMul::from_qtensor(reference)
                        .unwrap()
                        .forward(&x)
                        .unwrap();
                    assert_near_product(&got, &want, &format!("{kernel}: {dtype:?} rows {rows}"));
                }
            }
        });
    }
    #[test]
    fn q5_0_nibble_tiles_multiply_as_their_byte_conversion_bit_for_bit() {
        if !runs_here() {
            eprintln!("neither AVX-512 VNNI nor AVX2 here: the tile kernels are not exercised");
            return;
        }
        on_each_kernel(|kernel| {
            let (n, k) = (70, 160);
            let q = QTensor::quantize(&matrix(n, k, 8), GgmlDType::Q5_0).unwrap();
            let nibbles = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
            assert!(matches!(nibbles.weights, Weights::Q5_0(_)));
            let bytes = TiledQ8 {
                n,
                k,
                weights: Weights::Bytes(byte_tiles(std::slice::from_ref(&q), n, k).unwrap()),
            };
            for rows in [1, 3, 4, 9] {
                let x: Vec<f32> = (0..rows * k)
                    .map(|i| ((i * 29 % 23) as f32 - 11.0) / 3.0)
                    .collect();
                let x = Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap();
                let (a, b) = (nibbles.forward(&x).unwrap(), bytes.forward(&x).unwrap());
                let (a, b) = (
                    a.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    b.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                );
                assert_eq!(a, b, "{kernel}: rows {rows}");
            }
        });
    }
    #[test]
    fn q4_k_is_held_as_its_weights_and_multiplies_within_the_activations_rounding() {
        on_each_kernel(|kernel| {
            let (n, k) = (40, 512);
            let w = matrix(n, k, 9);
            let q = QTensor::quantize(&w, GgmlDType::Q4K).unwrap();
            let tiled = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
            assert!(matches!(tiled.weights, Weights::Q4K(..)));
            let exact = q.dequantize(&Device::Cpu).unwrap();
            assert_eq!(max_gap(&tiled.dequantize().unwrap(), &exact), 0.0);
            if !runs_here() {
                eprintln!("neither AVX-512 VNNI nor AVX2 here: the tile kernels are not exercised");
                return;
            }
            let weights = exact.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            for rows in [1, 5] {
                let x: Vec<f32> = (0..rows * k)
                    .map(|i| ((i * 31 % 17) as f32 - 8.0) / 4.0)
                    .collect();
                let got = tiled
                    .forward(&Tensor::from_slice(&x, (rows, k), &Device::Cpu).unwrap())
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                for r in 0..rows {
                    for c in 0..n {
                        let terms = (0..k).map(|j| x[r * k + j] * weights[c * k + j]);
                        let magnitude: f32 = terms.clone().map(f32::abs).sum();
                        let want: f32 = terms.sum();
                        // The activation's 8-bit rounding: well under 1 % of the magnitude.
                        let gap = (got[r * n + c] - want).abs();
                        assert!(
                            gap <= 0.005 * magnitude,
                            "{kernel}: rows {rows}, {r},{c}: {gap}"
                        );
                    }
                }
            }
        });
    }
}
