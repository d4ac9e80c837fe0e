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
//! A Q6_K block's larger half is held exactly, its other half rounded to that step
//! (`blocks::q6k_block`). Other types are dequantized and re-quantized to Q8_0 as candle
//! does. Each activation
//! block is quantized to bytes as ggml quantizes it for that weight type (per 32 values
//! with an f16 scale, per 256 with an f32 one for Q4_K), so the products are llama.cpp's
//! up to the order of summation.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rayon::prelude::*;

mod activation;
mod avx2;
mod blocks;
mod kernel;
mod kernel_avx2;
use activation::{activation, Act};
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

/// Whether a layer of this type that multiplies prompts is held as Q8_0 tiles although
/// candle has a kernel for it: Q6_K (half of Qwen2.5's `ffn_down`), whose prompts
/// candle's path dequantizes to f32 for every call (17 MB a layer) before an f32 GEMM.
/// Not exact: each block's larger half is held as the file has it, the other rounded to
/// that half's step over 4 (`blocks::q6k_block`); measured against llama.cpp in
/// `tests/reference.rs` (docs/PERFORMANCE.md).
pub fn requantized_for_prompts(dtype: GgmlDType) -> bool {
    dtype == GgmlDType::Q6K
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
// `gemv_in`, `activation::quantize_rows`, `activation::quantize_rows_q8k`).
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

#[cfg(test)]
mod tests;
