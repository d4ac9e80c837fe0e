//! The AVX-512 VNNI kernels over tiles, one of each for every tile layout (`Layout`): a
//! layout says how a block's weight groups become `vpdpbusd`'s unsigned operand and what
//! the sums start from, so the loops are written once.

#[cfg(target_arch = "x86_64")]
pub(super) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use half::f16;

    use super::super::blocks::{Mins, Tile4Block, Tile4hBlock, Tile5Block, TileBlock};
    use super::super::{Act, GROUPS, TILE};

    /// How a tile block's 8 groups of 64 bytes are read, two at a time (groups h and
    /// h + 4: a Q5_0 block keeps them in one vector's low and high nibbles).
    pub(in super::super) trait Layout {
        type Block;
        /// Groups `h` and `h + 4` (h < 4) as unsigned bytes.
        unsafe fn pair(b: &Self::Block, h: usize) -> (__m512i, __m512i);
        /// The 16 rows' scales.
        unsafe fn scales(b: &Self::Block) -> __m512;
        /// Whether blocks have minimums (Q4_1, Q4_K): the sums start from 0 and each
        /// block adds its minimums times the activation's scaled sum.
        const MIN: bool = false;
        /// Block column `i`'s 16 minimums (`block`, or `mins[i]` where they are kept
        /// beside the blocks).
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn mins(_block: &Self::Block, mins: &[Mins], i: usize) -> __m512 {
            _mm512_load_ps(mins[i].0.as_ptr())
        }
        /// What a block's sums start from: minus the unsigned offset times the
        /// activation block's sum.
        fn start(a: &Act) -> i32;
        /// Activation blocks quantized as ggml's Q8_K (per 256 values) rather than Q8_0.
        const Q8K: bool = false;
        /// What the minimums multiply (`MIN`): the activation block's scale × sum.
        fn scaled_sum(a: &Act) -> f32 {
            a.scaled_sum
        }
    }

    /// Bytes plus 128 (`TileBlock`).
    pub(in super::super) struct Bytes;

    impl Layout for Bytes {
        type Block = TileBlock;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &TileBlock, h: usize) -> (__m512i, __m512i) {
            (
                _mm512_load_si512(b.qs[h].as_ptr() as *const _),
                _mm512_load_si512(b.qs[h + GROUPS / 2].as_ptr() as *const _),
            )
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn scales(b: &TileBlock) -> __m512 {
            _mm512_load_ps(b.d.as_ptr())
        }
        fn start(a: &Act) -> i32 {
            a.correction
        }
    }

    /// Q5_0's integers plus 16 (0..31): low nibbles, and the fifth bit as a byte mask.
    pub(in super::super) struct Nibbles;

    impl Layout for Nibbles {
        type Block = Tile5Block;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &Tile5Block, h: usize) -> (__m512i, __m512i) {
            let v = _mm512_load_si512(b.low[h].as_ptr() as *const _);
            let nibble = _mm512_set1_epi8(0x0f);
            let sixteen = _mm512_set1_epi8(16);
            let lo = _mm512_and_si512(v, nibble);
            let hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
            (
                _mm512_mask_add_epi8(lo, b.high[h], lo, sixteen),
                _mm512_mask_add_epi8(hi, b.high[h + GROUPS / 2], hi, sixteen),
            )
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn scales(b: &Tile5Block) -> __m512 {
            _mm512_load_ps(b.d.as_ptr())
        }
        fn start(a: &Act) -> i32 {
            // correction is -128 × sum; the offset here is 16.
            a.correction / 8
        }
    }

    /// Q4_1's integers (0..15) as nibbles, with the file's f16 scales and minimums.
    pub(in super::super) struct Nibbles4;

    /// Groups `h` and `h + 4` of nibble tiles as unsigned bytes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn nibble_pair(low: &[[u8; 64]; GROUPS / 2], h: usize) -> (__m512i, __m512i) {
        let v = _mm512_load_si512(low[h].as_ptr() as *const _);
        let nibble = _mm512_set1_epi8(0x0f);
        (
            _mm512_and_si512(v, nibble),
            _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble),
        )
    }

    impl Layout for Nibbles4 {
        type Block = Tile4hBlock;
        const MIN: bool = true;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &Tile4hBlock, h: usize) -> (__m512i, __m512i) {
            nibble_pair(&b.low, h)
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn scales(b: &Tile4hBlock) -> __m512 {
            _mm512_cvtph_ps(_mm256_load_si256(b.d.as_ptr() as *const _))
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn mins(b: &Tile4hBlock, _: &[Mins], _: usize) -> __m512 {
            _mm512_cvtph_ps(_mm256_load_si256(b.m.as_ptr() as *const _))
        }
        fn start(_: &Act) -> i32 {
            // Unshifted: the minimums stand for the offset.
            0
        }
    }

    /// Q4_K's integers as `Nibbles4` holds Q4_1's; its minimums multiply the exact
    /// scaled sum, as ggml's Q4_K × Q8_K product does with its integer block sums.
    pub(in super::super) struct NibblesK;

    impl Layout for NibblesK {
        type Block = Tile4Block;
        const Q8K: bool = true;
        const MIN: bool = true;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &Tile4Block, h: usize) -> (__m512i, __m512i) {
            nibble_pair(&b.low, h)
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn scales(b: &Tile4Block) -> __m512 {
            _mm512_load_ps(b.d.as_ptr())
        }
        fn start(_: &Act) -> i32 {
            0
        }
        fn scaled_sum(a: &Act) -> f32 {
            a.scaled_sum_f32
        }
    }

    /// Up to four tiles (`tiles` holds whole tiles of `nb` blocks, `mins` their Q4_K
    /// minimums if kept beside them) against the activation, 16 outputs a tile into `out`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(in super::super) unsafe fn tiles<L: Layout>(
        tiles: &[L::Block],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        let m = mins.unwrap_or(&[]);
        match tiles.len() / nb {
            4 => run::<L, 4>(tiles, m, nb, act, out),
            3 => run::<L, 3>(tiles, m, nb, act, out),
            2 => run::<L, 2>(tiles, m, nb, act, out),
            _ => run::<L, 1>(tiles, m, nb, act, out),
        }
    }

    /// Block column `at`'s scales and (`MIN`) minimums.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn factors<L: Layout>(block: &L::Block, mins: &[Mins], at: usize) -> (__m512, __m512) {
        let m = if L::MIN {
            L::mins(block, mins, at)
        } else {
            _mm512_setzero_ps()
        };
        (L::scales(block), m)
    }

    /// `acc` plus one block's integer sums times its scales `d` and the activation's,
    /// and (`MIN`: Q4_1 and Q4_K, whose sums are unshifted) its minimums `m` times the
    /// activation block's scaled sum.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scaled<L: Layout>(
        d: __m512,
        m: __m512,
        sums: __m512i,
        a: &Act,
        acc: __m512,
    ) -> __m512 {
        let d = _mm512_mul_ps(d, _mm512_set1_ps(a.d));
        let acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), d, acc);
        if L::MIN {
            _mm512_fmadd_ps(m, _mm512_set1_ps(L::scaled_sum(a)), acc)
        } else {
            acc
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn run<L: Layout, const R: usize>(
        tiles: &[L::Block],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        let mut acc = [_mm512_setzero_ps(); R];
        for (b, a) in act.iter().enumerate() {
            let start = if L::MIN { 0 } else { L::start(a) };
            let mut sums = [_mm512_set1_epi32(start); R];
            let groups = a.qs.as_ptr() as *const i32;
            for h in 0..GROUPS / 2 {
                let y0 = _mm512_set1_epi32(groups.add(h).read_unaligned());
                let y1 = _mm512_set1_epi32(groups.add(h + GROUPS / 2).read_unaligned());
                for (t, s) in sums.iter_mut().enumerate() {
                    let (w0, w1) = L::pair(&tiles[t * nb + b], h);
                    *s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(*s, w0, y0), w1, y1);
                }
            }
            for (t, (acc, s)) in acc.iter_mut().zip(sums).enumerate() {
                let (d, m) = factors::<L>(&tiles[t * nb + b], mins, t * nb + b);
                *acc = scaled::<L>(d, m, s, a, *acc);
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            _mm512_storeu_ps(out[t * TILE..].as_mut_ptr(), *acc);
        }
    }

    /// One or two tiles against one to four activation rows (`act` holds whole rows of
    /// `nb` blocks); row r's 16 outputs a tile are added to `out + r·stride + 16t`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(in super::super) unsafe fn rows<L: Layout>(
        tiles: &[L::Block],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        let m = mins.unwrap_or(&[]);
        match (tiles.len() / nb, act.len() / nb) {
            (2, 4) => run_rows::<L, 2, 4>(tiles, m, nb, act, out, stride),
            (2, 3) => run_rows::<L, 2, 3>(tiles, m, nb, act, out, stride),
            (2, 2) => run_rows::<L, 2, 2>(tiles, m, nb, act, out, stride),
            (2, _) => run_rows::<L, 2, 1>(tiles, m, nb, act, out, stride),
            (_, 4) => run_rows::<L, 1, 4>(tiles, m, nb, act, out, stride),
            (_, 3) => run_rows::<L, 1, 3>(tiles, m, nb, act, out, stride),
            (_, 2) => run_rows::<L, 1, 2>(tiles, m, nb, act, out, stride),
            _ => run_rows::<L, 1, 1>(tiles, m, nb, act, out, stride),
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn run_rows<L: Layout, const T: usize, const R: usize>(
        tiles: &[L::Block],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: *mut f32,
        stride: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); R]; T];
        for b in 0..nb {
            let mut sums = [[_mm512_setzero_si512(); R]; T];
            if !L::MIN {
                for r in 0..R {
                    for s in sums.iter_mut() {
                        s[r] = _mm512_set1_epi32(L::start(&act[r * nb + b]));
                    }
                }
            }
            for h in 0..GROUPS / 2 {
                let w: [(__m512i, __m512i); T] =
                    std::array::from_fn(|t| L::pair(&tiles[t * nb + b], h));
                for r in 0..R {
                    let groups = act[r * nb + b].qs.as_ptr() as *const i32;
                    let y0 = _mm512_set1_epi32(groups.add(h).read_unaligned());
                    let y1 = _mm512_set1_epi32(groups.add(h + GROUPS / 2).read_unaligned());
                    for (s, (w0, w1)) in sums.iter_mut().zip(&w) {
                        s[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s[r], *w0, y0), *w1, y1);
                    }
                }
            }
            for (t, (acc, sums)) in acc.iter_mut().zip(&sums).enumerate() {
                let (d, m) = factors::<L>(&tiles[t * nb + b], mins, t * nb + b);
                for r in 0..R {
                    acc[r] = scaled::<L>(d, m, sums[r], &act[r * nb + b], acc[r]);
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
    pub(in super::super) unsafe fn quantize(x: &[f32], a: &mut Act) {
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
        a.scaled_sum_f32 = a.d * sum as f32;
        a.scaled_sum = f16::from_f32(a.scaled_sum_f32).to_f32();
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) use other::*;

/// Elsewhere the kernels are never called: tiles are built only where `available()`.
#[cfg(not(target_arch = "x86_64"))]
mod other {
    use super::super::blocks::{Mins, Tile4Block, Tile4hBlock, Tile5Block, TileBlock};
    use super::super::Act;

    pub(in super::super) trait Layout {
        type Block;
        const Q8K: bool = false;
    }
    pub(in super::super) struct Bytes;
    impl Layout for Bytes {
        type Block = TileBlock;
    }
    pub(in super::super) struct Nibbles;
    impl Layout for Nibbles {
        type Block = Tile5Block;
    }
    pub(in super::super) struct Nibbles4;
    impl Layout for Nibbles4 {
        type Block = Tile4hBlock;
    }
    pub(in super::super) struct NibblesK;
    impl Layout for NibblesK {
        type Block = Tile4Block;
    }

    pub(in super::super) unsafe fn tiles<L: Layout>(
        _: &[L::Block],
        _: Option<&[Mins]>,
        _: usize,
        _: &[Act],
        _: &mut [f32],
    ) {
        unreachable!("TiledQ8 is built only where `available()`")
    }

    pub(in super::super) unsafe fn rows<L: Layout>(
        _: &[L::Block],
        _: Option<&[Mins]>,
        _: usize,
        _: &[Act],
        _: *mut f32,
        _: usize,
    ) {
        unreachable!("TiledQ8 is built only where `available()`")
    }

    pub(in super::super) unsafe fn quantize(_: &[f32], _: &mut Act) {
        unreachable!("TiledQ8 is built only where `available()`")
    }
}
