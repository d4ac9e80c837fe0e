//! The tile layouts and the conversions into them: GGUF blocks (Q8_0, Q5_0, Q4_1, Q6_K,
//! or any type re-quantized as candle does) rearranged so that 16 rows' bytes for one
//! `vpdpbusd` lie together.

use anyhow::Result;
use candle_core::quantized::k_quants::{BlockQ8_0, GgmlType};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;
use half::f16;

use super::{GROUPS, QK, TILE};
use crate::llm::q5_0::q8_blocks;

/// One block column of a tile: 16 row scales, then the 16 rows' 32 weights in 8 groups of
/// 64 bytes (group g holds bytes 4g..4g+4 of rows 0..16, row after row). Weights are
/// stored plus 128 (unsigned): `vpdpbusd` multiplies unsigned by signed bytes, and the
/// 128 × (activation block sum) this adds is subtracted once per block for all 16 rows.
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct TileBlock {
    pub(super) d: [f32; TILE],
    pub(super) qs: [[u8; 64]; GROUPS],
}

/// One block column of a Q5_0 tile: the 16 rows' scales, then their integers plus 16
/// (0..31) as `TileBlock` orders bytes: group h in the low nibbles of `low[h]`, group h + 4
/// in its high nibbles, and each group's fifth bits in `high[g]` (`fifth_bit`), a mask
/// that adds 16 where set. 384 bytes for what `TileBlock` holds in 576.
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Tile5Block {
    pub(super) d: [f32; TILE],
    pub(super) low: [[u8; 64]; GROUPS / 2],
    pub(super) high: [u64; GROUPS],
}

/// One block column of a Q4_1 tile: the 16 rows' scales and minimums as the file holds
/// them (f16), then their integers (0..15) as nibbles laid out as `Tile5Block::low`. 320
/// bytes for 512 weights, 5 bits a weight as in the file (`TileBlock` holds them in 576).
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Tile4hBlock {
    pub(super) d: [f16; TILE],
    pub(super) m: [f16; TILE],
    pub(super) low: [[u8; 64]; GROUPS / 2],
}

/// One block column of a Q4_K tile: the 16 rows' sub-block scales, then their integers
/// (0..15) as nibbles laid out as `Tile5Block::low`; the minimums are beside it (`Mins`).
/// Scales and minimums are f32: a sub-block's 6-bit scale times its super-block's f16
/// scale does not always fit an f16.
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Tile4Block {
    pub(super) d: [f32; TILE],
    pub(super) low: [[u8; 64]; GROUPS / 2],
}

/// One block column of a tile for AVX2 (`avx2.rs`): the 16 rows' scales, then their 32
/// Q8_0 integers as 16-bit words in 16 groups of 64 bytes (group g holds weights 2g and
/// 2g + 1 of rows 0..16, row after row), the pairs `vpmaddwd` multiplies by an
/// activation pair and adds. Twice `TileBlock`'s bytes: AVX2's byte product
/// (`vpmaddubsw`) saturates on two bytes of full range, and 7-bit weights moved the
/// embeddings too far (cosine 0.9988 to sentence-transformers).
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct TileWordBlock {
    pub(super) d: [f32; TILE],
    pub(super) qs: [[i16; 2 * TILE]; QK / 2],
}

/// The 16 rows' minimums of one Q4_K block column (beside its `Tile4Block`).
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Mins(pub(super) [f32; TILE]);

/// Row `i`'s weight `j` of a byte tile block, as the signed integer it stands for.
pub(super) fn byte_weight(tb: &TileBlock, i: usize, j: usize) -> i8 {
    (tb.qs[j / 4][i * 4 + j % 4] ^ 0x80) as i8
}

/// Row `i`'s weight `j` of a Q5_0 tile block: its integer, -16..15 (`byte_mask`: the
/// fifth bits' layout, `fifth_bit`).
pub(super) fn nibble_weight(tb: &Tile5Block, i: usize, j: usize, byte_mask: bool) -> i32 {
    let high = (tb.high[j / 4] >> fifth_bit(i, j, byte_mask)) & 1;
    (low_nibble(&tb.low, i, j) as i32 | (high as i32) << 4) - 16
}

