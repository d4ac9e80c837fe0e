//! The AVX-512 VNNI kernels over tiles, one of each for every tile layout (`Layout`): a
//! layout says how a block's weight groups become `vpdpbusd`'s unsigned operand and what
//! the sums start from, so the loops are written once.

#[cfg(target_arch = "x86_64")]
pub(super) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use half::f16;

    use super::super::blocks::{Mins, Tile4Block, Tile5Block, TileBlock};
    use super::super::{Act, GROUPS, TILE};

    /// How a tile block's 8 groups of 64 bytes are read, two at a time (groups h and
    /// h + 4: a Q5_0 block keeps them in one vector's low and high nibbles).
    pub(in super::super) trait Layout {
        type Block;
        /// Groups `h` and `h + 4` (h < 4) as unsigned bytes.
        unsafe fn pair(b: &Self::Block, h: usize) -> (__m512i, __m512i);
        /// The 16 rows' scales.
        fn scales(b: &Self::Block) -> &[f32; TILE];
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
        fn scales(b: &TileBlock) -> &[f32; TILE] {
            &b.d
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
        fn scales(b: &Tile5Block) -> &[f32; TILE] {
            &b.d
        }
        fn start(a: &Act) -> i32 {
            // correction is -128 × sum; the offset here is 16.
            a.correction / 8
        }
    }

    /// Q4_1's integers (0..15) as nibbles, run with `MIN` set.
    pub(in super::super) struct Nibbles4;

    impl Layout for Nibbles4 {
        type Block = Tile4Block;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &Tile4Block, h: usize) -> (__m512i, __m512i) {
            let v = _mm512_load_si512(b.low[h].as_ptr() as *const _);
            let nibble = _mm512_set1_epi8(0x0f);
            (
                _mm512_and_si512(v, nibble),
                _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble),
            )
        }
        fn scales(b: &Tile4Block) -> &[f32; TILE] {
            &b.d
        }
        fn start(_: &Act) -> i32 {
            // Unshifted: the minimums stand for the offset (`MIN`).
            0
        }
    }

    /// Q4_K's integers as `Nibbles4` holds Q4_1's; its minimums multiply the exact
    /// scaled sum, as ggml's Q4_K × Q8_K product does with its integer block sums.
    pub(in super::super) struct NibblesK;

    impl Layout for NibblesK {
        type Block = Tile4Block;
        const Q8K: bool = true;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
        unsafe fn pair(b: &Tile4Block, h: usize) -> (__m512i, __m512i) {
            Nibbles4::pair(b, h)
        }
        fn scales(b: &Tile4Block) -> &[f32; TILE] {
            &b.d
        }
        fn start(_: &Act) -> i32 {
            0
        }
        fn scaled_sum(a: &Act) -> f32 {
            a.scaled_sum_f32
        }
    }

    /// Up to four tiles (`tiles` holds whole tiles of `nb` blocks, `mins` their Q4_1
    /// minimums if any) against the activation, 16 outputs a tile into `out`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(in super::super) unsafe fn tiles<L: Layout>(
        tiles: &[L::Block],
        mins: Option<&[Mins]>,
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        match (tiles.len() / nb, mins) {
            (4, None) => run::<L, 4, false>(tiles, &[], nb, act, out),
            (3, None) => run::<L, 3, false>(tiles, &[], nb, act, out),
            (2, None) => run::<L, 2, false>(tiles, &[], nb, act, out),
            (_, None) => run::<L, 1, false>(tiles, &[], nb, act, out),
            (4, Some(m)) => run::<L, 4, true>(tiles, m, nb, act, out),
            (3, Some(m)) => run::<L, 3, true>(tiles, m, nb, act, out),
            (2, Some(m)) => run::<L, 2, true>(tiles, m, nb, act, out),
            (_, Some(m)) => run::<L, 1, true>(tiles, m, nb, act, out),
        }
    }

    /// `MIN`: Q4_1 tiles (unshifted integers, no correction; the minimums times the
    /// activation's scaled sum added per block).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn run<L: Layout, const R: usize, const MIN: bool>(
        tiles: &[L::Block],
        mins: &[Mins],
        nb: usize,
        act: &[Act],
        out: &mut [f32],
    ) {
        let mut acc = [_mm512_setzero_ps(); R];
        for (b, a) in act.iter().enumerate() {
            let start = if MIN { 0 } else { L::start(a) };
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
            let dy = _mm512_set1_ps(a.d);
            for (t, (acc, s)) in acc.iter_mut().zip(sums).enumerate() {
                let d = _mm512_loadu_ps(L::scales(&tiles[t * nb + b]).as_ptr());
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, dy), *acc);
                if MIN {
                    let m = _mm512_load_ps(mins[t * nb + b].0.as_ptr());
                    *acc = _mm512_fmadd_ps(m, _mm512_set1_ps(L::scaled_sum(a)), *acc);
                }
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
        macro_rules! pick {
            ($min:literal) => {
                match (tiles.len() / nb, act.len() / nb) {
                    (2, 4) => run_rows::<L, 2, 4, $min>(tiles, m, nb, act, out, stride),
                    (2, 3) => run_rows::<L, 2, 3, $min>(tiles, m, nb, act, out, stride),
                    (2, 2) => run_rows::<L, 2, 2, $min>(tiles, m, nb, act, out, stride),
                    (2, _) => run_rows::<L, 2, 1, $min>(tiles, m, nb, act, out, stride),
                    (_, 4) => run_rows::<L, 1, 4, $min>(tiles, m, nb, act, out, stride),
                    (_, 3) => run_rows::<L, 1, 3, $min>(tiles, m, nb, act, out, stride),
                    (_, 2) => run_rows::<L, 1, 2, $min>(tiles, m, nb, act, out, stride),
                    _ => run_rows::<L, 1, 1, $min>(tiles, m, nb, act, out, stride),
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
    unsafe fn run_rows<L: Layout, const T: usize, const R: usize, const MIN: bool>(
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
            if !MIN {
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
                let d = _mm512_loadu_ps(L::scales(&tiles[t * nb + b]).as_ptr());
                for r in 0..R {
                    let a = &act[r * nb + b];
                    let dy = _mm512_set1_ps(a.d);
                    acc[r] =
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r]), _mm512_mul_ps(d, dy), acc[r]);
                    if MIN {
                        let m = _mm512_load_ps(mins[t * nb + b].0.as_ptr());
                        acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(L::scaled_sum(a)), acc[r]);
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
    use super::super::blocks::{Mins, Tile4Block, Tile5Block, TileBlock};
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
        type Block = Tile4Block;
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
