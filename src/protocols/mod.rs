//! The response formats of `../shared/seeds/`, one module each: `rag` and `navigator`
//! (answers), `section_tool` (the navigate_to_section call), `routing` and `interview`.
//! Each owns its prompt and its validation; the schemas live in one registry
//! (`crate::schemas`), compiled once.
//!
//! Every protocol runs in two steps. `prepare` gathers evidence and decides what it can
//! by written rules, returning `Step::Done(response)` or `Step::NeedsLlm(pending)`; only
//! then does a caller load (or queue for) the model and call `pending.finish(llm)`. The
//! pending value owns everything the model step needs, so a caller can release the
//! knowledge base before the (slow) generation starts.

pub mod checks;
pub mod evidence;
pub mod grounded;
pub mod interview;
pub mod navigator;
pub mod rag;
pub mod reader;
pub mod routing;
pub mod section_tool;
mod shared;
pub mod watch;

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;

use crate::kb::KnowledgeBase;
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

/// How the answer text is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerMode {
    /// The LLM reads numbered passages, quotes those that answer, says whether they do,
    /// then answers from its quotes (`reader`). The default when an LLM is available.
    Reader,
    /// The LLM chooses and orders evidence sentences; the grammar admits nothing else.
    Grounded,
    /// The LLM writes freely (schema-constrained) from the retrieved chunks only.
    Llm,
    /// No LLM: the most relevant evidence sentences, in order of relevance.
    Extractive,
}

impl AnswerMode {
    pub fn needs_llm(&self) -> bool {
        !matches!(self, AnswerMode::Extractive)
    }
}

/// The two answer formats of `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerFormat {
    Rag,
    Navigator,
}

/// The mode `ask` uses when none is given: the reader when an LLM is available, else
/// extractive. Measured with `sextant eval` (README, Answers).
pub fn default_mode(llm_available: bool) -> AnswerMode {
    if llm_available {
        AnswerMode::Reader
    } else {
        AnswerMode::Extractive
    }
}

/// Chunks retrieved for an answer when the caller does not say. The reader reads the
/// first three; the rest add evidence sentences (the extractive answer, the sentences
/// quoted after the reader's) and citations. On git-doc's tuning half (reader): k = 5
/// keywords 0.47, cited 0.80, first words p50 2.6 s; k = 8 0.49, 0.82, 2.5 s; k = 10
/// 0.51, 0.82, 2.7 s. The sample KB's tuning half: cited 0.91 → 0.94, keywords 0.73 both.
pub const DEFAULT_K: usize = 8;

/// One question for `ask`.
#[derive(Debug, Clone)]
pub struct AskRequest {
    pub question: String,
    pub format: AnswerFormat,
    /// None: `default_mode(true)`, the reader (callers without a model pass extractive).
    pub mode: Option<AnswerMode>,
    /// Chunks retrieved.
    pub k: usize,
}

/// An answer in its format, validated against its schema, with the report.
#[derive(Debug, Clone)]
pub struct Answer {
    pub format: AnswerFormat,
    pub value: Value,
    pub report: Report,
}

/// The model's part of an answer in either format.
pub enum PendingAnswer {
    Rag(rag::PendingRag),
    Navigator(navigator::PendingNavigator),
}

/// Retrieves and decides by rules; the answer text is left to the model only when the
/// mode asks for it and the evidence answers the question.
pub fn prepare_ask(kb: &KnowledgeBase, req: &AskRequest) -> Result<Step<Answer, PendingAnswer>> {
    kb.require_chunks()?;
    let mode = req.mode.unwrap_or(default_mode(true));
    Ok(match req.format {
        AnswerFormat::Rag => match rag::prepare(kb, &req.question, req.k, mode)? {
            Step::Done(r) => Step::Done(Answer::new(AnswerFormat::Rag, r)?),
            Step::NeedsLlm(p) => Step::NeedsLlm(PendingAnswer::Rag(p)),
        },
        AnswerFormat::Navigator => match navigator::prepare(kb, &req.question, req.k, mode)? {
            Step::Done(r) => Step::Done(Answer::new(AnswerFormat::Navigator, r)?),
            Step::NeedsLlm(p) => Step::NeedsLlm(PendingAnswer::Navigator(p)),
        },
    })
}

impl Answer {
    fn new<R: Serialize>(format: AnswerFormat, (response, report): (R, Report)) -> Result<Answer> {
        Ok(Answer {
            format,
            value: serde_json::to_value(response)?,
            report,
        })
    }
}

impl Pending for PendingAnswer {
    type Output = Answer;
    fn finish(self, llm: &mut Llm) -> Result<Answer> {
        self.finish_watched(llm, &mut watch::Watch::none())
    }

    fn finish_watched(self, llm: &mut Llm, watch: &mut watch::Watch) -> Result<Answer> {
        match self {
            PendingAnswer::Rag(p) => Answer::new(AnswerFormat::Rag, p.finish_watched(llm, watch)?),
            PendingAnswer::Navigator(p) => {
                Answer::new(AnswerFormat::Navigator, p.finish_watched(llm, watch)?)
            }
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
    pub decision: String,
    /// Share of the answer's content words found in the retrieved (or cited) chunks.
    pub grounding_share: f64,
    pub rules: Vec<checks::RuleResult>,
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
