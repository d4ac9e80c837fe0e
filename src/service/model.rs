//! The service's LLM: loaded at start, or on first use for shells that answer searches
//! before any model is needed (`sextant mcp`), or absent with the reason and the fix.

use super::ServiceError;
use crate::llm::{Llm, LoadOptions};
use crate::models::VerifiedModel;

pub(super) enum LlmSlot {
    Loaded(Box<Llm>),
    /// Verified (sha256) at start, loaded by the first request that needs it.
    Verified(Box<VerifiedModel>, LoadOptions),
    /// The model could not be resolved: why, with the fix. Requests that need it fail with
    /// this; the others (search, reading, extractive answers) go on.
    Missing(String),
}

impl LlmSlot {
    pub(super) fn available(&self) -> bool {
        !matches!(self, LlmSlot::Missing(_))
    }

    /// The model, loading it first if it is not yet in memory.
    pub(super) fn get(&mut self) -> Result<&mut Llm, ServiceError> {
        if let LlmSlot::Verified(model, opts) = self {
            let llm = Llm::load(model, opts).map_err(|e| {
                ServiceError::ModelUnavailable(format!(
                    "cannot load the LLM {}: {e:#}",
                    model.main_file().display()
                ))
            })?;
            *self = LlmSlot::Loaded(Box::new(llm));
        }
        match self {
            LlmSlot::Loaded(llm) => Ok(llm),
            LlmSlot::Missing(why) => Err(ServiceError::ModelUnavailable(why.clone())),
            LlmSlot::Verified(..) => unreachable!("loaded above"),
        }
    }
}
