//! Free chat and embeddings for the OpenAI-compatible routes; the wire formats are the
//! server's (`server/openai.rs`), this is the engine side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Service, ServiceError};
use crate::llm::chat_template::Message;
use crate::structured::{generate_structured, OutputSpec, StructuredRequest};

/// One chat completion, as the engine needs it.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub output: OutputSpec,
    pub max_tokens: usize,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
}

/// What a chat completion produced.
#[derive(Debug, Clone)]
pub struct ChatResult {
    pub text: String,
    /// The output was cut short by the budget or the context window.
    pub truncated: bool,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

/// Cancels generation when dropped before `disarm` (a request whose client went away).
pub struct CancelOnDrop(pub Arc<AtomicBool>, bool);

impl CancelOnDrop {
    pub fn new() -> Self {
        CancelOnDrop(Arc::new(AtomicBool::new(false)), true)
    }
    pub fn disarm(mut self) {
        self.1 = false;
    }
}

impl Default for CancelOnDrop {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

impl Service {
    /// One completion, streamed through `on_text` as it comes.
    pub fn chat(
        &self,
        req: &ChatRequest,
        cancel: Arc<AtomicBool>,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResult, ServiceError> {
        self.with_llm(|llm| {
            let mut sreq = StructuredRequest::new(req.messages.clone(), req.output.clone());
            sreq.max_tokens = req.max_tokens;
            sreq.sampling.temperature = req.temperature;
            sreq.sampling.top_p = req.top_p;
            sreq.sampling.seed = req.seed;
            sreq.reuse_kv = true;
            sreq.cancel = Some(cancel);
            let prompt_len = llm
                .chat_tokens(&req.messages)
                .map_err(|e| ServiceError::BadRequest(format!("{e:#}")))?
                .len();
            let n_ctx = llm.model.n_ctx();
            if prompt_len + req.max_tokens > n_ctx {
                return Err(ServiceError::ContextLength(format!(
                    "the prompt ({prompt_len} tokens) plus max_tokens ({}) exceeds the model's context of {n_ctx} tokens",
                    req.max_tokens
                )));
            }
            let out = generate_structured(llm, &sreq, on_text).map_err(|e| {
                let e = ServiceError::from(e);
                if matches!(e, ServiceError::Cancelled) {
                    self.cancelled.fetch_add(1, Ordering::Relaxed);
                }
                e
            })?;
            Ok(ChatResult {
                truncated: out.generation.stop.truncated(),
                prompt_tokens: out.generation.prompt_tokens,
                completion_tokens: out.generation.tokens.len(),
                text: out.text,
            })
        })
    }

    /// Sentence embeddings of `texts`, with the number of tokens they count.
    pub fn embeddings(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, usize), ServiceError> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.embedder.embed(&refs)?;
        let tok = self.embedder.counting_tokenizer();
        let tokens = refs
            .iter()
            .map(|t| tok.encode(*t, true).map(|e| e.len()).unwrap_or(0))
            .sum();
        Ok((vectors, tokens))
    }
}
