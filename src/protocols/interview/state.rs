//! The program-owned state machine: stages, engagement, and the plan that bounds each turn.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Greeting,
    Profiling,
    Essence,
    Operations,
    ExpertiseMap,
    FailureModes,
    Mastery,
    GrowthPath,
    WrapUp,
}

impl Stage {
    pub const ALL: [Stage; 9] = [
        Stage::Greeting,
        Stage::Profiling,
        Stage::Essence,
        Stage::Operations,
        Stage::ExpertiseMap,
        Stage::FailureModes,
        Stage::Mastery,
        Stage::GrowthPath,
        Stage::WrapUp,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Stage::Greeting => "greeting",
            Stage::Profiling => "profiling",
            Stage::Essence => "essence",
            Stage::Operations => "operations",
            Stage::ExpertiseMap => "expertise_map",
            Stage::FailureModes => "failure_modes",
            Stage::Mastery => "mastery",
            Stage::GrowthPath => "growth_path",
            Stage::WrapUp => "wrap_up",
        }
    }

    pub fn next(self) -> Option<Stage> {
        let i = Stage::ALL.iter().position(|s| *s == self)?;
        Stage::ALL.get(i + 1).copied()
    }

    pub(super) fn goal(self) -> &'static str {
        match self {
            Stage::Greeting => "build rapport and explain the interview; ask about their role",
            Stage::Profiling => "map their background, experience and current responsibilities",
            Stage::Essence => "their core philosophy of the role and what it is really about",
            Stage::Operations => "their daily work processes and methods, with concrete examples",
            Stage::ExpertiseMap => "their knowledge areas, strongest skills and skill levels",
            Stage::FailureModes => "common mistakes in their field and how they prevent them",
            Stage::Mastery => "expert-level insights and best practices others miss",
            Stage::GrowthPath => "how their expertise developed and how others can grow",
            Stage::WrapUp => "thank them, and ask if anything important was not covered",
        }
    }

    /// The question of a fallback turn (exactly one `?`, tested).
    pub fn fallback_question(self) -> &'static str {
        match self {
            Stage::Greeting => "Could you tell me a bit about your current role and what you do?",
            Stage::Profiling => "How did your career lead you to the work you do today?",
            Stage::Essence => "What would you say your role is really about, at its core?",
            Stage::Operations => "Could you walk me through a typical working day, step by step?",
            Stage::ExpertiseMap => "What would you consider your strongest professional skill?",
            Stage::FailureModes => {
                "What is the most common mistake you see people make in your field?"
            }
            Stage::Mastery => "What do you know now that you wish someone had told you on day one?",
            Stage::GrowthPath => "How would you advise someone to grow into a role like yours?",
            Stage::WrapUp => {
                "Is there anything important about your work that we have not covered?"
            }
        }
    }

    /// Interviewer turns after which the stage ends even if it is not complete.
    fn max_turns(self) -> u32 {
        match self {
            Stage::Greeting => 2,
            Stage::WrapUp => 1,
            _ => 5,
        }
    }

    /// Question depth that must have been reached before the stage may end on completeness.
    fn required_depth(self) -> u8 {
        match self {
            Stage::Greeting | Stage::WrapUp => 1,
            _ => 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engagement {
    High,
    Medium,
    Low,
}

impl Engagement {
    /// The seed's word bands: over 200 words high, 50–200 medium, under 50 low.
    pub fn of_answer(answer: &str) -> Engagement {
        match answer.split_whitespace().count() {
            n if n > 200 => Engagement::High,
            n if n >= 50 => Engagement::Medium,
            _ => Engagement::Low,
        }
    }

    pub(super) fn id(self) -> &'static str {
        match self {
            Engagement::High => "high",
            Engagement::Medium => "medium",
            Engagement::Low => "low",
        }
    }

    /// Least completeness an answer adds to its stage.
    fn min_step(self) -> u8 {
        match self {
            Engagement::High => 15,
            Engagement::Medium => 10,
            Engagement::Low => 5,
        }
    }
}

/// Where the interview stands, after the last accepted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterviewState {
    pub stage: Stage,
    /// Depth of the last question asked.
    pub depth: u8,
    pub max_depth_in_stage: u8,
    pub completeness: u8,
    pub stage_turns: u32,
    pub examples_collected: u32,
    pub turns: u32,
    /// The next turn moves to the next stage (or, after wrap_up, the interview ends).
    pub ready: bool,
    pub ready_reason: Option<String>,
    pub finished: bool,
}

