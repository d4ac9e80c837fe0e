//! Where a model family's weights come from (a GGUF file or a seeded random initialisation)
//! and the form they take in memory: the linear layers and the token embedding.
//!
//! Policy, per linear layer: a weight type with a SIMD kernel in candle (Q4_0, Q8_0 and the
//! K-quants), or in `q5_0` (Q5_0 on AVX2), is used as the file stores it (Q8_0 through
//! `q8_0`'s four-row dot product on AVX2); any other (Q4_1, Q5_0, Q5_1, f16, …) is
//! re-quantized once at load to Q8_0, which has one and loses nothing measurable against a
//! 4–5-bit source. On CPUs with AVX-512 VNNI, Q8_0, Q5_0, Q4_1 and re-quantized layers go
//! to `tiled_q8` instead (Q5_0 and Q4_1 exactly, others as Q8_0). What was re-quantized is
//! counted in `WeightReport` and shown by `sextant bench generate`. f32 copies for prompt
//! processing are kept only while they fit the memory budget (`PREFILL_F32_BUDGET`): they
//! make a 135M model's prompts several times faster than candle's quantized matmul, but
//! would cost 2 GB for a 0.5B model, which instead dequantizes each weight for the
//! duration of one prompt-sized matmul. Tiled layers multiply prompts themselves, faster
//! than either; those whose type converts exactly (Q5_0, Q8_0, Q4_1), and Q6_K layers
//! (held as Q8_0 tiles, each block's larger half exactly), make no copy.

use std::borrow::Cow;
use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{DType, Device, Module, Tensor};

use super::tiled_q8::{self, TiledQ8};
use super::LoadOptions;
use crate::models::gguf::GgufFile;

/// The most memory f32 prefill copies may take (all linear layers together).
pub const PREFILL_F32_BUDGET: usize = 768 << 20;

/// Below this many rows the quantized path is faster than f32 GEMM (GEMV is bandwidth
/// bound; the f32 weights are 4× the bytes of Q8_0).
const PREFILL_F32_MIN_ROWS: usize = 8;

/// From this many rows on, a layer without an f32 copy dequantizes its weight for the call.
const PREFILL_DEQUANTIZE_MIN_ROWS: usize = 32;

/// Weight types whose matmul has a SIMD kernel in candle on x86-64 (AVX2) and aarch64.
pub fn has_fast_kernel(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q4_0
            | GgmlDType::Q8_0
            | GgmlDType::Q2K
            | GgmlDType::Q3K
            | GgmlDType::Q4K
            | GgmlDType::Q5K
            | GgmlDType::Q6K
    )
}

/// Weights of one model, by GGUF tensor name.
pub trait WeightSource: Sync {
    /// A tensor as f32 (norms, biases, and weights that get re-quantized).
    fn get(&self, name: &str) -> Result<Tensor>;
    /// A tensor as stored (quantized), on the CPU.
    fn quantized(&self, name: &str) -> Result<QTensor>;
    fn has(&self, name: &str) -> bool;
    /// A tensor's stored type (by default by reading it).
    fn dtype(&self, name: &str) -> Result<GgmlDType> {
        Ok(self.quantized(name)?.dtype())
    }
}

pub struct GgufWeights<'a> {
    pub file: &'a GgufFile,
    pub device: Device,
}

impl WeightSource for GgufWeights<'_> {
    fn get(&self, name: &str) -> Result<Tensor> {
        // Dequantize on the CPU: re-quantisation and fusing happen there anyway.
        let t = self.quantized(name)?.dequantize(&Device::Cpu)?;
        Ok(t.to_device(&self.device)?)
    }
    fn quantized(&self, name: &str) -> Result<QTensor> {
        self.file.tensor(name, &Device::Cpu)
    }
    fn has(&self, name: &str) -> bool {
        self.file.has_tensor(name)
    }
    fn dtype(&self, name: &str) -> Result<GgmlDType> {
        match self.file.content.tensor_infos.get(name) {
            Some(info) => Ok(info.ggml_dtype),
            None => Ok(self.quantized(name)?.dtype()),
        }
    }
}

/// What the loader did with the file's weight types: `(from, to) -> tensors`.
#[derive(Debug, Default, Clone)]
pub struct WeightReport {
    pub conversions: BTreeMap<(String, String), usize>,
    pub prefill_f32: bool,
}

impl WeightReport {
    fn record(&mut self, from: GgmlDType, to: &str, n: usize) {
        *self
            .conversions
            .entry((format!("{from:?}"), to.to_string()))
            .or_default() += n;
    }

