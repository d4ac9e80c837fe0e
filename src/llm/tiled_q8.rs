//! Q8_0 weights in tiles of 16 rows, multiplied by activation rows with AVX-512 VNNI: one
//! row at a time when decoding, four at a time for a prompt (each loaded weight group
//! serves the four).
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
//! Exactness: a Q8_0 block is copied, and a Q5_0 block is converted without loss (its
//! integers -16..15 times 8 fit a byte, its scale over 8 is kept as f32). A matrix that is
//! all Q4_1 keeps its blocks too: its integers 0..15 as unsigned bytes, its scale, and its
//! minimum in a second row of 16 per block (`mins`), added as minimum × (activation scale
//! × activation sum) as ggml's Q4_1 × Q8_1 product does. Other types are dequantized and
//! re-quantized to Q8_0 as candle does. Each activation block is quantized to bytes with
//! an f16 scale like ggml's, so the products are llama.cpp's up to the order of summation.

use anyhow::{bail, Result};
use candle_core::quantized::k_quants::{BlockQ8_0, GgmlType};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;
use rayon::prelude::*;

use super::q5_0::q8_blocks;

/// Rows per tile: one 512-bit register of 32-bit sums.
pub const TILE: usize = 16;
const QK: usize = 32;
/// Bytes of one row's block in a tile: 32 weights.
const GROUPS: usize = QK / 4;
/// A multi-row product's task: 2 tiles by 4 activation rows, 8 chains of `vpdpbusd` and
/// 8 float accumulators, which with the loaded groups fit the 32 vector registers.
const GEMM_TILES: usize = 2;
const GEMM_ROWS: usize = 4;

/// One block column of a tile: 16 row scales, then the 16 rows' 32 weights in 8 groups of
/// 64 bytes (group g holds bytes 4g..4g+4 of rows 0..16, row after row). Weights are
/// stored plus 128 (unsigned): `vpdpbusd` multiplies unsigned by signed bytes, and the
/// 128 × (activation block sum) this adds is subtracted once per block for all 16 rows.
#[derive(Clone)]
#[repr(C, align(64))]
struct TileBlock {
    d: [f32; TILE],
    qs: [[u8; 64]; GROUPS],
}

/// The 16 rows' minimums of one Q4_1 block column (beside its `TileBlock`).
#[derive(Clone)]
#[repr(C, align(64))]
struct Mins([f32; TILE]);

/// A weight matrix of `n` rows by `k` columns as tiles.
pub struct TiledQ8 {
    n: usize,
    k: usize,
    /// Tile after tile; within a tile, its `k / 32` blocks in order.
    blocks: Vec<TileBlock>,
    /// Q4_1 only: each block's minimums, in the order of `blocks` (its weights are then
    /// stored unshifted, 0..15).
    mins: Option<Vec<Mins>>,
}

/// True where the kernel can run: x86-64 with AVX-512 F/BW/VL and VNNI.
pub fn available() -> bool {
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

/// Whether a weight of this type converts without loss (Q4_1 when the whole matrix is
/// Q4_1: `TiledQ8::from_parts`).
pub fn exact_from(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::Q8_0 | GgmlDType::Q5_0 | GgmlDType::Q4_1)
}

