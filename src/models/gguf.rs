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

/// The tensor types candle (and so the runtime) reads.
const SUPPORTED_TYPES: &str =
    "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";

/// What `models import` and `models list` show of a GGUF file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GgufSummary {
    pub architecture: String,
    /// The file's quantization as llama.cpp names it (`general.file_type`), else the
    /// type most of its tensors have.
    pub quantization: String,
    pub tensors: usize,
    pub bytes: u64,
}

/// GGML tensor type codes (ggml.h `ggml_type`) by name, for messages.
fn ggml_type_name(code: u32) -> String {
    const NAMES: &[&str] = &[
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K",
        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16", "Q4_0_4_4",
        "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("#{code}"), |n| n.to_string())
}

/// llama.cpp's `general.file_type` (`llama_ftype`) by name.
fn file_type_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        32 => "BF16",
        _ => return None,
    })
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
            let e = e.to_string();
            let unknown = e
                .split_once("unknown dtype for tensor ")
                .map(|(_, code)| code.split_whitespace().next().unwrap_or_default());
            match unknown {
                // A tensor type the runtime has no kernel for (the IQ and TQ families).
                Some(code) => anyhow!(
                    "{}: its weights use the GGML type {} ({code}), which Sextant cannot run \
                     (supported: {}); convert the model to one of those, e.g. Q4_K_M or Q8_0 \
                     with llama.cpp's llama-quantize",
                    path.display(),
                    ggml_type_name(code.trim().parse().unwrap_or(u32::MAX)),
                    SUPPORTED_TYPES
                ),
                None => anyhow!(
                    "{} is not a readable GGUF file ({e}); it may be truncated — fetch or copy it again",
                    path.display()
                ),
            }
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

    /// Drops the tokenizer's vocabulary, merges, scores and types from the metadata once
    /// the tokenizer is built from them: some 100,000 small strings (6 MB for SmolLM2)
    /// that would otherwise still be held while the weights load. The vocabulary's size
    /// is kept as `<arch>.vocab_size`, which `DecoderConfig` reads in its place.
    pub fn release_tokenizer_metadata(&mut self) -> Result<()> {
        let arch = self.architecture()?;
        let metadata = &mut self.content.metadata;
        if let Some(tokens) = metadata.remove("tokenizer.ggml.tokens") {
            let n = tokens.to_vec()?.len() as u32;
            metadata.insert(format!("{arch}.vocab_size"), Value::U32(n));
        }
        for key in [
            "tokenizer.ggml.merges",
            "tokenizer.ggml.scores",
            "tokenizer.ggml.token_type",
        ] {
            metadata.remove(key);
        }
        Ok(())
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
        let quantization = match self.u32("general.file_type").ok().and_then(file_type_name) {
            Some(name) => name.to_string(),
            None => {
                let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
                for info in self.content.tensor_infos.values() {
                    *counts.entry(format!("{:?}", info.ggml_dtype)).or_default() += 1;
                }
                counts
                    .into_iter()
                    .max_by_key(|(_, n)| *n)
                    .map_or_else(|| "none".into(), |(t, _)| t.to_uppercase())
            }
        };
        Ok(GgufSummary {
            architecture: self.architecture()?,
            quantization,
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
