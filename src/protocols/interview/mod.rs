//! The interview bot (seeds/interview-response-schema.md): one interviewer turn per user
//! answer, each a valid `interview-turn` object with exactly one question.
//!
//! The program owns the interview; the model only words the question. Before each turn the
//! state machine (`InterviewState::plan`) fixes the stage (in the seed's order; a stage
//! ends when completeness ≥ 80 with a question of depth ≥ 3 asked, or at its turn limit),
//! the depths allowed (a follow-up one deeper, or 1 for a new topic, and 1 on a new
//! stage), the completeness range (never lower than before, at least a step up per
//! answer), the engagement level (from the answer's length, the seed's word bands). The
//! model writes only the response, under a pattern (`response_pattern`): a fixed
//! acknowledgement, then one question starting with a question word, put to "you", ending
//! in the only `?`, no brackets. The turn's other fields are set by rule from the plan
//! (`assemble_turn`), its key insight taken from the person's answer. The opening turn is
//! the program's (there is nothing to follow up yet). After the turn, `accept` records it
//! and decides `stage_transition_ready`.
//!
//! A response that repeats an earlier turn, speaks as the person, asks about the
//! interviewer or holds a placeholder (`checks`) is generated again, up to two retries
//! with other seeds; then a question of the stage not asked yet stands in. When generation
//! fails, the fallback turn (a fixed question of the stage) carries the seed's error code.
//!
//! Every record is appended to a JSONL transcript (fsynced) before the turn is shown, so
//! `--resume` continues from the last saved turn. The conversation is sent to the model
//! with stable earlier messages (the plan's note rides in the newest user message), so the
//! KV cache of the previous turn is reused and a turn processes only the new answer.

pub mod checks;
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
pub use turn::{assemble_turn, fallback_turn, response_pattern, validate_turn, TurnError};