    fn merge(&mut self, other: &WeightReport) {
        for (k, v) in &other.conversions {
            *self.conversions.entry(k.clone()).or_default() += v;
        }
    }

    pub fn merged(reports: impl IntoIterator<Item = WeightReport>) -> WeightReport {
        let mut all = WeightReport::default();
        for r in reports {
            all.merge(&r);
        }
        all
    }

    /// One line, e.g. `Q6K as is ×12, Q5_0→Q8_0 ×133; prompt: quantized`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .conversions
            .iter()
            .map(|((from, to), n)| {
                if from == to {
                    format!("{from} as is ×{n}")
                } else {
                    format!("{from}→{to} ×{n}")
                }
            })
            .collect();
        format!(
            "{}; prompt: {}",
            parts.join(", "),
            if self.prefill_f32 {
                "f32 copies"
            } else if self.conversions.keys().any(|(_, to)| to.contains("tiles")) {
                "tiles multiply it, other types dequantized per call"
            } else {
                "dequantized per call"
            }
        )
    }
}

/// Which of a prompt's rows a layer multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptRows {
    /// The last row only (the output layer): the decode weights serve it, never a copy.
    Last,
    /// Every row; `f32_copy`: an f32 copy serves them where tiles do not (a small model,
    /// within `PREFILL_F32_BUDGET`).
    Every { f32_copy: bool },
}

/// A linear layer: weights for decoding (quantized) and, optionally, an f32 copy for
/// prompt processing.
pub struct Linear {
    decode: Decode,
    prefill: Option<Tensor>,
    /// Input width of the decode weights: the real width, or that rounded up to a multiple
    /// of 256 with zero columns (see `decode_pad_k`).
    decode_k: usize,
    bias: Option<Tensor>,
}

/// The weights one-row products (token by token generation) run on.
enum Decode {
    Candle(QMatMul),
    /// 16-row tiles (`tiled_q8`).
    Tiled(TiledQ8),
}

/// Whether a layer of these types runs on `tiled_q8`: on CPUs with AVX-512 VNNI or AVX2
/// (`tiled_q8::runs_here`), every weight the tiles hold exactly (Q8_0, Q5_0, Q4_1, Q4_K: candle's repacked Q4_K tiles
/// would sit beside the file's blocks), that would be re-quantized either way (types
/// candle has no kernel for), or that multiplies prompts where candle's path would
/// dequantize it per call (Q6_K: `tiled_q8::requantized_for_prompts`). Other K-quants,
/// Q4_0, and a Q6_K output layer (one row a step) keep candle's kernels: they read fewer
/// bytes.
/// `SEXTANT_TILES=0` turns tiles off, for comparison.
fn use_tiles(
    dtypes: &[GgmlDType],
    opts: &LoadOptions,
    device: &Device,
    prompt_rows: PromptRows,
) -> bool {
    let off = std::env::var("SEXTANT_TILES").is_ok_and(|v| v == "0");
    if off || !device.is_cpu() || !tiled_q8::runs_here() {
        return false;
    }
    let first = dtypes[0];
    match opts.decode_dtype {
        Some(GgmlDType::Q8_0) => true,
        Some(_) => false,
        None => {
            let mixed = dtypes.iter().any(|d| *d != first);
            let prompts = matches!(prompt_rows, PromptRows::Every { .. })
                && tiled_q8::requantized_for_prompts(first);
            mixed || tiled_q8::exact_from(first) || prompts || !has_fast_kernel(first)
        }
    }
}

