//! One turn's contract: the seed schema, the decoder schema narrowed to the plan, the
//! system prompt and plan note, the seed's error codes and the fallback turn.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::schemas::{self, SchemaId};
use crate::structured::StructuredError;

use super::state::{InterviewState, TurnPlan};

/// Longest response the decoder may write (the seed allows 2000; a spoken question plus a
/// short acknowledgement fits well within this, and the budget stays small).
const RESPONSE_MAX_CHARS: usize = 240;

/// The schema the decoder runs under for one turn: the seed's fields, narrowed to `plan`.
pub fn decoder_schema(plan: &TurnPlan) -> Value {
    // Exactly one question mark, as the response's last character: the single-question
    // rule, enforced while decoding rather than checked afterwards. No brackets either:
    // an interviewer's turn has no use for them, and a small model fills them with
    // template placeholders ("I'm [insert your name here]").
    let pattern = format!("^[^?\\n\\[\\]{{}}<>]{{9,{}}}\\?$", RESPONSE_MAX_CHARS - 1);
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["interview_stage", "response", "metadata", "internal_tracking"],
        "properties": {
            "interview_stage": {"type": "string", "enum": [plan.stage.id()]},
            "response": {"type": "string", "pattern": pattern},
            "metadata": {
                "type": "object",
                "additionalProperties": false,
                "required": ["question_depth", "completeness", "engagement_level"],
                "properties": {
                    "question_depth": {"type": "integer", "enum": plan.depths},
                    "completeness": {"type": "integer", "minimum": plan.completeness.0, "maximum": plan.completeness.1},
                    "engagement_level": {"type": "string", "enum": [plan.engagement.id()]}
                }
            },
            "internal_tracking": {
                "type": "object",
                "additionalProperties": false,
                "required": ["key_insights", "examples_collected", "follow_up_needed"],
                "properties": {
                    "key_insights": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 3, "maxLength": 80}},
                    "examples_collected": {"type": "integer", "minimum": plan.examples.0, "maximum": plan.examples.1},
                    "follow_up_needed": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 3, "maxLength": 80}}
                }
            }
        }
    })
}

/// The seed's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TurnError {
    JsonParseFailed,
    ApiError,
    ApiRetryFailed,
}

impl TurnError {
    /// A failure to produce a complete, valid object is a parse failure; anything else
    /// (the model or device failed) an API error; a failure after a retry, retry failed.
    pub fn classify(err: &anyhow::Error, attempts: u32) -> TurnError {
        if attempts > 1 {
            TurnError::ApiRetryFailed
        } else if matches!(
            err.downcast_ref::<StructuredError>(),
            Some(
                StructuredError::Incomplete { .. }
                    | StructuredError::ContextFull { .. }
                    | StructuredError::EndedEarly { .. }
                    | StructuredError::Invalid(_)
                    | StructuredError::NotJson { .. }
                    | StructuredError::Unsatisfied { .. }
                    | StructuredError::BudgetTooSmall { .. }
            )
        ) {
            TurnError::JsonParseFailed
        } else {
            TurnError::ApiError
        }
    }

    fn id(self) -> &'static str {
        match self {
            TurnError::JsonParseFailed => "JSON_PARSE_FAILED",
            TurnError::ApiError => "API_ERROR",
            TurnError::ApiRetryFailed => "API_RETRY_FAILED",
        }
    }
}

/// A valid turn built without the model, carrying the error code.
pub fn fallback_turn(plan: &TurnPlan, state: &InterviewState, error: TurnError) -> Value {
    let lead = match error {
        TurnError::JsonParseFailed => {
            "I had trouble putting my reply together, so let me ask plainly."
        }
        TurnError::ApiError | TurnError::ApiRetryFailed => {
            "I'm having a technical difficulty on my side, so let me keep it simple."
        }
    };
    json!({
        "interview_stage": plan.stage.id(),
        "response": format!("{lead} {}", plan.stage.fallback_question()),
        "metadata": {
            "question_depth": 1,
            "completeness": plan.completeness.0,
            "engagement_level": plan.engagement.id(),
        },
        "internal_tracking": {
            "key_insights": [],
            "examples_collected": plan.examples.0.max(state.examples_collected),
            "follow_up_needed": [],
        },
        "error": error.id(),
    })
}

/// Checks a final turn: the seed schema and the single-question rule.
pub fn validate_turn(turn: &Value) -> Result<()> {
    schemas::validate(SchemaId::InterviewTurn, turn)?;
    let response = turn["response"].as_str().unwrap_or("");
    let questions = response.matches('?').count();
    if questions != 1 {
        bail!("the response must ask exactly one question; it has {questions} question marks");
    }
    Ok(())
}

