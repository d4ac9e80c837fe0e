//! What the store holds, as a person choosing a model sees it: each model's purpose in
//! plain words, its family and quantization, its size, and whether its files verify.

use std::fs;

use serde::Serialize;

use super::{gguf, ModelStore, Role};

#[derive(Debug, Clone, Serialize)]
pub struct ModelEntry {
    pub name: String,
    pub role: Role,
    /// What it is for: the manifest's word ("reader", "fast", "embedder", …), or
    /// "imported".
    pub purpose: String,
    /// The architecture (`qwen2`, `llama`, `gemma3`, `bert`), or "unknown" when its files
    /// are missing or unreadable.
    pub family: String,
    /// llama.cpp's name for a GGUF file's quantization (`Q4_K_M`), or the weights' type.
    pub quantization: String,
    pub bytes: u64,
    /// "verified", "missing" or "corrupt" (`ModelStore::status`).
    pub state: &'static str,
    pub detail: String,
    pub imported: bool,
}

impl ModelStore {
    /// Every model of the store with what a person needs to choose one.
    pub fn catalog(&self) -> Vec<ModelEntry> {
        let specs = self.specs();
        self.status()
            .into_iter()
            .zip(specs)
            .map(|(status, spec)| {
                let dir = self.model_dir(&spec.name);
                let main = dir.join(&spec.files[0].file);
                let (family, quantization) = match spec.role {
                    Role::Llm => gguf::GgufFile::open(&main)
                        .and_then(|f| f.summary())
                        .map(|s| (s.architecture, s.quantization))
                        .unwrap_or_else(|_| ("unknown".into(), "unknown".into())),
                    Role::Embedding => {
                        let config: serde_json::Value = fs::read_to_string(dir.join("config.json"))
                            .ok()
                            .and_then(|t| serde_json::from_str(&t).ok())
                            .unwrap_or_default();
                        let family = config["model_type"].as_str().unwrap_or("unknown");
                        let dtype = config["torch_dtype"].as_str().unwrap_or("float32");
                        (family.to_string(), dtype.replace("float", "F"))
                    }
                };
                let purpose = match (&spec.purpose, spec.is_default(), spec.role) {
                    (Some(p), _, _) => p.clone(),
                    (None, false, _) => "imported: a model you brought".into(),
                    (None, true, Role::Embedding) => {
                        "embedder: turns text into search vectors".into()
                    }
                    (None, true, Role::Llm) => "LLM".into(),
                };
                ModelEntry {
                    name: spec.name.clone(),
                    role: spec.role,
                    purpose,
                    family,
                    quantization,
                    bytes: status.bytes,
                    state: status.state,
                    detail: status.detail,
                    imported: !spec.is_default(),
                }
            })
            .collect()
    }
}
