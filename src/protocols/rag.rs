//! The RAG response (seeds/rag-expected-responses.md): `final_answer`, the
//! `retrieved_chunks` with their ids, pages, texts and normalised scores, and
//! `confidence` = the best score. Chunks and confidence are computed from retrieval, never
//! generated; only the answer text comes from the chosen mode.

use std::time::Instant;

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::json;

use super::checks::grounding_share;
use super::grounded::{
    answer_pattern, candidates, evidence_listing, extractive_answer, join_sentences, CANDIDATES,
    MAX_SENTENCES,
};
use super::{llm_object, validate_against, AnswerMode, AskReport};
use crate::kb::KnowledgeBase;
use crate::llm::Llm;

pub const SCHEMA: &str = include_str!("../../schemas/rag-response.schema.json");

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

pub fn answer(
    kb: &KnowledgeBase,
    llm: Option<&mut Llm>,
    question: &str,
    k: usize,
    mode: AnswerMode,
) -> Result<(RagResponse, AskReport)> {
    let (ev, mut report) = super::gather(kb, question, k, mode)?;
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
    let final_answer = if !ev.answerable() {
        report.decision = if ev.unknown_terms.is_empty() {
            format!(
                "not answerable: best score {:.3} < {:.2}",
                ev.best_score,
                super::evidence::ANSWERABLE_MIN_SCORE
            )
        } else {
            format!(
                "not answerable: no document mentions {}",
                ev.unknown_terms.join(", ")
            )
        };
        NOT_FOUND.to_string()
    } else {
        report.decision = "answer from the retrieved chunks".into();
        match mode {
            AnswerMode::Extractive => join_sentences(
                &extractive_answer(&ev)
                    .iter()
                    .map(|s| s.text.as_str())
                    .collect::<Vec<_>>(),
            ),
            AnswerMode::Grounded => {
                let Some(llm) = llm else {
                    bail!("grounded mode needs the LLM")
                };
                let cands = candidates(&ev, CANDIDATES);
                let schema = json!({
                    "type": "object", "additionalProperties": false,
                    "required": ["final_answer"],
                    "properties": {"final_answer": {
                        "type": "string", "pattern": answer_pattern(&cands, MAX_SENTENCES)
                    }}
                });
                let user = format!(
                    "Sentences from the documentation:\n{}\n\nQuestion: {question}\n\
                     Answer with the sentence or sentences above that answer the question, \
                     most important first, copied exactly.",
                    evidence_listing(&ev, &cands)
                );
                let v = llm_object(llm, GROUNDED_SYSTEM, &user, schema, &mut report)?;
                v["final_answer"].as_str().unwrap_or_default().to_string()
            }
            AnswerMode::Llm => {
                let Some(llm) = llm else {
                    bail!("llm mode needs the LLM")
                };
                let schema = json!({
                    "type": "object", "additionalProperties": false,
                    "required": ["final_answer"],
                    "properties": {"final_answer": {"type": "string", "minLength": 1, "maxLength": 400}}
                });
                let context = ev
                    .hits
                    .iter()
                    .map(|h| format!("[{}] {}", h.id, h.text))
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let user = format!("Context:\n{context}\n\nQuestion: {question}");
                let v = llm_object(llm, LLM_SYSTEM, &user, schema, &mut report)?;
                v["final_answer"]
                    .as_str()
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            }
        }
    };
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
    validate_against(SCHEMA, &serde_json::to_value(&response)?)?;
    report.validation_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((response, report))
}

const GROUNDED_SYSTEM: &str = "You answer questions about technical documentation by \
    choosing sentences from it. Pick the sentences that directly answer the question.";
const LLM_SYSTEM: &str = "You answer questions using only the context given. Be brief and \
    specific. If the context does not answer the question, say so.";
