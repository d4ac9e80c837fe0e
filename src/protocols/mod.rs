//! The five response formats (their JSON Schemas in `schemas/`), one module each: `rag` and `navigator`
//! (answers), `section_tool` (the navigate_to_section call), `routing` and `interview`.
//! Each owns its prompt and its validation; the schemas live in one registry
//! (`crate::schemas`), compiled once.
//!
//! Every protocol runs in two steps. `prepare` gathers evidence and decides what it can
//! by written rules, returning `Step::Done(response)` or `Step::NeedsLlm(pending)`; only
//! then does a caller load (or queue for) the model and call `pending.finish(llm)`. The
//! pending value owns everything the model step needs, so a caller can release the
//! knowledge base before the (slow) generation starts.

mod ask;
pub mod checks;
pub mod evidence;
pub mod followup;
pub mod gap;
pub mod grounded;
pub mod interview;
pub mod navigator;
mod prose_commands;
pub mod rag;
pub mod reader;
pub mod routing;
pub mod section_tool;
mod shared;
mod step;
pub mod support;
pub mod watch;

pub use ask::{
    default_mode, prepare_ask, Answer, AnswerFormat, AnswerMode, AskRequest, PendingAnswer,
    DEFAULT_K,
};
pub use step::{Pending, Report, Step};
