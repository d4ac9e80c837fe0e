//! The interview bot (seeds/interview-response-schema.md): one interviewer turn per user
//! answer, each a valid `interview-turn` object with exactly one question.
//!
//! The program owns the interview; the model only proposes. Before each turn the state
//! machine (`InterviewState::plan`) fixes what the turn may say: the stage (in the seed's
//! order; a stage ends when completeness ≥ 80 with a question of depth ≥ 3 asked, or at its
//! turn limit), which depths are allowed (a follow-up one deeper, or 1 for a new topic,
//! and 1 on a new stage), the completeness range (never lower than before, at least a
//! step up per answer), the engagement level (from the answer's length, the seed's word
//! bands). That plan becomes the decoder schema, so the model cannot step outside it; the
//! response pattern admits exactly one `?`, at the end. After the turn, `accept` records
//! it and decides `stage_transition_ready`.
//!
//! When generation fails, the turn is retried once with another seed; if that fails too,
//! a fallback turn (a fixed question of the stage) carries the seed's error code.
//!
//! Every record is appended to a JSONL transcript (fsynced) before the turn is shown, so
//! `--resume` continues from the last saved turn. The conversation is sent to the model
//! with stable earlier messages (the plan's note rides in the newest user message), so the
//! KV cache of the previous turn is reused and a turn processes only the new answer.

mod session;
mod state;
mod transcript;
mod turn;

pub use session::{
    default_transcript_path, is_session_id, new_session_id, new_session_path, Interview,
    InterviewOptions, TurnBackend, TurnStats,
};
pub use state::{Engagement, InterviewState, Stage, TurnPlan};
pub use transcript::{Record, TurnRecord};
pub use turn::{decoder_schema, fallback_turn, validate_turn, TurnError};