/// Where row `i`'s weight `j` sits in its group's fifth-bit mask. AVX-512 adds 16 under
/// a byte mask: bit 4i + j % 4, the byte's place in the group (`byte_mask`). AVX2
/// (`kernel_avx2::fifth_bits`) broadcasts the mask to four 64-bit lanes and shifts each
/// lane into place: lane l of half a tile holds rows 2l and 2l + 1 of the half, 8 bytes
/// B, whose bits sit at 8B + 4 + l in the first half (shifted right by l) and 8B + l in
/// the second (shifted left by 4 − l). One shift and one `and` then leave 16 or 0 in
/// every byte, where a byte mask takes a shuffle, a compare and three more.
pub(super) fn fifth_bit(i: usize, j: usize, byte_mask: bool) -> u32 {
    if byte_mask {
        return (i * 4 + j % 4) as u32;
    }
    let (half, r) = (i / (TILE / 2), i % (TILE / 2));
    let (lane, byte) = (r / 2, (r % 2) * 4 + j % 4);
    (8 * byte + lane + if half == 0 { 4 } else { 0 }) as u32
}

/// Row `i`'s weight `j` of nibble tiles: the low four bits of its integer.
pub(super) fn low_nibble(low: &[[u8; 64]; GROUPS / 2], i: usize, j: usize) -> u8 {
    let (g, at) = (j / 4, i * 4 + j % 4);
    let byte = low[g % (GROUPS / 2)][at];
    if g < GROUPS / 2 {
        byte & 0x0f
    } else {
        byte >> 4
    }
}

/// Puts `v` (0..15) as row `i`'s weight `j` into nibble tiles.
fn set_low_nibble(low: &mut [[u8; 64]; GROUPS / 2], i: usize, j: usize, v: u8) {
    let (g, at) = (j / 4, i * 4 + j % 4);
    let shift = if g < GROUPS / 2 { 0 } else { 4 };
    low[g % (GROUPS / 2)][at] |= (v & 0x0f) << shift;
}

/// Q4_1 parts as nibble tiles of their integers (0..15) with their blocks' f16 scales
/// and minimums.
pub(super) fn q4_1_tiles(parts: &[QTensor], n: usize, k: usize) -> Result<Vec<Tile4hBlock>> {
    let nb = k / QK;
    let zero = Tile4hBlock {
        d: [f16::ZERO; TILE],
        m: [f16::ZERO; TILE],
        low: [[0; 64]; GROUPS / 2],
    };
    let mut blocks = vec![zero; n.div_ceil(TILE) * nb];
    let mut row = 0;
    for p in parts {
        let data = p.data()?;
        let size = p.dtype().type_size();
        for raw_row in data.chunks(nb * size) {
            for (b, raw) in raw_row.chunks(size).enumerate() {
                let (d, m, q) = q4_1_block(raw);
                let tb = &mut blocks[row / TILE * nb + b];
                let i = row % TILE;
                // From f16 and back: exact.
                tb.d[i] = f16::from_f32(d);
                tb.m[i] = f16::from_f32(m);
                for (j, v) in q.iter().enumerate() {
                    set_low_nibble(&mut tb.low, i, j, *v);
                }
            }
            row += 1;
        }
    }
    Ok(blocks)
}

/// Q4_K parts as nibble tiles of their integers (0..15), and the minimums of their
/// blocks of 32 (a super-block's eight sub-blocks, each with its 6-bit scale and minimum
/// times the super-block's: exactly what candle's dequantization computes).
pub(super) fn q4k_tiles(
    parts: &[QTensor],
    n: usize,
    k: usize,
) -> Result<(Vec<Tile4Block>, Vec<Mins>)> {
    let nb = k / QK;
    let zero = Tile4Block {
        d: [0.0; TILE],
        low: [[0; 64]; GROUPS / 2],
    };
    let mut blocks = vec![zero; n.div_ceil(TILE) * nb];
    let mut mins = vec![Mins([0.0; TILE]); blocks.len()];
    let mut row = 0;
    for p in parts {
        let data = p.data()?;
        let size = p.dtype().type_size();
        for raw_row in data.chunks(k / p.dtype().block_size() * size) {
            let cells: Vec<(f32, f32, [u8; QK])> =
                raw_row.chunks(size).flat_map(q4k_block).collect();
            for (b, (d, m, q)) in cells.into_iter().enumerate() {
                let (at, i) = (row / TILE * nb + b, row % TILE);
                blocks[at].d[i] = d;
                mins[at].0[i] = m;
                for (j, v) in q.iter().enumerate() {
                    set_low_nibble(&mut blocks[at].low, i, j, *v);
                }
            }
            row += 1;
        }
    }
    Ok((blocks, mins))
}

