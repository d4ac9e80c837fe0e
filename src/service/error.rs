//! The service's errors, typed: each shell maps them to its own terms once (the server to
//! HTTP statuses and OpenAI error bodies, the desktop to the same JSON bodies).

use crate::kb::EmptyKb;
use crate::structured::StructuredError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed or names something invalid; the message says what.
    #[error("{0}")]
    BadRequest(String),
    /// The request names a document, session, flow or model that does not exist.
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    EmptyKb(#[from] EmptyKb),
    #[error("the model is busy ({ahead} requests ahead); retry in a few seconds")]
    Overloaded { ahead: usize },
    /// Another process is writing the knowledge base.
    #[error("{0}")]
    KbBusy(String),
    /// A document changed on disk since it was ingested; the message says to re-ingest.
    #[error("{0}")]
    Stale(String),
    /// The caller's schema (or grammar) cannot be decoded; the message names why.
    #[error("{0}")]
    UnsupportedSchema(String),
    /// The token budget ran out before the output was complete.
    #[error("{0}")]
    Incomplete(String),
    /// The prompt, the budget or the output does not fit the model's context window.
    #[error("{0}")]
    ContextLength(String),
    /// The LLM this request needs is not in the model store or failed to load; the
    /// message says which and how to fix it.
    #[error("{0}")]
    ModelUnavailable(String),
    /// The client went away and generation stopped.
    #[error("cancelled")]
    Cancelled,
    #[error("{0:#}")]
    Internal(anyhow::Error),
}

impl ServiceError {
    /// A stable machine-readable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            ServiceError::BadRequest(_) => "invalid_request",
            ServiceError::NotFound(_) => "not_found",
            ServiceError::EmptyKb(_) => "empty_kb",
            ServiceError::Overloaded { .. } => "overloaded",
            ServiceError::KbBusy(_) => "kb_busy",
            ServiceError::Stale(_) => "stale_document",
            ServiceError::UnsupportedSchema(_) => "unsupported_schema",
            ServiceError::Incomplete(_) => "incomplete",
            ServiceError::ContextLength(_) => "context_length_exceeded",
            ServiceError::ModelUnavailable(_) => "model_unavailable",
            ServiceError::Cancelled => "cancelled",
            ServiceError::Internal(_) => "internal",
        }
    }
}

impl From<anyhow::Error> for ServiceError {
    fn from(e: anyhow::Error) -> Self {
        ServiceError::Internal(e)
    }
}

impl From<StructuredError> for ServiceError {
    fn from(e: StructuredError) -> Self {
        match e {
            StructuredError::Unsupported(_) | StructuredError::Unsatisfied { .. } => {
                ServiceError::UnsupportedSchema(e.to_string())
            }
            StructuredError::Incomplete { .. } | StructuredError::BudgetTooSmall { .. } => {
                ServiceError::Incomplete(e.to_string())
            }
            StructuredError::ContextFull { .. } => ServiceError::ContextLength(e.to_string()),
            StructuredError::Cancelled => ServiceError::Cancelled,
            other => ServiceError::Internal(other.into()),
        }
    }
}
