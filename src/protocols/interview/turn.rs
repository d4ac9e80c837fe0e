//! One turn's contract: the response pattern the model writes under, the turn assembled
//! around it by rule, the system prompt and plan note, the seed's error codes and the
//! fallback turn.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::schemas::{self, SchemaId};
use crate::structured::StructuredError;

use super::state::{Engagement, InterviewState, TurnPlan};

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

/// Acknowledgements the response may open with: fixed, so the model cannot fill the
/// opening with claims about itself or about the person.
const ACKNOWLEDGEMENTS: &[&str] = &[
    "Thank you.",
    "Thanks.",
    "I see.",
    "That's helpful.",
    "Understood.",
    "Interesting.",
    "Got it.",
];
/// The first turn's opening.
pub(super) const WELCOME: &str = "Welcome, and thank you for your time.";

/// The response the model may write (the first turn is the program's: there is nothing
/// to follow up yet): one of the fixed openings, then one question put
/// to the person — it starts with a question word, holds "you" or "your" as a word, ends
/// with the only '?', and has no brackets (a small model fills brackets with template
/// placeholders such as "[insert your name here]").
pub fn response_pattern() -> String {
    let openings: Vec<String> = ACKNOWLEDGEMENTS.iter().map(|a| regex_escape(a)).collect();
    // Words of Latin letters, digits and the punctuation a question uses: a small model
    // otherwise drifts into another script mid-sentence.
    let word = r"[A-Za-z0-9À-ÿ'’,;:.\-/()&%$\x22]+";
    format!(
        "({}) (How|What|When|Why|Where|Which|Who|Can|Could|Would)( {word}){{0,12}} (you|your)( {word}){{1,16}}\\?",
        openings.join("|")
    )
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = ".^$*+?()[]{}|\\".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// An insight noted from the person's answer: its first sentence, in their words (cut
/// at a word near 80 characters), so an insight never says what they did not.
pub fn insight_of(answer: &str) -> Option<String> {
    let first = answer
        .split_inclusive(['.', '!', '?', ';'])
        .next()
        .unwrap_or(answer)
        .trim()
        .trim_end_matches(['.', '!', '?', ';']);
    let words: Vec<&str> = first.split_whitespace().collect();
    let mut out = String::new();
    for w in words {
        if out.len() + w.len() + 1 > 80 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    (out.chars().count() >= 3).then_some(out)
}

/// The turn object around the model's response, its other fields set by rule from the
/// plan: the deepest depth the plan allows (a follow-up on what was just said), a
/// completeness as far into the plan's range as the answer was engaged (a full answer
/// gathers more of the stage than a terse one, so the stage ends sooner), the plan's
/// engagement, one more example for a long answer, and the answer's insight.
pub fn assemble_turn(plan: &TurnPlan, response: &str, answer: Option<&str>) -> Value {
    let depth = plan.depths.iter().copied().max().unwrap_or(1);
    let (lo, hi) = plan.completeness;
    let reach = match plan.engagement {
        Engagement::High => 1.0,
        Engagement::Medium => 0.6,
        Engagement::Low => 0.3,
    };
    let examples = plan.examples.1.min(plan.examples.0 + 1);
    let insights: Vec<String> = answer.and_then(insight_of).into_iter().collect();
    json!({
        "interview_stage": plan.stage.id(),
        "response": response,
        "metadata": {
            "question_depth": depth,
            "completeness": lo + ((hi - lo) as f64 * reach).round() as u8,
            "engagement_level": plan.engagement.id(),
        },
        "internal_tracking": {
            "key_insights": insights,
            "examples_collected": examples,
            "follow_up_needed": [],
        }
    })
}

pub(super) const SYSTEM_PROMPT: &str = "You are an expert interviewer capturing a \
professional's know-how, one question at a time. After each answer, reply with a short \
acknowledgement and exactly one question to the person, addressed as \"you\", that follows \
up on what they just said. Ask about their work, never about yourself; never repeat a \
question you asked before.";

/// The note that tells the model what this turn is for; it rides in the newest user message
/// so earlier messages (and their KV cache) stay unchanged.
pub(super) fn plan_note(plan: &TurnPlan) -> String {
    let what = if plan.new_stage {
        "Ask a first question on this stage's topic."
    } else {
        "Follow up on what they just said, one level deeper: ask for an example, a step of \
         the process, or what they learned."
    };
    format!(
        "(Interviewer note: stage {} — {}. {what})",
        plan.stage.id(),
        plan.stage.goal()
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::{turn_for, Stage};
    use super::*;

    #[test]
    fn the_model_may_write_one_question_put_to_the_person() {
        let re = regex::Regex::new(&format!("^(?:{})$", response_pattern())).unwrap();
        assert!(re.is_match("I see. How do you plan your on-call week?"));
        assert!(re.is_match("Thank you. Could you walk me through what happened next?"));
        for bad in [
            "I'm an AI assistant. How can you help?",
            "I see. How can I assist with translating manuals?",
            "Thanks. What happened next? And why?",
            "Thanks. How do [your name] handle it?",
            "Thanks. Tell me about your work.",
        ] {
            assert!(!re.is_match(bad), "{bad}");
        }
        let plan = InterviewState::default().plan(Some("I run the on-call rotation for payments."));
        let t = assemble_turn(
            &plan,
            "Thanks. How do you run it?",
            Some("I run the on-call rotation for payments. Ten years."),
        );
        validate_turn(&t).unwrap();
        assert_eq!(
            t["internal_tracking"]["key_insights"][0],
            "I run the on-call rotation for payments"
        );
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
            at: "/".into(),
        }
        .into();
        assert_eq!(TurnError::classify(&parse, 1), TurnError::JsonParseFailed);
        let api = anyhow::anyhow!("device lost");
        assert_eq!(TurnError::classify(&api, 1), TurnError::ApiError);
        assert_eq!(TurnError::classify(&api, 2), TurnError::ApiRetryFailed);
    }
}