impl Default for InterviewState {
    fn default() -> Self {
        InterviewState {
            stage: Stage::Greeting,
            depth: 0,
            max_depth_in_stage: 0,
            completeness: 0,
            stage_turns: 0,
            examples_collected: 0,
            turns: 0,
            ready: false,
            ready_reason: None,
            finished: false,
        }
    }
}

/// What the next turn may say: the state machine's decision, handed to the decoder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnPlan {
    pub stage: Stage,
    pub new_stage: bool,
    pub depths: Vec<u8>,
    pub completeness: (u8, u8),
    pub engagement: Engagement,
    pub examples: (u32, u32),
}

impl InterviewState {
    /// Decides the next turn's bounds from the state and the user's latest answer.
    pub fn plan(&self, answer: Option<&str>) -> TurnPlan {
        let (stage, new_stage) = if self.turns == 0 {
            (Stage::Greeting, true)
        } else if self.ready {
            (self.stage.next().unwrap_or(Stage::WrapUp), true)
        } else {
            (self.stage, false)
        };
        let engagement = answer
            .map(Engagement::of_answer)
            .unwrap_or(Engagement::Medium);
        let depths = if new_stage || self.depth >= 4 {
            vec![1]
        } else {
            vec![self.depth + 1, 1]
        };
        let completeness = if new_stage {
            (0, 10)
        } else {
            let lo = self
                .completeness
                .saturating_add(engagement.min_step())
                .min(100);
            (lo, self.completeness.saturating_add(35).min(100))
        };
        let examples = match answer {
            Some(a) if a.split_whitespace().count() >= 12 => {
                (self.examples_collected, self.examples_collected + 2)
            }
            _ => (self.examples_collected, self.examples_collected),
        };
        TurnPlan {
            stage,
            new_stage,
            depths,
            completeness,
            engagement,
            examples,
        }
    }

    /// Records an accepted turn (valid under `plan`) and decides whether the stage is done;
    /// writes that decision into the turn's `stage_transition_ready`.
    pub fn accept(&mut self, plan: &TurnPlan, turn: &mut Value) {
        let meta = &turn["metadata"];
        let depth = meta["question_depth"].as_u64().unwrap_or(1) as u8;
        let completeness = meta["completeness"].as_u64().unwrap_or(0) as u8;
        let examples = turn["internal_tracking"]["examples_collected"]
            .as_u64()
            .unwrap_or(self.examples_collected as u64) as u32;
        if plan.new_stage {
            self.stage = plan.stage;
            self.stage_turns = 0;
            self.max_depth_in_stage = 0;
        }
        self.stage_turns += 1;
        self.turns += 1;
        self.depth = depth;
        self.max_depth_in_stage = self.max_depth_in_stage.max(depth);
        self.completeness = completeness;
        self.examples_collected = examples;
        self.ready_reason =
            if completeness >= 80 && self.max_depth_in_stage >= self.stage.required_depth() {
                Some(format!(
                    "completeness {completeness} ≥ 80 and depth {} reached",
                    self.max_depth_in_stage
                ))
            } else if self.stage_turns >= self.stage.max_turns() {
                Some(format!(
                    "turn limit of the {} stage ({}) reached",
                    self.stage.id(),
                    self.stage.max_turns()
                ))
            } else {
                None
            };
        self.ready = self.ready_reason.is_some();
        if let Some(t) = turn
            .get_mut("internal_tracking")
            .and_then(|t| t.as_object_mut())
        {
            t.insert("stage_transition_ready".into(), Value::Bool(self.ready));
        }
    }

    /// Records the user's answer: after the wrap-up question, the interview is over.
    pub fn answered(&mut self) {
        if self.stage == Stage::WrapUp && self.ready {
            self.finished = true;
        }
    }
}

/// A well-formed turn for `plan` (tests of the state machine and of turn validation).
#[cfg(test)]
pub(super) fn turn_for(plan: &TurnPlan, depth: u8, completeness: u8) -> Value {
    serde_json::json!({
        "interview_stage": plan.stage.id(),
        "response": "That is helpful. What happens next?",
        "metadata": {"question_depth": depth, "completeness": completeness, "engagement_level": plan.engagement.id()},
        "internal_tracking": {"key_insights": [], "examples_collected": plan.examples.0, "follow_up_needed": []}
    })
}

