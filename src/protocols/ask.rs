//! `ask`: the two answer formats, the answer modes, and `prepare_ask`, which retrieves and
//! decides by rules before any model runs.

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::{navigator, rag, watch, Pending, Report, Step};
use crate::kb::KnowledgeBase;
use crate::llm::Llm;

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

/// The two answer formats of `ask`; rag when a caller does not say, on every surface.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AnswerFormat {
    #[default]
    Rag,
    Navigator,
}

/// The mode `ask` uses when none is given: the reader when an LLM is available, else
/// extractive. Measured with `sextant eval` (docs/EVALUATION.md).
pub fn default_mode(llm_available: bool) -> AnswerMode {
    if llm_available {
        AnswerMode::Reader
    } else {
        AnswerMode::Extractive
    }
}

/// Chunks retrieved for an answer when the caller does not say. The reader reads the
/// first three; the rest add evidence sentences (the extractive answer, the sentences
/// quoted after the reader's) and citations. Chosen on the tuning halves of the eval sets
/// (docs/EVALUATION.md).
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
