//! The RAG response (seeds/rag-expected-responses.md): `final_answer`, the
//! `retrieved_chunks` with their ids, pages, texts and normalised scores, and
//! `confidence` = the best score. Chunks and confidence are computed from retrieval, never
//! generated; only the answer text comes from the chosen mode.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use super::checks::grounding_share;
use super::evidence::Evidence;
use super::gap;
use super::grounded::{extractive_answer, join_sentences};
use super::reader;
use super::shared::{gather, grounded_answer, llm_object_watched, FREE_ANSWER_CHARS};
use super::support;
use super::watch::Watch;
use super::{AnswerMode, Pending, Report, Step};
use crate::kb::KnowledgeBase;
use crate::llm::Llm;
use crate::schemas::{self, SchemaId};

/// Non-PDF documents have no pages: they count as one page, page 1.
pub const NON_PDF_PAGE: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct RagChunk {
    pub id: String,
    pub page: u32,
    pub text: String,
    pub score: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RagResponse {
    pub final_answer: String,
    pub retrieved_chunks: Vec<RagChunk>,
    pub confidence: f64,
}

pub const NOT_FOUND: &str = "I could not find a supported answer in the knowledge base. \
    The retrieved passages do not contain information that answers this question.";

/// Whether a RAG answer is the not-found answer (the format's only way to refuse).
pub fn is_not_found(final_answer: &str) -> bool {
    final_answer == NOT_FOUND
}

/// The model's part of a RAG answer: the evidence, and the mode that writes the text.
pub struct PendingRag {
    ev: Evidence,
    mode: AnswerMode,
    report: Report,
}

/// Retrieval, chunks and confidence by rules; the answer text too unless the mode needs
/// the model and the evidence answers the question.
pub fn prepare(
    kb: &KnowledgeBase,
    question: &str,
    k: usize,
    mode: AnswerMode,
) -> Result<Step<(RagResponse, Report), PendingRag>> {
    let (ev, mut report) = gather(kb, question, k, mode)?;
    if !ev.answerable() {
        report.decision = format!("not answerable: {}", ev.why_unanswerable());
        return respond(&ev, NOT_FOUND.to_string(), report).map(Step::Done);
    }
    report.decision = "answer from the retrieved chunks".into();
    if mode == AnswerMode::Extractive {
        let sentences = extractive_answer(&ev);
        let text = join_sentences(
            &sentences
                .iter()
                .map(|s| s.text.as_str())
                .collect::<Vec<_>>(),
        );
        return respond(&ev, text, report).map(Step::Done);
    }
    Ok(Step::NeedsLlm(PendingRag { ev, mode, report }))
}

impl Pending for PendingRag {
    type Output = (RagResponse, Report);

    fn finish(self, llm: &mut Llm) -> Result<(RagResponse, Report)> {
        self.finish_watched(llm, &mut Watch::none())
    }

    fn finish_watched(self, llm: &mut Llm, watch: &mut Watch) -> Result<(RagResponse, Report)> {
        let PendingRag {
            ev,
            mode,
            mut report,
        } = self;
        let text = match mode {
            // The format has no confidence field to carry the reader's verdict; it is in
            // the report's decision.
            AnswerMode::Reader => {
                let reading = reader::read(llm, &ev, &mut report, watch)?;
                if reading.out_of_domain(&ev, &mut report) {
                    NOT_FOUND.to_string()
                } else {
                    reading.answer
                }
            }
            AnswerMode::Grounded => {
                let system = GROUNDED_SYSTEM;
                grounded_answer(llm, &ev, "final_answer", system, &mut report, watch)?.0
            }
            _ => {
                let schema = json!({
                    "type": "object", "additionalProperties": false,
                    "required": ["final_answer"],
                    "properties": {"final_answer": {"type": "string", "minLength": 1, "maxLength": FREE_ANSWER_CHARS}}
                });
                let context = ev
                    .hits
                    .iter()
                    .map(|h| format!("[{}] {}", h.id, h.text))
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let user = format!("Context:\n{context}\n\nQuestion: {}", ev.question);
                report.shown_to_model = context;
                let watched = ("final_answer", &mut *watch);
                let v = llm_object_watched(llm, LLM_SYSTEM, &user, schema, &mut report, watched)?;
                let written = v["final_answer"]
                    .as_str()
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                let written =
                    support::without_cut_sentence(written, FREE_ANSWER_CHARS, &mut report);
                support::hold_to_shown(written, &ev, &mut report)
            }
        };
        respond(&ev, text, report)
    }
}

/// The response around the answer text: chunks and confidence from retrieval, the
/// grounding figure, and schema validation.
fn respond(
    ev: &Evidence,
    final_answer: String,
    mut report: Report,
) -> Result<(RagResponse, Report)> {
    let retrieved_chunks: Vec<RagChunk> = ev
        .hits
        .iter()
        .map(|h| RagChunk {
            id: h.id.clone(),
            page: h.page.unwrap_or(NON_PDF_PAGE),
            text: h.text.clone(),
            score: h.score,
        })
        .collect();
    let confidence = retrieved_chunks.iter().map(|c| c.score).fold(0.0, f64::max);
    let response = RagResponse {
        final_answer,
        retrieved_chunks,
        confidence: (confidence * 1000.0).round() / 1000.0,
    };
    let t = Instant::now();
    let evidence_text: String = ev
        .hits
        .iter()
        .map(|h| h.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    report.grounding_share = if ev.answerable() {
        grounding_share(&response.final_answer, &evidence_text)
    } else {
        1.0
    };
    // What the question asks about and the chunks do not mention is said first (`gap`).
    let mut response = response;
    if !is_not_found(&response.final_answer) {
        gap::note_unmentioned(ev, &mut response.final_answer, &mut report);
    }
    schemas::validate(SchemaId::RagResponse, &serde_json::to_value(&response)?)?;
    report.validation_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((response, report))
}

const GROUNDED_SYSTEM: &str = "You answer questions about technical documentation by \
    choosing sentences from it. Pick the sentences that directly answer the question.";
const LLM_SYSTEM: &str = "You answer questions using only the context given. Be brief and \
    specific. If the context does not answer the question, say so.";