pub(super) const SYSTEM_PROMPT: &str =
    "You are an expert interviewer capturing a professional's know-how, \
one question at a time. The interview moves through these stages in order: greeting, \
profiling, essence, operations, expertise_map, failure_modes, mastery, growth_path, wrap_up. \
Reply with one JSON object: interview_stage; response (acknowledge the last answer in a few \
words, then ask exactly one specific question that builds on it, ending with a question mark); \
metadata (question_depth: 1 = new topic, 2 = ask for an example, 3 = process detail, 4 = \
expert insight; completeness: percent of the stage's information gathered; engagement_level); \
internal_tracking (key_insights: short notes of what the person revealed; examples_collected: \
concrete examples so far; follow_up_needed: topics to explore further). Keep the response \
short: one sentence of acknowledgement, one question. Example reply: {\"interview_stage\": \
\"operations\", \"response\": \"That morning routine sounds well organised. Can you walk me \
through what happens between arriving and your first client meeting?\", \"metadata\": \
{\"question_depth\": 2, \"completeness\": 45, \"engagement_level\": \"medium\"}, \
\"internal_tracking\": {\"key_insights\": [\"Uses time-blocking\"], \"examples_collected\": 3, \
\"follow_up_needed\": [\"client meeting preparation\"]}}";

/// The note that tells the model what this turn is for; it rides in the newest user message
/// so earlier messages (and their KV cache) stay unchanged.
pub(super) fn plan_note(plan: &TurnPlan) -> String {
    let depth = if plan.depths.len() == 1 {
        "Ask the first question on a new topic (depth 1).".to_string()
    } else {
        format!(
            "Ask a follow-up on the same topic (depth {}) or move to a new topic (depth 1).",
            plan.depths[0]
        )
    };
    format!(
        "[Interviewer note: stage {} — {}. {depth}]",
        plan.stage.id(),
        plan.stage.goal()
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::{turn_for, Stage};
    use super::*;

    #[test]
    fn the_response_admits_one_question_and_no_placeholders() {
        let plan = InterviewState::default().plan(None);
        let schema = decoder_schema(&plan);
        let pattern = schema["properties"]["response"]["pattern"]
            .as_str()
            .unwrap();
        let re = regex::Regex::new(pattern).unwrap();
        assert!(re.is_match("Welcome! What does your on-call week look like?"));
        for bad in [
            "Good morning! I'm [insert your name here]. What do you do?",
            "Hello {name}, what do you do?",
            "What do you do? And why?",
            "Tell me about your work.",
        ] {
            assert!(!re.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn fallback_turns_are_valid_for_every_stage_and_error() {
        for stage in Stage::ALL {
            assert_eq!(stage.fallback_question().matches('?').count(), 1);
            for err in [
                TurnError::JsonParseFailed,
                TurnError::ApiError,
                TurnError::ApiRetryFailed,
            ] {
                let st = InterviewState {
                    stage,
                    turns: 1,
                    ..Default::default()
                };
                let plan = st.plan(Some("answer"));
                let mut t = fallback_turn(&plan, &st, err);
                let mut st2 = st.clone();
                st2.accept(&plan, &mut t);
                validate_turn(&t).unwrap();
                assert_eq!(t["error"], err.id());
                // The fallback also fits the decoder's own schema, minus the error field.
                let mut no_err = t.clone();
                no_err.as_object_mut().unwrap().remove("error");
                no_err["internal_tracking"]
                    .as_object_mut()
                    .unwrap()
                    .remove("stage_transition_ready");
                crate::constrain::validate::SchemaValidator::new(&decoder_schema(&plan))
                    .unwrap()
                    .validate(&no_err)
                    .unwrap();
            }
        }
    }

    #[test]
    fn two_questions_are_rejected() {
        let plan = InterviewState::default().plan(None);
        let mut t = turn_for(&plan, 1, 0);
        t["response"] = json!("How long does it take? What tools do you use?");
        assert!(validate_turn(&t)
            .unwrap_err()
            .to_string()
            .contains("exactly one question"));
    }

    #[test]
    fn errors_are_classified_as_the_seed_codes() {
        let parse: anyhow::Error = StructuredError::Incomplete {
            max_tokens: 8,
            partial: "{".into(),
        }
        .into();
        assert_eq!(TurnError::classify(&parse, 1), TurnError::JsonParseFailed);
        let api = anyhow::anyhow!("device lost");
        assert_eq!(TurnError::classify(&api, 1), TurnError::ApiError);
        assert_eq!(TurnError::classify(&api, 2), TurnError::ApiRetryFailed);
    }
}