/// How a matrix of these parts' types is held: "Q4_1 tiles" when every part is Q4_1,
/// else "Q8_0 tiles".
pub fn held_as(dtypes: &[GgmlDType]) -> &'static str {
    if dtypes.iter().all(|d| *d == GgmlDType::Q4_1) {
        "Q4_1 tiles"
    } else {
        "Q8_0 tiles"
    }
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
        let nb = k / QK;
        let q4_1 = parts.iter().all(|p| p.dtype() == GgmlDType::Q4_1);
        // Unshifted Q4_1 integers (0..15) are already the unsigned operand.
        let shift = if q4_1 { 0 } else { 0x80 };
        let zero = TileBlock {
            d: [0.0; TILE],
            qs: [[shift; 64]; GROUPS],
        };
        let mut blocks = vec![zero; n.div_ceil(TILE) * nb];
        let mut mins = q4_1.then(|| vec![Mins([0.0; TILE]); blocks.len()]);
        let mut row0 = 0;
        for p in parts {
            let rows = p.shape().dims2()?.0;
            let data = p.data()?;
            if let Some(mins) = &mut mins {
                let row_bytes = nb * p.dtype().type_size();
                for r in 0..rows {
                    let row = row0 + r;
                    let blocks_of_row =
                        data[r * row_bytes..][..row_bytes].chunks(p.dtype().type_size());
                    for (b, raw) in blocks_of_row.enumerate() {
                        let (d, m, q) = q4_1_block(raw);
                        let at = row / TILE * nb + b;
                        let i = row % TILE;
                        blocks[at].d[i] = d;
                        mins[at].0[i] = m;
                        for (j, v) in q.iter().enumerate() {
                            blocks[at].qs[j / 4][i * 4 + j % 4] = *v;
                        }
                    }
                }
                row0 += rows;
                continue;
            }
            let dense = if matches!(p.dtype(), GgmlDType::Q8_0 | GgmlDType::Q5_0) {
                None
            } else {
                Some(
                    p.dequantize(&Device::Cpu)?
                        .flatten_all()?
                        .to_vec1::<f32>()?,
                )
            };
            let row_bytes = nb * p.dtype().type_size();
            for r in 0..rows {
                let cells: Vec<(f32, [i8; QK])> = match &dense {
                    Some(w) => q8_blocks(&quantize_row(&w[r * k..][..k]))
                        .iter()
                        .map(|b| (b.d.to_f32(), b.qs))
                        .collect(),
                    None => data[r * row_bytes..][..row_bytes]
                        .chunks(p.dtype().type_size())
                        .map(|b| match p.dtype() {
                            GgmlDType::Q8_0 => q8_0_block(b),
                            _ => q5_0_block(b),
                        })
                        .collect(),
                };
                let row = row0 + r;
                for (b, (d, q)) in cells.into_iter().enumerate() {
                    let tb = &mut blocks[row / TILE * nb + b];
                    let i = row % TILE;
                    tb.d[i] = d;
                    for (j, v) in q.iter().enumerate() {
                        tb.qs[j / 4][i * 4 + j % 4] = (*v as u8) ^ 0x80;
                    }
                }
            }
            row0 += rows;
        }
        Ok(TiledQ8 { n, k, blocks, mins })
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
    /// blocks as ggml quantizes a weight (the embedder's int8 path).
    pub fn from_f32(w: &[f32], n: usize, k: usize) -> Result<TiledQ8> {
        if w.len() != n * k {
            bail!("{} values for a {n}×{k} matrix", w.len());
        }
        let t = Tensor::from_slice(w, (n, k), &Device::Cpu)?;
        TiledQ8::from_parts(&[QTensor::quantize(&t, GgmlDType::Q8_0)?])
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
            let tb = &self.blocks[at];
            let d = tb.d[i];
            match &self.mins {
                Some(mins) => {
                    let m = mins[at].0[i];
                    out.extend((0..QK).map(|j| tb.qs[j / 4][i * 4 + j % 4] as f32 * d + m));
                }
                None => out.extend(
                    (0..QK).map(|j| ((tb.qs[j / 4][i * 4 + j % 4] ^ 0x80) as i8) as f32 * d),
                ),
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
        let nb = self.k / QK;
        let act = quantize_rows(&xs[..m * self.k], m, self.k);
        let tiles = self.blocks.len() / nb;
        let width = tiles * TILE;
        // The kernel adds its sums to the output; a width that is not whole tiles goes
        // through a padded buffer.
        let mut padded = if width == self.n {
            Vec::new()
        } else {
            vec![0f32; m * width]
        };
        let dst = SharedOut(if width == self.n {
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
                // kernel runs only where `available()` (`Linear::load` checks it).
                unsafe {
                    kernel::rows(
                        &self.blocks[first * nb..(first + count) * nb],
                        self.mins
                            .as_ref()
                            .map(|m| &m[first * nb..(first + count) * nb]),
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
        let nb = self.k / QK;
        let act = quantize_rows(x, 1, self.k);
        // Four tiles (64 rows) a task: four independent chains of `vpdpbusd` share each
        // broadcast of the activation. candle's barrier pool runs the tasks, as it runs
        // the K-quant products of the same forward pass: two pools would contend for the
        // cores.
        const TILES_PER_TASK: usize = 4;
        let tiles = self.blocks.len() / nb;
        let mut padded = vec![0f32; tiles * TILE];
        let dst = SharedOut(padded.as_mut_ptr());
        let tasks = tiles.div_ceil(TILES_PER_TASK);
        candle_core::utils::barrier_pool().execute_chunked(tasks, |range| {
            for task in range {
                let first = task * TILES_PER_TASK;
                let count = TILES_PER_TASK.min(tiles - first);
                let blocks = &self.blocks[first * nb..(first + count) * nb];
                let mins = self
                    .mins
                    .as_ref()
                    .map(|m| &m[first * nb..(first + count) * nb]);
                // SAFETY: tasks write disjoint ranges of `padded` (tiles `first..first +
                // count`, 16 floats each), which outlives the pool's call. `TiledQ8` is
                // built only where `available()` (`Linear::load` checks it).
                unsafe {
                    let out = std::slice::from_raw_parts_mut(dst.at(first * TILE), count * TILE);
                    kernel::tiles(blocks, mins, nb, &act, out)
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
        let nb = self.k / QK;
        let mut out = vec![0f32; self.blocks.len() / nb * TILE * self.k];
        out.par_chunks_mut(TILE * self.k)
            .zip(self.blocks.par_chunks(nb))
            .for_each(|(dst, tile)| {
                for (b, tb) in tile.iter().enumerate() {
                    for i in 0..TILE {
                        let row = &mut dst[i * self.k + b * QK..][..QK];
                        for (j, w) in row.iter_mut().enumerate() {
                            let q = (tb.qs[j / 4][i * 4 + j % 4] ^ 0x80) as i8;
                            *w = q as f32 * tb.d[i];
                        }
                    }
                }
            });
        if let Some(mins) = &self.mins {
            // Unshifted integers and a minimum: d × q + m.
            out.par_chunks_mut(TILE * self.k)
                .zip(self.blocks.par_chunks(nb).zip(mins.par_chunks(nb)))
                .for_each(|(dst, (tile, mins))| {
                    for (b, (tb, m)) in tile.iter().zip(mins).enumerate() {
                        for i in 0..TILE {
                            let row = &mut dst[i * self.k + b * QK..][..QK];
                            for (j, w) in row.iter_mut().enumerate() {
                                *w = tb.qs[j / 4][i * 4 + j % 4] as f32 * tb.d[i] + m.0[i];
                            }
                        }
                    }
                });
        }
        out.truncate(self.n * self.k);
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

/// The output buffer, shared by the pool's tasks (each writes its own tiles).
struct SharedOut(*mut f32);
// SAFETY: only used for disjoint writes while the owning buffer is alive (`gemv`).
unsafe impl Sync for SharedOut {}
impl SharedOut {
    fn at(&self, i: usize) -> *mut f32 {
        // SAFETY: callers stay within the buffer.
        unsafe { self.0.add(i) }
    }
}

/// An activation block: bytes, scale, -128 × their sum (see `TileBlock`), and scale ×
/// sum rounded to f16 (ggml's Q8_1 `s`, which a Q4_1 block's minimum multiplies).
#[derive(Clone, Copy)]
struct Act {
    qs: [i8; QK],
    d: f32,
    correction: i32,
    scaled_sum: f32,
}

impl Act {
    const ZERO: Act = Act {
        qs: [0; QK],
        d: 0.0,
        correction: 0,
        scaled_sum: 0.0,
    };
}

/// `m` rows of width `k` as activation blocks, row after row, quantized as candle's
/// `BlockQ8_0::from_float` does (scale max|x| / 127 kept as f16, bytes rounded half away
/// from zero with the unrounded scale) but 32 values at a time (`kernel::quantize`):
/// candle's loop made a prompt's product spend a sixth of its time quantizing.
fn quantize_rows(xs: &[f32], m: usize, k: usize) -> Vec<Act> {
    let nb = k / QK;
    let mut act = vec![Act::ZERO; m * nb];
    let row = |(blocks, x): (&mut [Act], &[f32])| {
        for (a, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
            // SAFETY: tiles exist, and this runs, only where `available()`.
            unsafe { kernel::quantize(x, a) }
        }
    };
    if m == 1 {
        // One token while decoding: not worth a parallel call.
        row((&mut act, xs));
    } else {
        act.par_chunks_mut(nb).zip(xs.par_chunks(k)).for_each(row);
    }
    act
}

/// `x` (whole blocks) as Q8_0, quantized by candle as ggml quantizes an activation for a
/// Q8_0 product: scale max|x| / 127 kept as f16, bytes rounded with the unrounded scale.
fn quantize_row(x: &[f32]) -> Vec<BlockQ8_0> {
    let mut ys = vec![BlockQ8_0::zeros(); x.len() / QK];
    BlockQ8_0::from_float(x, &mut ys);
    ys
}

/// A Q8_0 block: f16 scale, 32 signed bytes.
fn q8_0_block(b: &[u8]) -> (f32, [i8; QK]) {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let mut qs = [0i8; QK];
    for (q, v) in qs.iter_mut().zip(&b[2..2 + QK]) {
        *q = *v as i8;
    }
    (d, qs)
}

/// A Q4_1 block (f16 scale, f16 minimum, 16 bytes of nibbles: element j is the low
/// nibble of byte j for j < 16, the high nibble of byte j - 16 after): its integers 0..15.
fn q4_1_block(b: &[u8]) -> (f32, f32, [u8; QK]) {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let m = f16::from_le_bytes([b[2], b[3]]).to_f32();
    let nibbles = &b[4..4 + QK / 2];
    let mut qs = [0u8; QK];
    for (j, q) in qs.iter_mut().enumerate() {
        *q = if j < QK / 2 {
            nibbles[j] & 0x0f
        } else {
            nibbles[j - QK / 2] >> 4
        };
    }
    (d, m, qs)
}

/// A Q5_0 block (f16 scale, 32 high bits, 16 bytes of nibbles: element j is the low
/// nibble of byte j for j < 16, the high nibble of byte j - 16 after) as Q8_0 exactly:
/// integers -16..15 times 8 and the scale over 8.
fn q5_0_block(b: &[u8]) -> (f32, [i8; QK]) {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    let nibbles = &b[6..6 + QK / 2];
    let mut qs = [0i8; QK];
    for (j, q) in qs.iter_mut().enumerate() {
        let low = if j < QK / 2 {
            nibbles[j] & 0x0f
        } else {
            nibbles[j - QK / 2] >> 4
        };
        let v = (low | (((qh >> j) & 1) as u8) << 4) as i32 - 16;
        *q = (v * 8) as i8;
    }
    (d / 8.0, qs)
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::*;

    use half::f16;

    use super::{Act, Mins, TileBlock, GROUPS, TILE};

    /// Up to four tiles (`tiles` holds whole tiles of `nb` blocks, `mins` their Q4_1
    /// minimums if any) against the activation, 16 outputs a tile into `out`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(super) unsafe fn tiles(
        tiles: &[TileBlock],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        match (tiles.len() / nb, mins) {
            (4, None) => run::<4, false>(tiles, &[], nb, act, out),
            (3, None) => run::<3, false>(tiles, &[], nb, act, out),
            (2, None) => run::<2, false>(tiles, &[], nb, act, out),
            (_, None) => run::<1, false>(tiles, &[], nb, act, out),
            (4, Some(m)) => run::<4, true>(tiles, m, nb, act, out),
            (3, Some(m)) => run::<3, true>(tiles, m, nb, act, out),
            (2, Some(m)) => run::<2, true>(tiles, m, nb, act, out),
            (_, Some(m)) => run::<1, true>(tiles, m, nb, act, out),
        }
    }

    /// `MIN`: Q4_1 tiles (unshifted integers, no correction; the minimums times the
    /// activation's scaled sum added per block).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn run<const R: usize, const MIN: bool>(
        tiles: &[TileBlock],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        let mut acc = [_mm512_setzero_ps(); R];
        for (b, a) in act.iter().enumerate() {
            let start = if MIN { 0 } else { a.correction };
            let mut sums = [_mm512_set1_epi32(start); R];
            let groups = a.qs.as_ptr() as *const i32;
            for g in 0..GROUPS {
                let y = _mm512_set1_epi32(groups.add(g).read_unaligned());
                for (t, s) in sums.iter_mut().enumerate() {
                    let w = _mm512_load_si512(tiles[t * nb + b].qs[g].as_ptr() as *const _);
                    *s = _mm512_dpbusd_epi32(*s, w, y);
                }
            }
            let dy = _mm512_set1_ps(a.d);
            for (t, (acc, s)) in acc.iter_mut().zip(sums).enumerate() {
                let d = _mm512_load_ps(tiles[t * nb + b].d.as_ptr());
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, dy), *acc);
                if MIN {
                    let m = _mm512_load_ps(mins[t * nb + b].0.as_ptr());
                    *acc = _mm512_fmadd_ps(m, _mm512_set1_ps(a.scaled_sum), *acc);
                }
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            _mm512_storeu_ps(out[t * TILE..].as_mut_ptr(), *acc);
        }
    }

    /// One or two tiles against one to four activation rows (`act` holds whole rows of
    /// `nb` blocks); row r's 16 outputs a tile go to `out + r·stride + 16t`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(super) unsafe fn rows(
        tiles: &[TileBlock],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        let m = mins.unwrap_or(&[]);
        macro_rules! pick {
            ($min:literal) => {
                match (tiles.len() / nb, act.len() / nb) {
                    (2, 4) => run_rows::<2, 4, $min>(tiles, m, nb, act, out, stride),
                    (2, 3) => run_rows::<2, 3, $min>(tiles, m, nb, act, out, stride),
                    (2, 2) => run_rows::<2, 2, $min>(tiles, m, nb, act, out, stride),
                    (2, _) => run_rows::<2, 1, $min>(tiles, m, nb, act, out, stride),
                    (_, 4) => run_rows::<1, 4, $min>(tiles, m, nb, act, out, stride),
                    (_, 3) => run_rows::<1, 3, $min>(tiles, m, nb, act, out, stride),
                    (_, 2) => run_rows::<1, 2, $min>(tiles, m, nb, act, out, stride),
                    _ => run_rows::<1, 1, $min>(tiles, m, nb, act, out, stride),
                }
            };
        }
        if mins.is_some() {
            pick!(true)
        } else {
            pick!(false)
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn run_rows<const T: usize, const R: usize, const MIN: bool>(
        tiles: &[TileBlock],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); R]; T];
        for b in 0..nb {
            let mut sums = [[_mm512_setzero_si512(); R]; T];
            if !MIN {
                for r in 0..R {
                    for s in sums.iter_mut() {
                        s[r] = _mm512_set1_epi32(act[r * nb + b].correction);
                    }
                }
            }
            for g in 0..GROUPS {
                let w: [__m512i; T] = std::array::from_fn(|t| {
                    _mm512_load_si512(tiles[t * nb + b].qs[g].as_ptr() as *const _)
                });
                for r in 0..R {
                    let groups = act[r * nb + b].qs.as_ptr() as *const i32;
                    let y = _mm512_set1_epi32(groups.add(g).read_unaligned());
                    for (s, w) in sums.iter_mut().zip(&w) {
                        s[r] = _mm512_dpbusd_epi32(s[r], *w, y);
                    }
                }
            }
            for (t, (acc, sums)) in acc.iter_mut().zip(&sums).enumerate() {
                let d = _mm512_load_ps(tiles[t * nb + b].d.as_ptr());
                for r in 0..R {
                    let a = &act[r * nb + b];
                    let dy = _mm512_set1_ps(a.d);
                    acc[r] =
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r]), _mm512_mul_ps(d, dy), acc[r]);
                    if MIN {
                        let m = _mm512_load_ps(mins[t * nb + b].0.as_ptr());
                        acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(a.scaled_sum), acc[r]);
                    }
                }
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            for (r, acc) in acc.iter().enumerate() {
                let at = out.add(r * stride + t * TILE);
                _mm512_storeu_ps(at, _mm512_add_ps(_mm512_loadu_ps(at), *acc));
            }
        }
    }

    /// 32 values as an activation block (`quantize_rows`). The rounding is LLVM's exact
    /// lowering of `f32::round`: add the largest float below one half with the value's
    /// sign, then truncate.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(super) unsafe fn quantize(x: &[f32], a: &mut Act) {
        const HALF_BELOW: f32 = 0.499_999_97;
        let lo = _mm512_loadu_ps(x.as_ptr());
        let hi = _mm512_loadu_ps(x.as_ptr().add(TILE));
        let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
        let d = amax / 127.0;
        let id = _mm512_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let sign = _mm512_set1_epi32(i32::MIN);
        let half = _mm512_set1_ps(HALF_BELOW);
        let round = |v: __m512| {
            let y = _mm512_mul_ps(v, id);
            let h = _mm512_or_si512(
                _mm512_and_si512(_mm512_castps_si512(y), sign),
                _mm512_castps_si512(half),
            );
            _mm512_cvttps_epi32(_mm512_add_ps(y, _mm512_castsi512_ps(h)))
        };
        let (qlo, qhi) = (round(lo), round(hi));
        _mm_storeu_si128(a.qs.as_mut_ptr() as *mut __m128i, _mm512_cvtepi32_epi8(qlo));
        _mm_storeu_si128(
            a.qs.as_mut_ptr().add(TILE) as *mut __m128i,
            _mm512_cvtepi32_epi8(qhi),
        );
        let sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qlo, qhi));
        a.d = f16::from_f32(d).to_f32();
        a.correction = -128 * sum;
        a.scaled_sum = f16::from_f32(a.d * sum as f32).to_f32();
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod kernel {
    use super::{Act, Mins, TileBlock};

    pub(super) unsafe fn tiles(
        _: &[TileBlock],
        _: Option<&[Mins]>,
        _: usize,
        _: &[Act],
        _: &mut [f32],
    ) {
        unreachable!("TiledQ8 is built only where `available()`")
    }

    pub(super) unsafe fn rows(
        _: &[TileBlock],
        _: Option<&[Mins]>,
        _: usize,
        _: &[Act],
        _: *mut f32,
        _: usize,
    ) {
        unreachable!("TiledQ8 is built only where `available()`")
    }

    pub(super) unsafe fn quantize(_: &[f32], _: &mut Act) {
        unreachable!("TiledQ8 is built only where `available()`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QMatMul;
    use candle_core::Module;

    fn matrix(n: usize, k: usize, seed: usize) -> Tensor {
        let w: Vec<f32> = (0..n * k)
            .map(|i| (((i + seed) * 7919 % 1001) as f32 / 500.0 - 1.0) * (1 + i % 5) as f32)
            .collect();
        Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap()
    }

    fn max_gap(a: &Tensor, b: &Tensor) -> f32 {
        let d = (a - b).unwrap().abs().unwrap().flatten_all().unwrap();
        d.max(0).unwrap().to_scalar::<f32>().unwrap()
    }

    #[test]
    fn q5_0_q8_0_and_q4_1_convert_exactly_and_stack_by_rows() {
        // 37 rows: two whole tiles and a partial one; width 96: three blocks.
        let (a, b) = (matrix(21, 96, 1), matrix(16, 96, 2));
        let qa = QTensor::quantize(&a, GgmlDType::Q5_0).unwrap();
        let qb = QTensor::quantize(&b, GgmlDType::Q8_0).unwrap();
        let want = Tensor::cat(
            &[
                qa.dequantize(&Device::Cpu).unwrap(),
                qb.dequantize(&Device::Cpu).unwrap(),
            ],
            0,
        )
        .unwrap();
        let tiled = TiledQ8::from_parts(&[qa, qb]).unwrap();
        assert_eq!(max_gap(&tiled.dequantize().unwrap(), &want), 0.0);
        // A matrix all of Q4_1 keeps its integers and minimums.
        let (c, d) = (matrix(21, 96, 4), matrix(16, 96, 5));
        let qc = QTensor::quantize(&c, GgmlDType::Q4_1).unwrap();
        let qd = QTensor::quantize(&d, GgmlDType::Q4_1).unwrap();
        let want = Tensor::cat(
            &[
                qc.dequantize(&Device::Cpu).unwrap(),
                qd.dequantize(&Device::Cpu).unwrap(),
            ],
            0,
        )
        .unwrap();
        let tiled = TiledQ8::from_parts(&[qc, qd]).unwrap();
        assert!(tiled.mins.is_some());
        assert!(max_gap(&tiled.dequantize().unwrap(), &want) <= 1e-6);
    }

    #[test]
    fn activation_blocks_are_candles_q8_0_bit_for_bit() {
        if !available() {
            eprintln!("no AVX-512 VNNI here: the tile kernel is not exercised");
            return;
        }
        let mut x: Vec<f32> = (0..32 * 64)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 37.0)
            .collect();
        // Ties: scale 1, so each x.5 rounds away from zero; then a block of zeros.
        for (j, v) in x[..32].iter_mut().enumerate() {
            *v = if j == 0 { 127.0 } else { j as f32 - 16.5 };
        }
        x[32..64].fill(0.0);
        let ours = quantize_rows(&x, 64, 32);
        let candles = quantize_row(&x);
        for (i, (a, b)) in ours.iter().zip(q8_blocks(&candles)).enumerate() {
            assert_eq!(a.qs, b.qs, "block {i}");
            assert_eq!(a.d, b.d.to_f32(), "block {i}");
            let sum: i32 = b.qs.iter().map(|&q| q as i32).sum();
            assert_eq!(a.correction, -128 * sum, "block {i}");
        }
    }

    #[test]
    fn a_row_reads_back_as_candles_dequantization_bit_for_bit() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q5_0, GgmlDType::Q4_1] {
            let (n, k) = (37, 96);
            let q = QTensor::quantize(&matrix(n, k, 5), dtype).unwrap();
            let want = q
                .dequantize(&Device::Cpu)
                .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
                .unwrap();
            let tiled = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
            for r in [0, 15, 16, 36] {
                let mut row = Vec::new();
                tiled.append_row(r, &mut row);
                assert_eq!(row, want[r * k..(r + 1) * k], "{dtype:?} row {r}");
            }
        }
    }

    #[test]
    fn a_float_matrix_as_tiles_adds_its_product_to_the_output() {
        if !available() {
            eprintln!("no AVX-512 VNNI here: the tile kernel is not exercised");
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
        if !available() {
            // Never built on such a CPU (`Linear::load`); the conversion test still runs.
            eprintln!("no AVX-512 VNNI here: the tile kernel is not exercised");
            return;
        }
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
                let x: Vec<f32> = (0..rows * k)
                    .map(|i| ((i * 31 % 17) as f32 - 8.0) / 4.0)
                    .collect();
                let x = Tensor::from_vec(x, (rows, k), &Device::Cpu).unwrap();
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
                let flat = want.abs().unwrap().flatten_all().unwrap();
                let scale = flat.max(0).unwrap().to_scalar::<f32>().unwrap();
                let gap = max_gap(&got, &want);
                assert!(gap <= 1e-3 * scale.max(1.0), "{dtype:?} rows {rows}: {gap}");
            }
        }
    }
}