/// Q5_0 parts as nibble tiles (`Tile5Block`).
pub(super) fn q5_0_tiles(parts: &[QTensor], n: usize, k: usize) -> Result<Vec<Tile5Block>> {
    let nb = k / QK;
    let zero = Tile5Block {
        d: [0.0; TILE],
        low: [[0; 64]; GROUPS / 2],
        high: [0; GROUPS],
    };
    let mut blocks = vec![zero; n.div_ceil(TILE) * nb];
    let byte_mask = super::available();
    let mut row = 0;
    for p in parts {
        let data = p.data()?;
        for raw_row in data.chunks(nb * p.dtype().type_size()) {
            for (b, raw) in raw_row.chunks(p.dtype().type_size()).enumerate() {
                let (d, q) = q5_0_integers(raw);
                let tb = &mut blocks[row / TILE * nb + b];
                let i = row % TILE;
                tb.d[i] = d;
                for (j, u) in q.iter().enumerate() {
                    set_low_nibble(&mut tb.low, i, j, *u);
                    tb.high[j / 4] |= ((u >> 4) as u64) << fifth_bit(i, j, byte_mask);
                }
            }
            row += 1;
        }
    }
    Ok(blocks)
}

/// Parts of any type as byte tiles: Q8_0 and Q5_0 blocks converted exactly, other types
/// dequantized and re-quantized to Q8_0 as candle does.
pub(super) fn byte_tiles(parts: &[QTensor], n: usize, k: usize) -> Result<Vec<TileBlock>> {
    let nb = k / QK;
    let zero = TileBlock {
        d: [0.0; TILE],
        qs: [[0x80; 64]; GROUPS],
    };
    let mut blocks = vec![zero; n.div_ceil(TILE) * nb];
    let mut row0 = 0;
    for p in parts {
        let rows = p.shape().dims2()?.0;
        let data = p.data()?;
        let dense = if matches!(
            p.dtype(),
            GgmlDType::Q8_0 | GgmlDType::Q5_0 | GgmlDType::Q6K
        ) {
            None
        } else {
            Some(
                p.dequantize(&Device::Cpu)?
                    .flatten_all()?
                    .to_vec1::<f32>()?,
            )
        };
        let row_bytes = k / p.dtype().block_size() * p.dtype().type_size();
        for r in 0..rows {
            let cells: Vec<(f32, [i8; QK])> = match &dense {
                Some(w) => q8_blocks(&quantize_row(&w[r * k..][..k]))
                    .iter()
                    .map(|b| (b.d.to_f32(), b.qs))
                    .collect(),
                None if p.dtype() == GgmlDType::Q6K => data[r * row_bytes..][..row_bytes]
                    .chunks(p.dtype().type_size())
                    .flat_map(q6k_block)
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
    Ok(blocks)
}

/// Byte tiles as word tiles: the same integers and scales, each widened to 16 bits.
pub(super) fn word_tiles(bytes: &[TileBlock]) -> Vec<TileWordBlock> {
    bytes
        .iter()
        .map(|tb| {
            let mut words = TileWordBlock {
                d: tb.d,
                qs: [[0; 2 * TILE]; QK / 2],
            };
            for i in 0..TILE {
                for j in 0..QK {
                    words.qs[j / 2][i * 2 + j % 2] = byte_weight(tb, i, j) as i16;
                }
            }
            words
        })
        .collect()
}

/// Row `i`'s weight `j` of a word tile block.
pub(super) fn word_weight(tb: &TileWordBlock, i: usize, j: usize) -> i16 {
    tb.qs[j / 2][i * 2 + j % 2]
}

/// `x` (whole blocks) as Q8_0, quantized by candle as ggml quantizes an activation for a
/// Q8_0 product: scale max|x| / 127 kept as f16, bytes rounded with the unrounded scale.
pub(super) fn quantize_row(x: &[f32]) -> Vec<BlockQ8_0> {
    let mut ys = vec![BlockQ8_0::zeros(); x.len() / QK];
    BlockQ8_0::from_float(x, &mut ys);
    ys
}

/// A Q8_0 block: f16 scale, 32 signed bytes.
pub(super) fn q8_0_block(b: &[u8]) -> (f32, [i8; QK]) {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let mut qs = [0i8; QK];
    for (q, v) in qs.iter_mut().zip(&b[2..2 + QK]) {
        *q = *v as i8;
    }
    (d, qs)
}

/// A Q4_1 block (f16 scale, f16 minimum, 16 bytes of nibbles: element j is the low
/// nibble of byte j for j < 16, the high nibble of byte j - 16 after): its integers 0..15.
pub(super) fn q4_1_block(b: &[u8]) -> (f32, f32, [u8; QK]) {
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

/// A Q4_K super-block (f16 scale, f16 minimum scale, 12 bytes of 6-bit scales and
/// minimums, 128 bytes of nibbles: sub-block 2i is the low nibbles of bytes 32i..32i+32,
/// 2i + 1 their high nibbles) as eight blocks of 32: scale, minimum (negative: ggml
/// subtracts it), integers 0..15.
pub(super) fn q4k_block(b: &[u8]) -> [(f32, f32, [u8; QK]); 8] {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let dmin = f16::from_le_bytes([b[2], b[3]]).to_f32();
    let scales = &b[4..16];
    let qs = &b[16..16 + 128];
    // ggml's `get_scale_min_k4`.
    let scale_min = |j: usize| -> (u8, u8) {
        if j < 4 {
            (scales[j] & 63, scales[j + 4] & 63)
        } else {
            (
                (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4),
                (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4),
            )
        }
    };
    std::array::from_fn(|s| {
        let (sc, m) = scale_min(s);
        let bytes = &qs[s / 2 * QK..][..QK];
        let q = std::array::from_fn(|j| {
            if s % 2 == 0 {
                bytes[j] & 0x0f
            } else {
                bytes[j] >> 4
            }
        });
        (d * sc as f32, -(dmin * m as f32), q)
    })
}

/// A Q5_0 block (f16 scale, 32 high bits, 16 bytes of nibbles: element j is the low
/// nibble of byte j for j < 16, the high nibble of byte j - 16 after): its scale and its
/// integers plus 16 (0..31).
pub(super) fn q5_0_integers(b: &[u8]) -> (f32, [u8; QK]) {
    let d = f16::from_le_bytes([b[0], b[1]]).to_f32();
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    let nibbles = &b[6..6 + QK / 2];
    let mut qs = [0u8; QK];
    for (j, q) in qs.iter_mut().enumerate() {
        let low = if j < QK / 2 {
            nibbles[j] & 0x0f
        } else {
            nibbles[j - QK / 2] >> 4
        };
        *q = low | (((qh >> j) & 1) as u8) << 4;
    }
    (d, qs)
}

/// A Q6_K super-block (128 bytes of low nibbles, 64 of high bit pairs, 16 signed
/// sub-block scales, f16 scale; ggml's `dequantize_row_q6_K`) as eight Q8_0 blocks of
/// 32. A block's two halves of 16 have their own scales `d × sc`; the block's scale is
/// the larger one over 4, so that half's integers (-32..31) are held exactly, times 4
/// (-128..124), and the other half's are rounded to that step (within half of it: as
/// fine as re-quantizing its floats to Q8_0, and the larger half without loss).
pub(super) fn q6k_block(b: &[u8]) -> [(f32, [i8; QK]); 8] {
    let (ql, qh) = (&b[..128], &b[128..192]);
    let scales: [i8; 16] = std::array::from_fn(|i| b[192 + i] as i8);
    let d = f16::from_le_bytes([b[208], b[209]]).to_f32();
    // Element e's integer: e = 128h + 32m + l (h the half, m the quarter, l < 32).
    let integer = |e: usize| -> i32 {
        let (h, m, l) = (e / 128, e % 128 / 32, e % 32);
        let low = ql[64 * h + l + 32 * (m % 2)];
        let low = if m < 2 { low & 0x0f } else { low >> 4 };
        let high = (qh[32 * h + l] >> (2 * m)) & 3;
        (low | high << 4) as i32 - 32
    };
    std::array::from_fn(|blk| {
        // Each weight as an integer times d: its half's scale times its 6-bit integer.
        let products: [i32; QK] =
            std::array::from_fn(|j| scales[2 * blk + j / 16] as i32 * integer(QK * blk + j));
        let (a, b) = (scales[2 * blk] as i32, scales[2 * blk + 1] as i32);
        let larger = if a.abs() >= b.abs() { a } else { b };
        if larger == 0 {
            return (0.0, [0; QK]);
        }
        // 4 × product / unit: exact for the larger half, to the nearest step for the
        // other. With equal and opposite scales one half's -32 would be +128 unless the
        // unit takes that half's sign; with a -32 in both, one is held as 127.
        let held = |unit: i32| products.map(|p| (4.0 * p as f64 / unit as f64).round() as i32);
        let (mut unit, mut q) = (larger, held(larger));
        if q.iter().any(|&v| v > 127) {
            (unit, q) = (-larger, held(-larger));
        }
        (d * unit as f32 / 4.0, q.map(|v| v.clamp(-128, 127) as i8))
    })
}

/// A Q5_0 block as Q8_0 exactly: integers -16..15 times 8 and the scale over 8.
pub(super) fn q5_0_block(b: &[u8]) -> (f32, [i8; QK]) {
    let (d, u) = q5_0_integers(b);
    (d / 8.0, u.map(|u| ((u as i32 - 16) * 8) as i8))
}
