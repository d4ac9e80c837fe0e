//! The two steps every protocol runs in (`Step`, `Pending`) and the report each keeps
//! of what decided it (`--explain`, the API's `decision`).

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;

use super::{checks, watch};
use crate::llm::Llm;

/// What a protocol's rules decided: the response, or the work left for the model.
pub enum Step<T, P> {
    Done(T),
    NeedsLlm(P),
}

/// The model's part of a protocol, with everything it needs (no knowledge base).
pub trait Pending {
    type Output;
    fn finish(self, llm: &mut Llm) -> Result<Self::Output>;

    /// `finish`, watched: the answer's text as it is generated, and cancellation. Only
    /// the answer formats have an answer to show early; other protocols just finish.
    fn finish_watched(self, llm: &mut Llm, watch: &mut watch::Watch) -> Result<Self::Output>
    where
        Self: Sized,
    {
        let _ = watch;
        self.finish(llm)
    }
}

impl<T, P: Pending<Output = T>> Step<T, P> {
    pub fn needs_llm(&self) -> bool {
        matches!(self, Step::NeedsLlm(_))
    }

    /// Both steps, for callers that already hold the model (tests, benchmarks).
    pub fn complete(self, llm: Option<&mut Llm>) -> Result<T> {
        match (self, llm) {
            (Step::Done(t), _) => Ok(t),
            (Step::NeedsLlm(p), Some(llm)) => p.finish(llm),
            (Step::NeedsLlm(_), None) => bail!("the rules did not decide and no LLM is loaded"),
        }
    }
}

/// What `--explain` prints for any protocol: timings, the decision, notes and the
/// validation report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub mode: String,
    pub retrieval_ms: f64,
    pub prompt_ms: f64,
    pub generation_ms: f64,
    pub validation_ms: f64,
    pub best_score: f64,
    pub domain_score: f64,
    /// The question's words, looked up in the KB and the passages read.
    pub terms: Vec<super::evidence::coverage::Term>,
    pub decision: String,
    /// Share of the answer's content words found in the retrieved (or cited) chunks.
    pub grounding_share: f64,
    pub rules: Vec<checks::RuleResult>,
    /// Sentences the model wrote that the passages it read do not support, taken out of
    /// the answer (`support`).
    pub removed: Vec<super::support::Removed>,
    /// The question's words the documentation found does not mention, named in a note
    /// before the answer (`gap`).
    pub unmentioned: Vec<String>,
    pub notes: Vec<String>,
    /// The schema handed to the decoder, when the LLM ran.
    pub decoder_schema: Option<Value>,
    /// The documentation text the model was shown to answer from (the reader's passages,
    /// the candidate sentences, the chunks): what its answer can draw on. Empty when no
    /// model answered.
    #[serde(skip)]
    pub shown_to_model: String,
    /// The retrieved chunks (with file and anchor, which the response formats omit), so
    /// a UI can turn cited ids and sections into links.
    #[serde(skip)]
    pub hits: Vec<crate::kb::search::Hit>,
}
