//! The response formats of `../shared/seeds/`, one module each, over shared evidence
//! (`evidence`), grounding (`grounded`) and post-validation (`checks`). Each module owns
//! its schema (from `schemas/`), its prompts and its validation.

pub mod checks;
pub mod evidence;
pub mod grounded;
pub mod interview;
pub mod navigate;
pub mod navigator;
pub mod rag;
pub mod routing;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::constrain::validate::SchemaValidator;
use crate::llm::chat_template::Message;
use crate::llm::Llm;
use crate::structured::{generate_structured, OutputSpec, StructuredRequest};

/// How the answer text is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerMode {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerFormat {
    Rag,
    Navigator,
}

impl AnswerFormat {
    pub fn default_mode(self) -> AnswerMode {
        match self {
            AnswerFormat::Rag => DEFAULT_RAG_MODE,
            AnswerFormat::Navigator => DEFAULT_NAVIGATOR_MODE,
        }
    }
}

/// Answers `question` in `format`, as the format's JSON object (each format validates its
/// object against its schema before returning it). Shared by the CLI and the service.
pub fn ask(
    kb: &crate::kb::KnowledgeBase,
    llm: Option<&mut Llm>,
    question: &str,
    format: AnswerFormat,
    mode: AnswerMode,
    k: usize,
) -> Result<(Value, AskReport)> {
    Ok(match format {
        AnswerFormat::Rag => {
            let (r, report) = rag::answer(kb, llm, question, k, mode)?;
            (serde_json::to_value(r)?, report)
        }
        AnswerFormat::Navigator => {
            let (r, report) = navigator::answer(kb, llm, question, k, mode)?;
            (serde_json::to_value(r)?, report)
        }
    })
}

/// Default modes, chosen from `sextant bench ask` on the sample KB (README, Performance):
/// with the 135M model, extractive answers contain a sentence of the expected section for
/// 72% of the labelled questions, grounded 40%, free LLM text 16%.
pub const DEFAULT_RAG_MODE: AnswerMode = AnswerMode::Extractive;
pub const DEFAULT_NAVIGATOR_MODE: AnswerMode = AnswerMode::Extractive;

/// What `--explain` prints: timings, decisions and the validation report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AskReport {
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
    /// The retrieved chunks (with file and anchor, which the response formats omit), so
    /// a UI can turn cited ids and sections into links.
    #[serde(skip)]
    pub hits: Vec<crate::kb::search::Hit>,
}

/// Retrieval for one question, with the report's retrieval figures filled in.
pub(crate) fn gather(
    kb: &crate::kb::KnowledgeBase,
    question: &str,
    k: usize,
    mode: AnswerMode,
) -> Result<(evidence::Evidence, AskReport)> {
    let t = std::time::Instant::now();
    let ev = evidence::Evidence::gather(kb, question, k)?;
    let report = AskReport {
        mode: format!("{mode:?}").to_lowercase(),
        retrieval_ms: t.elapsed().as_secs_f64() * 1e3,
        best_score: ev.best_score,
        domain_score: ev.domain_score,
        hits: ev.hits.clone(),
        ..Default::default()
    };
    Ok((ev, report))
}

/// Runs the LLM under `schema` and returns the object.
pub(crate) fn llm_object(
    llm: &mut Llm,
    system: &str,
    user: &str,
    schema: Value,
    report: &mut AskReport,
) -> Result<Value> {
    let mut req = StructuredRequest::new(
        vec![Message::new("system", system), Message::new("user", user)],
        OutputSpec::JsonSchema(schema.clone()),
    );
    req.max_tokens = 512;
    let out = generate_structured(llm, &req, &mut |_| {})?;
    report.prompt_ms += out.generation.prompt_ms;
    report.generation_ms += out.generation.generate_ms;
    report.decoder_schema = Some(schema);
    Ok(out.value.expect("schema output has a value"))
}

/// Validates a final object against the format's schema file.
pub(crate) fn validate_against(schema_json: &str, value: &Value) -> Result<()> {
    let schema: Value = serde_json::from_str(schema_json)?;
    SchemaValidator::new(&schema)?.validate(value)?;
    Ok(())
}
