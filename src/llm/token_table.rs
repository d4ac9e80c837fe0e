//! The token embedding table of a model whose output layer is not tied to it (or not held
//! exactly): rows dequantized as tokens are looked up.

use std::borrow::Cow;

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{Device, Tensor};

/// The token embedding table, kept in the file's (quantized) type: rows are dequantized
/// as tokens are looked up, so a 152k-token vocabulary costs its file size, not 545 MB of
/// f32.
pub struct Table {
    dtype: GgmlDType,
    width: usize,
    row_bytes: usize,
    data: Vec<u8>,
    device: Device,
}

impl Table {
    pub fn new(q: &QTensor, device: &Device) -> Result<Self> {
        let (rows, width) = q.shape().dims2()?;
        let dtype = q.dtype();
        if !width.is_multiple_of(dtype.block_size()) {
            bail!("token embedding width {width} is not a multiple of {dtype:?} blocks");
        }
        let row_bytes = width / dtype.block_size() * dtype.type_size();
        let data = q.data()?.into_owned();
        if data.len() != rows * row_bytes {
            bail!(
                "token embedding has {} bytes, expected {}",
                data.len(),
                rows * row_bytes
            );
        }
        Ok(Table {
            dtype,
            width,
            row_bytes,
            data,
            device: device.clone(),
        })
    }

    pub fn rows(&self) -> usize {
        self.data.len() / self.row_bytes
    }

    /// `(tokens.len(), width)` f32 rows.
    pub fn lookup(&self, tokens: &[u32]) -> Result<Tensor> {
        let mut out = Vec::with_capacity(tokens.len() * self.width);
        for &t in tokens {
            let t = t as usize;
            if t >= self.rows() {
                bail!("token id {t} is outside the vocabulary of {}", self.rows());
            }
            let bytes = &self.data[t * self.row_bytes..(t + 1) * self.row_bytes];
            let storage = QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, self.dtype)?;
            let row = QTensor::new(storage, (1, self.width))?.dequantize(&Device::Cpu)?;
            out.extend(row.flatten_all()?.to_vec1::<f32>()?);
        }
        Ok(Tensor::from_vec(
            out,
            (tokens.len(), self.width),
            &self.device,
        )?)
    }
}
