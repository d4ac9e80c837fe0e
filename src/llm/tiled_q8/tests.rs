//! The tiles' conversions and products against candle's, on each kernel this CPU runs.
use super::activation::quantize_rows;
use super::blocks::{q6k_block, quantize_row};
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

#[test]
fn q6_k_is_held_as_q8_0_blocks_exactly_in_each_blocks_larger_half() {
    let (n, k) = (40, 512);
    let q = QTensor::quantize(&matrix(n, k, 11), GgmlDType::Q6K).unwrap();
    let exact = q.dequantize(&Device::Cpu).unwrap();
    let weights = exact.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let data = q.data().unwrap();
    let mut exact_halves = 0;
    for (s, block) in data.chunks(GgmlDType::Q6K.type_size()).enumerate() {
        for (b, (d, ints)) in q6k_block(block).iter().enumerate() {
            let want = &weights[256 * s + QK * b..][..QK];
            let held: Vec<f32> = ints.iter().map(|&i| d * i as f32).collect();
            // One half as the file has it, unless the halves' scales are equal and
            // opposite; the other within half of the block's step.
            let scales = [block[192 + 2 * b] as i8, block[192 + 2 * b + 1] as i8];
            let halves_exact = [0, 16].map(|h| held[h..h + 16] == want[h..h + 16]);
            assert!(
                halves_exact.contains(&true) || scales[0] as i32 == -(scales[1] as i32),
                "super-block {s}, block {b}"
            );
            exact_halves += halves_exact.iter().filter(|&&e| e).count();
            // Equal and opposite halves with a -32 in each hold one of them as 127.
            let off = held
                .iter()
                .zip(want)
                .filter(|(h, w)| (*h - *w).abs() > 0.5001 * d.abs())
                .count();
            let opposite = scales[0] as i32 == -(scales[1] as i32);
            assert!(off == 0 || (opposite && off == 1), "{s}/{b}: {off} off");
            for (h, w) in held.iter().zip(want) {
                assert!((h - w).abs() <= 1.0001 * d.abs(), "{s}/{b}: {h} vs {w}");
            }
        }
    }
    // The larger half of every block but the few of equal and opposite scales.
    assert!(
        exact_halves >= n * k / 32 * 9 / 10,
        "{exact_halves} exact halves"
    );
    if !runs_here() {
        eprintln!("neither AVX-512 VNNI nor AVX2 here: the tile kernels are not exercised");
        return;
    }
    on_each_kernel(|kernel| {
        let tiled = TiledQ8::from_parts(std::slice::from_ref(&q)).unwrap();
        assert!(matches!(tiled.weights, Weights::Bytes(_)));
        let held = tiled.dequantize().unwrap();
        for rows in [1, 5] {
            let x = activation_rows(rows, k);
            let got = tiled.forward(&x).unwrap();
            let want = x.matmul(&held.t().unwrap()).unwrap();
            // The activation's 8-bit rounding only: the weights are the tiles' own.
            let terms = x
                .abs()
                .unwrap()
                .matmul(&held.abs().unwrap().t().unwrap())
                .unwrap();
            let bound = 0.005
                * terms
                    .flatten_all()
                    .unwrap()
                    .max(0)
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap();
            assert!(max_gap(&got, &want) <= bound, "{kernel}: rows {rows}");
        }
    });
}