/// candle's repacked Q8_0 kernels (AVX512-VNNI / AVX-VNNI `vpdpbusd`, 16 columns per
/// instruction) need the input width to be a multiple of 256; otherwise the generic AVX2
/// dot product runs, about 3× slower per weight. SmolLM2's width is 576, so zero-padding it
/// to 768 costs a third more multiply-adds and still wins clearly (docs/PERFORMANCE.md).
/// Returns the width to pad to, if padding applies.
fn decode_pad_k(k: usize, n: usize, dtype: GgmlDType) -> Option<usize> {
    let vnni = {
        #[cfg(target_arch = "x86_64")]
        {
            (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
                || is_x86_feature_detected!("avxvnni")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    };
    let off = std::env::var("SEXTANT_PAD_K").is_ok_and(|v| v == "0");
    if !vnni || off || dtype != GgmlDType::Q8_0 || k.is_multiple_of(256) || !n.is_multiple_of(16) {
        return None;
    }
    Some(k.div_ceil(256) * 256)
}

/// Stacks quantized matrices of one type and width by rows (their blocks are row-major,
/// so this is a byte concatenation).
fn stack_rows(parts: &[QTensor]) -> Result<QTensor> {
    let dtype = parts[0].dtype();
    let k = parts[0].shape().dims2()?.1;
    let mut bytes = Vec::new();
    let mut rows = 0;
    for p in parts {
        let (n, pk) = p.shape().dims2()?;
        if p.dtype() != dtype || pk != k {
            bail!("cannot stack {:?}×{pk} onto {dtype:?}×{k}", p.dtype());
        }
        bytes.extend_from_slice(&p.data()?);
        rows += n;
    }
    let storage = QStorage::from_data(Cow::Owned(bytes), &Device::Cpu, dtype)?;
    Ok(QTensor::new(storage, (rows, k))?)
}

impl Linear {
    /// The layer whose weight is the row-wise concatenation of `names` (fused Q/K/V or
    /// gate/up), with the matching biases when `bias` is set.
    pub fn load(
        src: &dyn WeightSource,
        names: &[String],
        bias: bool,
        opts: &LoadOptions,
        prompt_rows: PromptRows,
        device: &Device,
        report: &mut WeightReport,
    ) -> Result<Self> {
        let parts = names
            .iter()
            .map(|n| src.quantized(&format!("{n}.weight")))
            .collect::<Result<Vec<_>>>()?;
        let dtype = parts[0].dtype();
        let dtypes: Vec<GgmlDType> = parts.iter().map(|p| p.dtype()).collect();
        let tiles = parts[0].shape().dims2()?.1.is_multiple_of(32)
            && use_tiles(&dtypes, opts, device, prompt_rows);
        let fast_q5_0 = dtype == GgmlDType::Q5_0 && super::avx2_kernels();
        let native = opts.decode_dtype.is_none()
            && device.is_cpu()
            && (has_fast_kernel(dtype) || fast_q5_0)
            && parts.iter().all(|p| p.dtype() == dtype);
        let dense = |parts: &[QTensor]| -> Result<Tensor> {
            let ts = parts
                .iter()
                .map(|p| Ok(p.dequantize(&Device::Cpu)?.to_device(device)?))
                .collect::<Result<Vec<_>>>()?;
            Ok(Tensor::cat(&ts, 0)?)
        };
        let (n, k) = (
            parts
                .iter()
                .map(|p| p.shape().dims2().map(|d| d.0))
                .sum::<candle_core::Result<usize>>()?,
            parts[0].shape().dims2()?.1,
        );
        // Tiles multiply prompts themselves, faster than an f32 copy does: where the
        // file's type converts exactly (Q5_0, Q8_0, a matrix all of Q4_1) no copy is made
        // unless asked for (`SEXTANT_PREFILL_F32=1`). SmolLM2's Q4_1 as Q4_1 tiles: 722
        // instead of 417 prompt tok/s, 330 instead of 737 MB (docs/PERFORMANCE.md).
        let exact = dtypes.iter().all(|&t| tiled_q8::exact_from(t))
            && (dtypes.iter().all(|&t| t == dtype)
                || !dtypes
                    .iter()
                    .any(|t| matches!(t, GgmlDType::Q4_1 | GgmlDType::Q4K)));
        // A type re-quantized for prompts' sake gets no copy either: prompts and
        // generation then multiply the same weights.
        let for_prompts = dtypes.iter().all(|&t| tiled_q8::requantized_for_prompts(t));
        let copy = !tiles || !(exact || for_prompts) || opts.prefill_f32 == Some(true);
        let prefill_f32 = prompt_rows == PromptRows::Every { f32_copy: true };
        let prefill = if prefill_f32 && copy {
            Some(dense(&parts)?)
        } else {
            None
        };
        let (decode, decode_k) = if tiles {
            let held = tiled_q8::held_as(&dtypes);
            for p in &parts {
                report.record(p.dtype(), held, 1);
            }
            (Decode::Tiled(TiledQ8::from_parts(&parts)?), k)
        } else if native {
            for p in &parts {
                report.record(p.dtype(), &format!("{dtype:?}"), 1);
            }
            let q = if parts.len() == 1 {
                parts.into_iter().next().expect("one part")
            } else {
                stack_rows(&parts)?
            };
            let q = match q.dtype() {
                GgmlDType::Q5_0 if fast_q5_0 => super::q5_0::from_qtensor(&q)?,
                GgmlDType::Q8_0 if super::avx2_kernels() => super::q8_0::from_qtensor(&q)?,
                _ => q,
            };
            (Decode::Candle(QMatMul::from_qtensor(q)?), k)
        } else {
            let target = opts.decode_dtype.unwrap_or(GgmlDType::Q8_0);
            for p in &parts {
                report.record(p.dtype(), &format!("{target:?}"), 1);
            }
            let w = match &prefill {
                Some(w) => w.clone(),
                None => dense(&parts)?,
            };
            let pad = if device.is_cpu() {
                decode_pad_k(k, n, target)
            } else {
                None
            };
            let wd = match pad {
                Some(kp) => w.pad_with_zeros(1, 0, kp - k)?,
                None => w,
            };
            let decode = match target {
                GgmlDType::F32 => QMatMul::Tensor(wd),
                GgmlDType::F16 => QMatMul::TensorF16(wd.to_dtype(DType::F16)?),
                GgmlDType::Q8_0 if device.is_cpu() && super::avx2_kernels() => {
                    let q = QTensor::quantize(&wd, GgmlDType::Q8_0)?;
                    QMatMul::from_qtensor(super::q8_0::from_qtensor(&q)?)?
                }
                dt => QMatMul::from_qtensor(QTensor::quantize(&wd, dt)?)?,
            };
            (Decode::Candle(decode), pad.unwrap_or(k))
        };
        let bias = if bias {
            let bs = names
                .iter()
                .map(|n| src.get(&format!("{n}.bias")))
                .collect::<Result<Vec<_>>>()?;
            Some(Tensor::cat(&bs, 0)?.unsqueeze(0)?)
        } else {
            None
        };
        // f32 decode weights are the prefill copy already.
        let prefill = prefill.filter(|_| opts.decode_dtype != Some(GgmlDType::F32));
        Ok(Linear {
            decode,
            prefill,
            decode_k,
            bias,
        })
    }

    /// The weight's rows `ids` as f32 `(ids.len(), k)`, where they are held exactly as the
    /// file has them (tiles converted without loss from `dtype`, the file's type): a tied
    /// output layer then serves as the token embedding. None otherwise.
    pub fn rows_exactly(&self, ids: &[u32], dtype: GgmlDType) -> Option<Result<Tensor>> {
        let Decode::Tiled(t) = &self.decode else {
            return None;
        };
        if !tiled_q8::exact_from(dtype) || self.bias.is_some() {
            return None;
        }
        let mut out = Vec::with_capacity(ids.len() * self.decode_k);
        for &id in ids {
            if id as usize >= t.outputs() {
                return Some(Err(anyhow::anyhow!(
                    "token id {id} is outside the vocabulary of {}",
                    t.outputs()
                )));
            }
            t.append_row(id as usize, &mut out);
        }
        Some(Tensor::from_vec(out, (ids.len(), self.decode_k), &Device::Cpu).map_err(Into::into))
    }

    /// Whether prompts use an f32 copy of the weight.
    pub fn has_prefill_copy(&self) -> bool {
        self.prefill.is_some()
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (rows, k) = x.dims2()?;
        let y = match (&self.prefill, &self.decode) {
            (Some(w), _) if rows >= PREFILL_F32_MIN_ROWS => x.matmul(&w.t()?)?,
            // Tiles multiply a prompt's rows themselves, each weight load serving four rows:
            // faster than the f32 GEMM below (docs/PERFORMANCE.md).
            (_, Decode::Tiled(t)) => t.forward(x)?,
            // Without copies, a prompt's rows amortise dequantizing the weight for one f32
            // GEMM: faster than the quantized matmul, and f32 copies would cost gigabytes
            // more for a little more speed (docs/PERFORMANCE.md).
            (None, Decode::Candle(q)) if rows >= PREFILL_DEQUANTIZE_MIN_ROWS => {
                let w = match q {
                    QMatMul::QTensor(q) if x.device().is_cpu() => dequantize_parallel(q)?,
                    QMatMul::QTensor(q) => q.dequantize(x.device())?,
                    QMatMul::Tensor(t) => t.clone(),
                    QMatMul::TensorF16(t) => t.to_dtype(DType::F32)?,
                };
                let w = if self.decode_k > k {
                    w.narrow(1, 0, k)?
                } else {
                    w
                };
                x.matmul(&w.t()?)?
            }
            (_, Decode::Candle(q)) if self.decode_k > k => {
                q.forward(&x.pad_with_zeros(1, 0, self.decode_k - k)?)?
            }
            (_, Decode::Candle(q)) => q.forward(x)?,
        };
        Ok(match &self.bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        })
    }
}

/// Dequantizes a CPU matrix to f32 on all threads (candle's `dequantize` uses one).
fn dequantize_parallel(q: &QTensor) -> Result<Tensor> {
    use rayon::prelude::*;
    let (rows, k) = q.shape().dims2()?;
    let dtype = q.dtype();
    let row_bytes = k / dtype.block_size() * dtype.type_size();
    let data = q.data()?;
    const ROWS_PER_TASK: usize = 64;
    let mut out = vec![0f32; rows * k];
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .zip(data.par_chunks(ROWS_PER_TASK * row_bytes))
        .try_for_each(|(dst, src)| -> Result<()> {
            if to_float_in_place(dtype, src, dst) {
                return Ok(());
            }
            let n = src.len() / row_bytes;
            let storage = QStorage::from_data(Cow::Borrowed(src), &Device::Cpu, dtype)?;
            let t = QTensor::new(storage, (n, k))?.dequantize(&Device::Cpu)?;
            dst.copy_from_slice(&t.flatten_all()?.to_vec1::<f32>()?);
            Ok(())
        })?;
    Ok(Tensor::from_vec(out, (rows, k), &Device::Cpu)?)
}

/// Dequantizes `src` (whole blocks of `dtype`) straight into `dst` with candle's block
/// routine, where `src` is aligned for the block type: no temporary tensor and no two
/// copies of each prompt-sized weight (memset and memmove showed in `sextant eval`'s
/// profile). False when it cannot, and
/// the caller goes through a `QTensor`.
fn to_float_in_place(dtype: GgmlDType, src: &[u8], dst: &mut [f32]) -> bool {
    use candle_core::quantized::k_quants::*;
    fn blocks<T: GgmlType>(src: &[u8], dst: &mut [f32]) -> bool {
        let size = std::mem::size_of::<T>();
        if !src.len().is_multiple_of(size)
            || src.len() / size * T::BLCK_SIZE != dst.len()
            || src.as_ptr().align_offset(std::mem::align_of::<T>()) != 0
        {
            return false;
        }
        // SAFETY: candle's blocks are plain data (f16s and byte arrays: every bit pattern
        // is valid), `src` is aligned for `T` and holds exactly `len / size` of them.
        let xs = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const T, src.len() / size) };
        T::to_float(xs, dst);
        true
    }
    match dtype {
        GgmlDType::Q4_0 => blocks::<BlockQ4_0>(src, dst),
        GgmlDType::Q4_1 => blocks::<BlockQ4_1>(src, dst),
        GgmlDType::Q5_0 => blocks::<BlockQ5_0>(src, dst),
        GgmlDType::Q5_1 => blocks::<BlockQ5_1>(src, dst),
        GgmlDType::Q8_0 => blocks::<BlockQ8_0>(src, dst),
        GgmlDType::Q2K => blocks::<BlockQ2K>(src, dst),
        GgmlDType::Q3K => blocks::<BlockQ3K>(src, dst),
        GgmlDType::Q4K => blocks::<BlockQ4K>(src, dst),
        GgmlDType::Q5K => blocks::<BlockQ5K>(src, dst),
        GgmlDType::Q6K => blocks::<BlockQ6K>(src, dst),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-place path gives candle's dequantization exactly, and is the one taken.
    #[test]
    fn dequantize_parallel_matches_candle() {
        let (rows, k) = (200, 512);
        let values: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * (1.0 + (i % 13) as f32))
            .collect();
        let x = Tensor::from_vec(values, (rows, k), &Device::Cpu).unwrap();
        for dtype in [
            GgmlDType::Q5_0,
            GgmlDType::Q8_0,
            GgmlDType::Q4K,
            GgmlDType::Q6K,
        ] {
            let q = QTensor::quantize(&x, dtype).unwrap();
            let want: Vec<f32> = q
                .dequantize(&Device::Cpu)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let got: Vec<f32> = dequantize_parallel(&q)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            assert_eq!(got, want, "{dtype:?}");
            let data = q.data().unwrap();
            let mut dst = vec![0f32; rows * k];
            assert!(
                to_float_in_place(dtype, &data, &mut dst),
                "{dtype:?} in place"
            );
            assert_eq!(dst, want, "{dtype:?}");
            // A length that is not whole blocks is refused, not read past.
            assert!(!to_float_in_place(dtype, &data[1..], &mut dst));
        }
    }
}
