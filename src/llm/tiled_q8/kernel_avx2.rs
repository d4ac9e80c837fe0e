//! The AVX2 kernels over the byte and nibble tiles, for CPUs without AVX-512 VNNI (most
//! laptops and AMD before Zen 4): the same tiles, activation blocks and sums as
//! `kernel.rs`, so a model loads the same way everywhere. A tile's 16 rows are two halves
//! of 8 in 256-bit registers. `vpmaddubsw` multiplies unsigned weight bytes by the
//! activation's signed bytes and adds pairs to 16 bits, `vpmaddwd` by ones adds those
//! pairs to a row's 32-bit sum: 64 multiply-adds of a half in five instructions.
//!
//! Nibble weights (Q5_0's 0..31, Q4's 0..15) cannot saturate the 16-bit pair sums (2 × 31
//! × 128 < 2¹⁵), and four such sums still fit: two loaded pairs share one `vpmaddwd`. A
//! Q5_0 tile's fifth bits are laid out for AVX2 at load (`blocks::fifth_bit`), so that
//! one shift and one `and` make a group's 16s. Bytes can saturate (`TileBlock` holds
//! weights plus 128), so the byte tiles are multiplied signed, by the sign trick ggml's
//! AVX2 Q8_0 product uses: |w| times the activation with w's sign.

