//! Answers and navigation: the rules under the KB lock, the model after it is released.
//! The typed results are for shells that print the response object and its report (the
//! CLI); `Request::Ask` and `Request::Navigate` wrap the same calls in their JSON.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::conversations::AskedIn;
use super::{document, non_empty, AskParams, Service, ServiceError};
use crate::kb::conversations::Turn;
use crate::protocols::followup::{self, Resolved};
use crate::protocols::section_tool::{self, HeadingTree, Navigation};
use crate::protocols::watch::Watch;
use crate::protocols::{
    default_mode, prepare_ask, Answer, AnswerFormat, AskRequest, Report, DEFAULT_K,
};

/// The client-kept earlier questions read before a follow-up, at most (the latest).
const HISTORY_READ: usize = 4;

/// The most chunks a request may ask to retrieve.
const MAX_K: usize = 20;

impl Service {
    /// The answer object in its format with the report of what decided it. The one set
    /// of defaults every shell gets: the rag format, the reader when an LLM is available
    /// (else extractive), `DEFAULT_K` chunks.
    pub fn answer(&self, params: AskParams) -> Result<Answer, ServiceError> {
        self.answer_watched(params, &mut Watch::none())
    }

    /// An answer watched as it is generated: `on_answer_text` gets the model's draft of
    /// the answer text in pieces (nothing when the rules answer alone), then the response
    /// is returned as `Request::Ask` returns it. Setting `cancel` stops the generation.
    pub fn ask_watched(
        &self,
        params: AskParams,
        on_answer_text: &mut dyn FnMut(&str),
        cancel: Arc<AtomicBool>,
    ) -> Result<Value, ServiceError> {
        let result = self.ask(params, &mut Watch::new(on_answer_text, cancel));
        if matches!(result, Err(ServiceError::Cancelled)) {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    pub(super) fn ask(&self, params: AskParams, watch: &mut Watch) -> Result<Value, ServiceError> {
        let question = non_empty("question", &params.question)?.to_string();
        let conversation = self.conversation_for(params.conversation.as_deref())?;
        let earlier = conversation
            .as_ref()
            .map(|c| c.earlier.clone())
            .unwrap_or_default();
        let (answer, resolved) = self.answer_in(params, earlier, watch)?;
        let citations = document::citations(
            &self.kb(),
            answer.format,
            &answer.value,
            &answer.report.hits,
        );
        // The answer string is Markdown (code kept as code); the UI shows this rendering.
        let text = match answer.format {
            AnswerFormat::Navigator => &answer.value["answer"],
            AnswerFormat::Rag => &answer.value["final_answer"],
        };
        let answer_html = document::markdown_html(text.as_str().unwrap_or_default());
        let mut out = json!({
            "format": answer.format, "response": answer.value,
            "citations": citations, "decision": answer.report.decision,
            "removed": answer.report.removed, "unmentioned": answer.report.unmentioned,
            "answer_html": answer_html,
            "standalone": resolved.query,
        });
        if let Some(AskedIn { id, .. }) = conversation {
            let turn = Turn {
                n: 0,
                question,
                standalone: resolved.query,
                format: json!(answer.format)
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                response: answer.value,
                citations: json!(citations),
                decision: answer.report.decision,
                created: String::new(),
            };
            let (id, n) = self.keep_turn(id, &turn)?;
            out["turn"] = json!(n);
            out["conversation"] = json!(id);
        }
        Ok(out)
    }

    fn answer_watched(&self, params: AskParams, watch: &mut Watch) -> Result<Answer, ServiceError> {
        Ok(self.answer_in(params, Vec::new(), watch)?.0)
    }

    /// The answer to `params.question` read after `earlier` (a kept conversation's turns,
    /// as they were read) and `params.history` (a client's own earlier questions).
    fn answer_in(
        &self,
        params: AskParams,
        mut earlier: Vec<String>,
        watch: &mut Watch,
    ) -> Result<(Answer, Resolved), ServiceError> {
        let question = non_empty("question", &params.question)?;
        let mode = params
            .mode
            .unwrap_or_else(|| default_mode(self.llm_available()));
        let (step, resolved) = {
            let kb = self.kb();
            kb.require_chunks()?;
            // Only the last turns shape a follow-up's reading: a long message list costs
            // a search per turn read, so older ones are left out.
            let history: Vec<&String> = params
                .history
                .iter()
                .filter(|q| !q.trim().is_empty())
                .collect();
            for q in &history[history.len().saturating_sub(HISTORY_READ)..] {
                let query = followup::resolve(&kb, &earlier, q)?.query;
                earlier.push(query);
            }
            let resolved = followup::resolve(&kb, &earlier, question)?;
            let req = AskRequest {
                question: resolved.query.clone(),
                format: params.format.unwrap_or_default(),
                mode: Some(mode),
                k: params.k.unwrap_or(DEFAULT_K).clamp(1, MAX_K),
            };
            (prepare_ask(&kb, &req)?, resolved)
        };
        let mut answer = self.finish_watched(step, watch)?;
        if resolved.is_follow_up() {
            answer.report.decision = format!(
                "Read as a follow-up ({}): \"{}\". {}",
                resolved.why, resolved.query, answer.report.decision
            );
        }
        Ok((answer, resolved))
    }

    /// The navigate_to_section call for a question, with the report of what decided it.
    pub fn navigate(&self, question: &str) -> Result<(Navigation, Report), ServiceError> {
        let question = non_empty("question", question)?;
        let step = section_tool::prepare(&self.kb(), question)
            .map_err(|e| ServiceError::BadRequest(format!("{e:#}")))?;
        self.finish(step)
    }

    /// The navigate_to_section tool definition over the open KB's headings: OpenAI's
    /// function format, or Gemini's `functionDeclarations`.
    pub fn section_tool(&self, gemini: bool) -> Result<Value, ServiceError> {
        let tree = HeadingTree::load(&self.kb())?;
        Ok(if gemini {
            tree.gemini_declaration()
        } else {
            tree.tool_definition()
        })
    }
}
