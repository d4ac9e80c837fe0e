//! The JSONL transcript's records: one line per session start, turn and answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::state::InterviewState;

/// One line of the transcript.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Session {
        version: u32,
        started: String,
        model: String,
    },
    Turn(Box<TurnRecord>),
    Answer {
        index: u32,
        timestamp: String,
        text: String,
    },
}

/// A turn as saved in the transcript.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnRecord {
    pub index: u32,
    pub timestamp: String,
    pub turn: Value,
    /// The user message this turn answered (the answer plus the plan's note).
    pub user_message: String,
    /// The assistant message as the model wrote it (kept verbatim for KV reuse).
    pub assistant_message: String,
    pub state: InterviewState,
    pub plan: Value,
    pub attempts: u32,
    pub errors: Vec<String>,
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
    pub latency_ms: f64,
}
