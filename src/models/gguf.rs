//! Opening GGUF files: the header, metadata and every tensor's extent checked up front so
//! that a truncated or foreign file fails with a message naming the file, not deep inside a
//! model constructor.
//!
//! Tensors are read with positioned reads, not through a memory map: every weight is
//! converted at load (re-quantized, fused, copied), so mapped pages would only add the whole
//! file to the process's peak memory on top of the converted weights.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;

/// GGUF `general.architecture` values the runtime (`llm`) has a family module for.
/// Adding a family means one module building a `decoder::Decoder` (or another `CausalLm`),
/// one arm in `Llm::load_path`, and its name here, so `models import` accepts it.
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["llama", "qwen2", "qwen3", "phi3", "gemma3"];

/// An opened, checked GGUF file.
pub struct GgufFile {
    pub path: PathBuf,
    pub content: Content,
    len: u64,
}

/// What `models import` and `models list` show of a GGUF file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GgufSummary {
    pub architecture: String,
    pub tensors: usize,
    pub bytes: u64,
}

impl GgufFile {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let mut reader = BufReader::new(file);
        let mut magic = [0u8; 4];
        if reader.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
            bail!(
                "{} is not a GGUF file (it does not start with the GGUF magic)",
                path.display()
            );
        }
        reader.seek(SeekFrom::Start(0))?;
        let content = Content::read(&mut reader).map_err(|e| {
            anyhow!(
                "{} is not a readable GGUF file ({e}); it may be truncated — fetch or copy it again",
                path.display()
            )
        })?;
        for (name, info) in &content.tensor_infos {
            let elems = info.shape.elem_count();
            let bytes = (elems / info.ggml_dtype.block_size() * info.ggml_dtype.type_size()) as u64;
            let end = content.tensor_data_offset + info.offset + bytes;
            if end > len {
                bail!(
                    "{} is truncated: tensor '{name}' ends at byte {end} but the file has {len} bytes; \
                     fetch or copy the file again",
                    path.display()
                );
            }
        }
        Ok(GgufFile {
            path: path.to_path_buf(),
            content,
            len,
        })
    }

    pub fn architecture(&self) -> Result<String> {
        Ok(self.string("general.architecture")?.to_string())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    fn need(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| anyhow!("{}: metadata key '{key}' is missing", self.path.display()))
    }

    pub fn string(&self, key: &str) -> Result<&str> {
        Ok(self.need(key)?.to_string()?.as_str())
    }

    pub fn u32(&self, key: &str) -> Result<u32> {
        let v = self.need(key)?;
        // Writers differ in the integer width they use for the same key.
        v.to_u32()
            .or_else(|_| v.to_u64().map(|x| x as u32))
            .or_else(|_| v.to_i32().map(|x| x as u32))
            .map_err(|e| anyhow!("{}: metadata key '{key}': {e}", self.path.display()))
    }

    pub fn f32(&self, key: &str) -> Result<f32> {
        let v = self.need(key)?;
        v.to_f32()
            .or_else(|_| v.to_f64().map(|x| x as f32))
            .map_err(|e| anyhow!("{}: metadata key '{key}': {e}", self.path.display()))
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads one tensor onto `device` (callable from several threads: each read opens its
    /// own handle).
    pub fn tensor(&self, name: &str, device: &Device) -> Result<QTensor> {
        let file = File::open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        self.content
            .tensor(&mut BufReader::new(file), name, device)
            .with_context(|| format!("{}: tensor '{name}'", self.path.display()))
    }

    pub fn summary(&self) -> Result<GgufSummary> {
        Ok(GgufSummary {
            architecture: self.architecture()?,
            tensors: self.content.tensor_infos.len(),
            bytes: self.len,
        })
    }
}

/// Checks that `path` is a complete GGUF file of an architecture Sextant can run.
pub fn inspect(path: &Path) -> Result<GgufSummary> {
    let f = GgufFile::open(path)?;
    let summary = f.summary()?;
    if !SUPPORTED_ARCHITECTURES.contains(&summary.architecture.as_str()) {
        bail!(
            "{}: architecture '{}' is not supported yet (supported: {})",
            path.display(),
            summary.architecture,
            SUPPORTED_ARCHITECTURES.join(", ")
        );
    }
    Ok(summary)
}