#[cfg(test)]
mod tests {
    use super::super::turn::validate_turn;
    use super::*;

    #[test]
    fn stages_run_in_the_seed_order_and_end_after_wrap_up() {
        let ids: Vec<&str> = Stage::ALL.iter().map(|s| s.id()).collect();
        let schema: Value = crate::schemas::SchemaId::InterviewTurn.builtin().schema();
        let seed: Vec<&str> = schema["properties"]["interview_stage"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(ids, seed);
        // Always take the most the plan allows: every stage ends on completeness.
        let mut st = InterviewState::default();
        let mut seen = Vec::new();
        let mut answer = None;
        for _ in 0..100 {
            let plan = st.plan(answer);
            if seen.last() != Some(&plan.stage) {
                assert!(plan.new_stage);
                assert_eq!(plan.depths, vec![1], "a new stage starts at depth 1");
                seen.push(plan.stage);
            }
            let depth = *plan.depths.iter().max().unwrap();
            let mut t = turn_for(&plan, depth, plan.completeness.1);
            st.accept(&plan, &mut t);
            validate_turn(&t).unwrap();
            st.answered();
            if st.finished {
                break;
            }
            answer = Some("I run the on-call rotation for the payments platform.");
        }
        assert!(st.finished);
        assert_eq!(seen, Stage::ALL.to_vec());
    }

    #[test]
    fn a_stage_ends_at_80_only_after_depth_3() {
        let mut st = InterviewState {
            stage: Stage::Operations,
            depth: 1,
            max_depth_in_stage: 1,
            completeness: 50,
            stage_turns: 1,
            turns: 5,
            ..Default::default()
        };
        let plan = st.plan(Some("short answer"));
        assert_eq!(plan.stage, Stage::Operations);
        assert_eq!(plan.depths, vec![2, 1]);
        assert_eq!(plan.completeness, (55, 85));
        let mut t = turn_for(&plan, 2, 85);
        st.accept(&plan, &mut t);
        assert!(!st.ready, "depth 2 is not enough to leave operations");
        assert_eq!(t["internal_tracking"]["stage_transition_ready"], false);
        let plan = st.plan(Some("another answer"));
        assert_eq!(plan.depths, vec![3, 1]);
        let mut t = turn_for(&plan, 3, 90);
        st.accept(&plan, &mut t);
        assert!(st.ready, "{:?}", st.ready_reason);
        assert_eq!(t["internal_tracking"]["stage_transition_ready"], true);
        let plan = st.plan(Some("answer"));
        assert_eq!(plan.stage, Stage::ExpertiseMap);
        assert!(plan.new_stage);
        assert_eq!(plan.completeness, (0, 10));
    }

    #[test]
    fn depth_resets_after_4_and_a_stage_ends_at_its_turn_limit() {
        let mut st = InterviewState {
            stage: Stage::Mastery,
            depth: 4,
            max_depth_in_stage: 4,
            completeness: 20,
            stage_turns: 4,
            turns: 20,
            ..Default::default()
        };
        let plan = st.plan(Some("x"));
        assert_eq!(
            plan.depths,
            vec![1],
            "depth 4 is the maximum: a new topic follows"
        );
        let mut t = turn_for(&plan, 1, plan.completeness.0);
        st.accept(&plan, &mut t);
        assert!(st.ready);
        assert!(st.ready_reason.as_deref().unwrap().contains("turn limit"));
    }

    #[test]
    fn completeness_never_falls_and_engagement_follows_the_word_bands() {
        assert_eq!(Engagement::of_answer("a few words"), Engagement::Low);
        assert_eq!(
            Engagement::of_answer(&"word ".repeat(80)),
            Engagement::Medium
        );
        assert_eq!(
            Engagement::of_answer(&"word ".repeat(201)),
            Engagement::High
        );
        let st = InterviewState {
            stage: Stage::Essence,
            depth: 1,
            completeness: 97,
            turns: 3,
            stage_turns: 1,
            ..Default::default()
        };
        let plan = st.plan(Some(&"word ".repeat(60)));
        assert_eq!(plan.engagement, Engagement::Medium);
        assert_eq!(plan.completeness, (100, 100));
    }
}
