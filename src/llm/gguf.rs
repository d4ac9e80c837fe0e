//! Opening GGUF files: memory-mapped, with the header, metadata and every tensor's extent
//! checked up front so that a truncated or foreign file fails with a message naming the
//! file, not deep inside a model constructor.

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;
use memmap2::Mmap;

/// An opened, checked GGUF file.
pub struct GgufFile {
    pub path: PathBuf,
    pub content: Content,
    mmap: Mmap,
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
        // SAFETY: the model store never rewrites a file in place (pull and import write a
        // temp file and rename), so the mapping is not mutated under us.
        let mmap = unsafe { Mmap::map(&file) }
            .with_context(|| format!("cannot memory-map {}", path.display()))?;
        if mmap.len() < 4 || &mmap[..4] != b"GGUF" {
            bail!(
                "{} is not a GGUF file (it does not start with the GGUF magic)",
                path.display()
            );
        }
        let content = Content::read(&mut Cursor::new(&mmap[..])).map_err(|e| {
            anyhow!(
                "{} is not a readable GGUF file ({e}); it may be truncated — fetch or copy it again",
                path.display()
            )
        })?;
        let len = mmap.len() as u64;
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
            mmap,
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

    /// Reads one tensor (from the memory map) onto `device`.
    pub fn tensor(&self, name: &str, device: &Device) -> Result<QTensor> {
        self.content
            .tensor(&mut Cursor::new(&self.mmap[..]), name, device)
            .with_context(|| format!("{}: tensor '{name}'", self.path.display()))
    }

    pub fn summary(&self) -> Result<GgufSummary> {
        Ok(GgufSummary {
            architecture: self.architecture()?,
            tensors: self.content.tensor_infos.len(),
            bytes: self.mmap.len() as u64,
        })
    }
}

/// Checks that `path` is a complete GGUF file of an architecture Sextant can run.
pub fn inspect(path: &Path) -> Result<GgufSummary> {
    let f = GgufFile::open(path)?;
    let summary = f.summary()?;
    if !super::SUPPORTED_ARCHITECTURES.contains(&summary.architecture.as_str()) {
        bail!(
            "{}: architecture '{}' is not supported yet (supported: {})",
            path.display(),
            summary.architecture,
            super::SUPPORTED_ARCHITECTURES.join(", ")
        );
    }
    Ok(summary)
}