#[cfg(target_arch = "x86_64")]
pub(super) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::super::avx2::round_block;
    use super::super::blocks::{Mins, Tile4Block, Tile4hBlock, Tile5Block, TileBlock};
    use super::super::kernel::{Bytes, Layout, Nibbles, Nibbles4, NibblesK};
    use super::super::{Act, GROUPS, TILE};

    const HALF: usize = TILE / 2;

    /// How a tile block's groups are read for AVX2, half a tile (8 rows) at a time.
    pub(in super::super) trait Avx2Layout: Layout {
        /// Groups `h` and `h + 4` of one half, loaded and ready to multiply.
        type Pair: Products;
        unsafe fn half_pair(b: &Self::Block, h: usize, half: usize) -> Self::Pair;
        /// The half's 8 scales.
        unsafe fn half_scales(b: &Self::Block, half: usize) -> __m256;
        /// The half's 8 minimums of block column `i` (`Layout::MIN`).
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_mins(_block: &Self::Block, mins: &[Mins], i: usize, half: usize) -> __m256 {
            _mm256_loadu_ps(mins[i].0.as_ptr().add(HALF * half))
        }
        /// What a block's sums start from (the unsigned offset's correction; none for
        /// signed bytes, and none where minimums stand for the offset).
        fn sums_start(_: &Act) -> i32 {
            0
        }
    }

    /// A loaded pair of weight groups, multiplied by broadcast activation groups.
    pub(in super::super) trait Products: Copy {
        /// The 8 rows' 32-bit sums of the pair times `y0` and `y1`.
        unsafe fn products(&self, y0: __m256i, y1: __m256i) -> __m256i;
        /// The same for this pair and the `next`, times `y[0..2]` and `y[2..4]`.
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn products2(&self, next: &Self, y: [__m256i; 4]) -> __m256i {
            _mm256_add_epi32(self.products(y[0], y[1]), next.products(y[2], y[3]))
        }
    }

    /// Unsigned bytes of at most 31 (nibble tiles).
    impl Products for (__m256i, __m256i) {
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn products(&self, y0: __m256i, y1: __m256i) -> __m256i {
            let pairs = _mm256_add_epi16(
                _mm256_maddubs_epi16(self.0, y0),
                _mm256_maddubs_epi16(self.1, y1),
            );
            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
        }
        /// Four byte products added in 16 bits before one `vpmaddwd`: each is at most
        /// 2 × 31 × 128, so four stay under 2¹⁵.
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn products2(&self, next: &Self, y: [__m256i; 4]) -> __m256i {
            let pairs = _mm256_add_epi16(
                _mm256_add_epi16(
                    _mm256_maddubs_epi16(self.0, y[0]),
                    _mm256_maddubs_epi16(self.1, y[1]),
                ),
                _mm256_add_epi16(
                    _mm256_maddubs_epi16(next.0, y[2]),
                    _mm256_maddubs_epi16(next.1, y[3]),
                ),
            );
            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
        }
    }

    /// Signed bytes as each group's |w| and w (byte tiles).
    impl Products for [__m256i; 4] {
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn products(&self, y0: __m256i, y1: __m256i) -> __m256i {
            // One group at a time: |w| ≤ 128 by |y| ≤ 127, twice, nearly fills 16 bits.
            let ones = _mm256_set1_epi16(1);
            let p0 = _mm256_maddubs_epi16(self[0], _mm256_sign_epi8(y0, self[1]));
            let p1 = _mm256_maddubs_epi16(self[2], _mm256_sign_epi8(y1, self[3]));
            _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones))
        }
    }

    /// 32 nibble-tile bytes of groups `h` and `h + 4` (low and high nibbles).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn nibble_pair(
        low: &[[u8; 64]; GROUPS / 2],
        h: usize,
        half: usize,
    ) -> (__m256i, __m256i) {
        let v = _mm256_loadu_si256(low[h].as_ptr().add(32 * half) as *const __m256i);
        let nibble = _mm256_set1_epi8(0x0f);
        (
            _mm256_and_si256(v, nibble),
            _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble),
        )
    }

    /// 16 in each byte of the half whose bit is set in a Q5_0 group's mask, else 0: the
    /// mask in each 64-bit lane, shifted so that every byte's bit lands on its bit 4
    /// (`blocks::fifth_bit`).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn fifth_bits(mask: u64, half: usize) -> __m256i {
        let lanes = _mm256_set1_epi64x(mask as i64);
        let placed = if half == 0 {
            _mm256_srlv_epi64(lanes, _mm256_setr_epi64x(0, 1, 2, 3))
        } else {
            _mm256_sllv_epi64(lanes, _mm256_setr_epi64x(4, 3, 2, 1))
        };
        _mm256_and_si256(placed, _mm256_set1_epi8(16))
    }

    impl Avx2Layout for Bytes {
        /// Each group's |w| and w.
        type Pair = [__m256i; 4];
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_pair(b: &TileBlock, h: usize, half: usize) -> [__m256i; 4] {
            let offset = _mm256_set1_epi8(-128);
            let load = |g: usize| {
                let v = _mm256_loadu_si256(b.qs[g].as_ptr().add(32 * half) as *const __m256i);
                _mm256_xor_si256(v, offset)
            };
            let (w0, w1) = (load(h), load(h + GROUPS / 2));
            [_mm256_abs_epi8(w0), w0, _mm256_abs_epi8(w1), w1]
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_scales(b: &TileBlock, half: usize) -> __m256 {
            _mm256_loadu_ps(b.d.as_ptr().add(HALF * half))
        }
    }

    impl Avx2Layout for Nibbles {
        type Pair = (__m256i, __m256i);
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_pair(b: &Tile5Block, h: usize, half: usize) -> (__m256i, __m256i) {
            let (lo, hi) = nibble_pair(&b.low, h, half);
            (
                _mm256_or_si256(lo, fifth_bits(b.high[h], half)),
                _mm256_or_si256(hi, fifth_bits(b.high[h + GROUPS / 2], half)),
            )
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_scales(b: &Tile5Block, half: usize) -> __m256 {
            _mm256_loadu_ps(b.d.as_ptr().add(HALF * half))
        }
        fn sums_start(a: &Act) -> i32 {
            // correction is -128 × sum; the offset here is 16.
            a.correction / 8
        }
    }

    impl Avx2Layout for Nibbles4 {
        type Pair = (__m256i, __m256i);
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_pair(b: &Tile4hBlock, h: usize, half: usize) -> (__m256i, __m256i) {
            nibble_pair(&b.low, h, half)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_scales(b: &Tile4hBlock, half: usize) -> __m256 {
            _mm256_cvtph_ps(_mm_loadu_si128(b.d.as_ptr().add(HALF * half) as *const _))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_mins(b: &Tile4hBlock, _: &[Mins], _: usize, half: usize) -> __m256 {
            _mm256_cvtph_ps(_mm_loadu_si128(b.m.as_ptr().add(HALF * half) as *const _))
        }
    }

    impl Avx2Layout for NibblesK {
        type Pair = (__m256i, __m256i);
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_pair(b: &Tile4Block, h: usize, half: usize) -> (__m256i, __m256i) {
            nibble_pair(&b.low, h, half)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_scales(b: &Tile4Block, half: usize) -> __m256 {
            _mm256_loadu_ps(b.d.as_ptr().add(HALF * half))
        }
    }

    /// Tiles (`tiles` holds whole tiles of `nb` blocks, `mins` their Q4_K minimums if kept
    /// beside them) against one to four activation rows; row r's 16 outputs a tile are
    /// added to `out + r·stride + 16t`, as `kernel::rows` does.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(in super::super) unsafe fn rows<L: Avx2Layout>(
        tiles: &[L::Block],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        for (t, tile) in tiles.chunks_exact(nb).enumerate() {
            let mins = mins.map_or(&[][..], |m| &m[t * nb..(t + 1) * nb]);
            let out = out.add(t * TILE);
            match act.len() / nb {
                4 => halves::<L, 4>(tile, mins, nb, act, out, stride),
                3 => halves::<L, 3>(tile, mins, nb, act, out, stride),
                2 => halves::<L, 2>(tile, mins, nb, act, out, stride),
                _ => halves::<L, 1>(tile, mins, nb, act, out, stride),
            }
        }
    }

    /// Both halves of a tile against `R` rows.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn halves<L: Avx2Layout, const R: usize>(
        tile: &[L::Block],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        run::<L, R, 0>(tile, mins, nb, act, out, stride);
        run::<L, R, 1>(tile, mins, nb, act, out.add(HALF), stride);
    }

    /// Half `PART` of a tile against `R` rows: each loaded pair of weight groups serves
    /// the R rows.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn run<L: Avx2Layout, const R: usize, const PART: usize>(
        tile: &[L::Block],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        let mut acc = [_mm256_setzero_ps(); R];
        for (b, block) in tile.iter().enumerate() {
            let mut sums: [__m256i; R] =
                std::array::from_fn(|r| _mm256_set1_epi32(L::sums_start(&act[r * nb + b])));
            for h in (0..GROUPS / 2).step_by(2) {
                let w = L::half_pair(block, h, PART);
                let next = L::half_pair(block, h + 1, PART);
                for (r, s) in sums.iter_mut().enumerate() {
                    let groups = act[r * nb + b].qs.as_ptr() as *const i32;
                    let y = |g: usize| _mm256_set1_epi32(groups.add(g).read_unaligned());
                    let y = [y(h), y(h + GROUPS / 2), y(h + 1), y(h + 1 + GROUPS / 2)];
                    *s = _mm256_add_epi32(*s, w.products2(&next, y));
                }
            }
            let d = L::half_scales(block, PART);
            let m = if L::MIN {
                L::half_mins(block, mins, b, PART)
            } else {
                _mm256_setzero_ps()
            };
            for (r, (acc, s)) in acc.iter_mut().zip(sums).enumerate() {
                let a = &act[r * nb + b];
                let scale = _mm256_mul_ps(d, _mm256_set1_ps(a.d));
                *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, *acc);
                if L::MIN {
                    *acc = _mm256_fmadd_ps(m, _mm256_set1_ps(L::scaled_sum(a)), *acc);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let at = out.add(r * stride);
            _mm256_storeu_ps(at, _mm256_add_ps(_mm256_loadu_ps(at), *acc));
        }
    }

    /// 32 values as an activation block, as `kernel::quantize` makes it.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(in super::super) unsafe fn quantize(x: &[f32], a: &mut Act) {
        let (q, d) = round_block(x);
        let words = [
            _mm256_packs_epi32(q[0], q[1]),
            _mm256_packs_epi32(q[2], q[3]),
        ];
        // Each `packs` interleaves its operands' 128-bit halves: the bytes come out as
        // dwords 0 4 1 5 2 6 3 7 of the natural order.
        let bytes = _mm256_packs_epi16(words[0], words[1]);
        let bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(a.qs.as_mut_ptr() as *mut __m256i, bytes);
        let s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let sum = _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01)));
        a.d = d;
        a.correction = -128 * sum;
        a.scaled_sum_f32 = d * sum as f32;
        a.scaled_sum = half::f16::from_f32(a.scaled_sum_f32).to_f32();
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) use other::*;

/// Elsewhere the kernels are never called: tiles are built only where they run.
#[cfg(not(target_arch = "x86_64"))]
mod other {
    use super::super::blocks::Mins;
    use super::super::kernel::Layout;
    use super::super::Act;

    pub(in super::super) trait Avx2Layout: Layout {}
    impl<L: Layout> Avx2Layout for L {}

    pub(in super::super) unsafe fn rows<L: Avx2Layout>(
        _: &[L::Block],
        _: Option<&[Mins]>,
        _: usize,
        _: &[Act],
        _: *mut f32,
        _: usize,
    ) {
        unreachable!("TiledQ8 is built only where its kernels run")
    }

    pub(in super::super) unsafe fn quantize(_: &[f32], _: &mut Act) {
        unreachable!("TiledQ8 is built only where its kernels run")
    }
}
