//! The model store as the desktop's model list sees it: what is there (with the one in
//! use), switching the LLM, and importing a GGUF with the checks `sextant models import`
//! makes.

use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::model::LlmSlot;
use super::{Service, ServiceError};
use crate::llm::{Llm, LoadOptions};
use crate::models::{ModelError, Role};

fn model_error(e: ModelError) -> ServiceError {
    match e {
        ModelError::Unknown { .. } => ServiceError::NotFound(e.to_string()),
        ModelError::Missing { .. } | ModelError::ShaMismatch { .. } => {
            ServiceError::ModelUnavailable(e.to_string())
        }
        ModelError::Io(_) | ModelError::Invalid(_) | ModelError::NoneForRole { .. } => {
            ServiceError::BadRequest(e.to_string())
        }
    }
}

impl Service {
    /// The models of the store, each with `in_use`, and the two in use by name.
    pub(super) fn models(&self) -> Result<Value, ServiceError> {
        let llm = self.llm_name();
        let list: Vec<Value> = self
            .store
            .catalog()
            .into_iter()
            .map(|entry| {
                let in_use = match entry.role {
                    Role::Llm => entry.name == llm,
                    Role::Embedding => entry.name == self.embedder.name,
                };
                let mut v = serde_json::to_value(&entry).unwrap_or_default();
                v["in_use"] = json!(in_use);
                v
            })
            .collect();
        Ok(json!({
            "models": list,
            "llm": llm,
            "embedder": self.embedder.name,
            "dir": self.store.dir(),
        }))
    }

    /// Answers with the LLM `name` from here on: verified, loaded (so a file the engine
    /// cannot run fails here, naming why), then swapped in once a running generation ends.
    /// The embedder is the KB's and is not switched here.
    pub(super) fn use_model(&self, name: &str) -> Result<Value, ServiceError> {
        let model = self
            .store
            .resolve(Role::Llm, Some(name))
            .map_err(model_error)?;
        let load = LoadOptions::from_env()?;
        let llm = Llm::load(&model, &load).map_err(|e| {
            ServiceError::ModelUnavailable(format!(
                "cannot use '{name}': {e:#}; the model in use stays {}",
                self.llm_name()
            ))
        })?;
        let loaded = llm.name.clone();
        *self.llm.lock().unwrap_or_else(|p| p.into_inner()) = LlmSlot::Loaded(Box::new(llm));
        *self.llm_name.lock().unwrap_or_else(|p| p.into_inner()) = loaded;
        self.llm_available.store(true, Ordering::SeqCst);
        self.models()
    }

    /// Copies a GGUF file (an LLM) or a BERT folder (an embedder) into the store under
    /// `name` (default: the file's name), with its sha256 recorded; a file of an
    /// architecture or quantization the engine cannot run is refused, naming it.
    pub(super) fn import_model(
        &self,
        path: &str,
        name: Option<&str>,
    ) -> Result<Value, ServiceError> {
        let source = Path::new(path);
        if !source.is_absolute() {
            return Err(ServiceError::BadRequest(format!(
                "'{path}' is not an absolute path: give the model file's full path"
            )));
        }
        let spec = self.store.import(source, name).map_err(model_error)?;
        let mut out = self.models()?;
        out["imported"] = json!(spec.name);
        Ok(out)
    }
}
