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

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::llm::chat_template::Message;
use crate::llm::Llm;
use crate::structured::{
    generate_structured, OutputSpec, StructuredError, StructuredOutput, StructuredRequest,
};

pub const SCHEMA: &str = include_str!("../../schemas/interview-turn.schema.json");

/// Longest response the decoder may write (the seed allows 2000; a spoken question plus a
/// short acknowledgement fits well within this, and the budget stays small).
const RESPONSE_MAX_CHARS: usize = 240;
/// A turn's token budget.
const TURN_MAX_TOKENS: usize = 384;
/// Prompts longer than this drop their oldest exchanges (the system prompt stays).
const MAX_PROMPT_TOKENS: usize = 3072;

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

    fn goal(self) -> &'static str {
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

    fn id(self) -> &'static str {
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

/// The schema the decoder runs under for one turn: the seed's fields, narrowed to `plan`.
pub fn decoder_schema(plan: &TurnPlan) -> Value {
    // Exactly one question mark, as the response's last character: the single-question
    // rule, enforced while decoding rather than checked afterwards.
    let pattern = format!("^[^?\\n]{{9,{}}}\\?$", RESPONSE_MAX_CHARS - 1);
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

#[derive(Debug, thiserror::Error)]
#[error("the turn repeats an earlier question")]
struct RepeatedQuestion;

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
        } else if err.downcast_ref::<StructuredError>().is_some() {
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
    super::validate_against(SCHEMA, turn)?;
    let response = turn["response"].as_str().unwrap_or("");
    let questions = response.matches('?').count();
    if questions != 1 {
        bail!("the response must ask exactly one question; it has {questions} question marks");
    }
    Ok(())
}

const SYSTEM_PROMPT: &str = "You are an expert interviewer capturing a professional's know-how, \
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
fn plan_note(plan: &TurnPlan) -> String {
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

#[derive(Debug, Clone)]
pub struct InterviewOptions {
    pub reuse_kv: bool,
    pub seed: u64,
    /// Retries after a failed generation before the fallback turn.
    pub retries: u32,
    pub max_tokens: usize,
}

impl Default for InterviewOptions {
    fn default() -> Self {
        InterviewOptions {
            reuse_kv: true,
            seed: 7,
            retries: 1,
            max_tokens: TURN_MAX_TOKENS,
        }
    }
}

/// What a generated turn cost.
#[derive(Debug, Clone, Serialize)]
pub struct TurnStats {
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
    pub latency_ms: f64,
    pub attempts: u32,
}

/// What produces turns: the LLM, or in tests a generator that fails on purpose.
pub trait TurnBackend {
    fn generate(&mut self, req: &StructuredRequest) -> Result<StructuredOutput>;
    /// The chat as prompt text (the model's chat template, generation prompt added).
    fn render(&self, messages: &[Message]) -> Result<String>;
    fn encode(&self, text: &str) -> Result<Vec<u32>>;
}

impl TurnBackend for Llm {
    fn generate(&mut self, req: &StructuredRequest) -> Result<StructuredOutput> {
        generate_structured(self, req, &mut |_| {})
    }

    fn render(&self, messages: &[Message]) -> Result<String> {
        self.template.render(messages, true)
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        crate::llm::tokenizer::encode(&self.tokenizer, text)
    }
}

/// An interview session bound to its transcript file.
pub struct Interview {
    pub path: PathBuf,
    pub state: InterviewState,
    pub opts: InterviewOptions,
    /// (user message, assistant message) of every turn so far.
    exchanges: Vec<(String, String)>,
    /// Answer given to the last turn, not yet answered by a new turn.
    pending_answer: Option<String>,
    last_turn: Option<Value>,
    /// The last turn's prompt and output as text and as the exact tokens the model saw
    /// (re-tokenizing generated text can split it differently, which would end the
    /// cached prefix early).
    context: Option<(String, Vec<u32>)>,
}

impl Interview {
    /// Starts a new transcript at `path` (which must not exist yet: never overwrite one).
    pub fn create(path: &Path, model: &str, opts: InterviewOptions) -> Result<Self> {
        if path.exists() {
            bail!(
                "{} already exists: continue it with --resume {0}, or choose another --transcript",
                path.display()
            );
        }
        crate::jsonl::append(
            path,
            &Record::Session {
                version: 1,
                started: super::routing::now_rfc3339(),
                model: model.to_string(),
            },
        )?;
        Ok(Interview::empty(path, opts))
    }

    fn empty(path: &Path, opts: InterviewOptions) -> Self {
        Interview {
            path: path.to_path_buf(),
            state: InterviewState::default(),
            opts,
            exchanges: Vec::new(),
            pending_answer: None,
            last_turn: None,
            context: None,
        }
    }

    /// Continues a saved transcript. A torn last line (a crash mid-write) is ignored.
    pub fn resume(path: &Path, opts: InterviewOptions) -> Result<Self> {
        if !path.exists() {
            bail!("{}: no such transcript", path.display());
        }
        let records: Vec<Record> = crate::jsonl::read(path)?;
        if !matches!(records.first(), Some(Record::Session { .. })) {
            bail!(
                "{} is not an interview transcript (its first line is not a session record)",
                path.display()
            );
        }
        let mut iv = Interview::empty(path, opts);
        for r in records {
            match r {
                Record::Session { .. } => {}
                Record::Turn(t) => {
                    let t = *t;
                    iv.exchanges.push((t.user_message, t.assistant_message));
                    iv.state = t.state;
                    iv.last_turn = Some(t.turn);
                    iv.pending_answer = None;
                }
                Record::Answer { text, .. } => {
                    iv.state.answered();
                    iv.pending_answer = Some(text);
                }
            }
        }
        Ok(iv)
    }

    /// The last interviewer turn, if it still waits for an answer.
    pub fn waiting_turn(&self) -> Option<&Value> {
        if self.pending_answer.is_some() || self.state.finished {
            None
        } else {
            self.last_turn.as_ref()
        }
    }

    /// True when the next step is generating a turn (at the start, or after an answer).
    pub fn needs_turn(&self) -> bool {
        !self.state.finished && (self.state.turns == 0 || self.pending_answer.is_some())
    }

    pub fn is_finished(&self) -> bool {
        self.state.finished
    }

    /// Records the user's answer to the waiting turn (saved before anything else happens).
    pub fn answer(&mut self, text: &str) -> Result<()> {
        if self.waiting_turn().is_none() {
            bail!("no question is waiting for an answer");
        }
        crate::jsonl::append(
            &self.path,
            &Record::Answer {
                index: self.state.turns,
                timestamp: super::routing::now_rfc3339(),
                text: text.to_string(),
            },
        )?;
        self.state.answered();
        self.pending_answer = Some(text.to_string());
        Ok(())
    }

    /// Generates, validates, records and returns the next turn with the model.
    pub fn next_turn(&mut self, llm: &mut Llm) -> Result<(Value, TurnStats)> {
        self.next_turn_with(llm)
    }

    /// `next_turn` over any generator (tests inject failures here).
    pub fn next_turn_with(&mut self, backend: &mut dyn TurnBackend) -> Result<(Value, TurnStats)> {
        if !self.needs_turn() {
            bail!("the interview is waiting for an answer (or has finished)");
        }
        let start = Instant::now();
        let plan = self.state.plan(self.pending_answer.as_deref());
        let user_message = match &self.pending_answer {
            Some(a) => format!("{a}\n\n{}", plan_note(&plan)),
            None => format!("The interview starts now.\n\n{}", plan_note(&plan)),
        };
        let (prompt_text, prompt_tokens) = self.prompt(&user_message, backend)?;
        let schema = decoder_schema(&plan);
        let mut attempts = 0;
        let mut errors = Vec::new();
        let mut produced: Option<(Value, String, Vec<u32>, usize)> = None;
        let mut last_err = None;
        while attempts <= self.opts.retries {
            attempts += 1;
            let mut req =
                StructuredRequest::new(Vec::new(), OutputSpec::JsonSchema(schema.clone()));
            req.prompt_tokens = Some(prompt_tokens.clone());
            req.max_tokens = self.opts.max_tokens;
            req.reuse_kv = self.opts.reuse_kv;
            // Each retry samples hotter: a retry exists to get a different turn.
            req.sampling.temperature = 0.5 + 0.2 * (attempts - 1) as f32;
            req.sampling.seed = self
                .opts
                .seed
                .wrapping_add(self.state.turns as u64 * 1000 + attempts as u64);
            let result = backend.generate(&req).and_then(|out| {
                let mut turn = out.value.clone().context("no object was generated")?;
                let mut probe = self.state.clone();
                probe.accept(&plan, &mut turn);
                validate_turn(&turn)?;
                // A small model can repeat its previous question word for word; ask again
                // while retries remain (a repeat is still a valid turn, so the last
                // attempt keeps it).
                if attempts <= self.opts.retries && self.repeats_a_question(&turn) {
                    bail!(RepeatedQuestion);
                }
                Ok((
                    turn,
                    out.text,
                    out.generation.tokens,
                    out.generation.reused_tokens,
                ))
            });
            match result {
                Ok(p) => {
                    produced = Some(p);
                    break;
                }
                Err(e) => {
                    errors.push(format!("{e:#}"));
                    last_err = Some(e);
                }
            }
        }
        let (mut turn, assistant_message, reused_tokens) = match produced {
            Some((turn, text, output_tokens, reused)) => {
                let mut tokens = prompt_tokens.clone();
                tokens.extend_from_slice(&output_tokens);
                self.context = Some((format!("{prompt_text}{text}"), tokens));
                (turn, text, reused)
            }
            None => {
                let code = TurnError::classify(last_err.as_ref().unwrap(), attempts);
                let t = fallback_turn(&plan, &self.state, code);
                self.context = None;
                (t.clone(), serde_json::to_string(&t)?, 0)
            }
        };
        let prompt_tokens = prompt_tokens.len();
        self.state.accept(&plan, &mut turn);
        validate_turn(&turn).context("internal error: an accepted turn does not validate")?;
        let stats = TurnStats {
            prompt_tokens,
            reused_tokens,
            latency_ms: start.elapsed().as_secs_f64() * 1e3,
            attempts,
        };
        crate::jsonl::append(
            &self.path,
            &Record::Turn(Box::new(TurnRecord {
                index: self.state.turns - 1,
                timestamp: super::routing::now_rfc3339(),
                turn: turn.clone(),
                user_message: user_message.clone(),
                assistant_message: assistant_message.clone(),
                state: self.state.clone(),
                plan: serde_json::to_value(&plan)?,
                attempts,
                errors,
                prompt_tokens,
                reused_tokens,
                latency_ms: stats.latency_ms,
            })),
        )?;
        self.exchanges.push((user_message, assistant_message));
        self.pending_answer = None;
        self.last_turn = Some(turn.clone());
        Ok((turn, stats))
    }

    fn repeats_a_question(&self, turn: &Value) -> bool {
        let norm = |v: &Value| {
            v["response"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let new = norm(turn);
        self.exchanges
            .iter()
            .any(|(_, a)| serde_json::from_str::<Value>(a).is_ok_and(|old| norm(&old) == new))
    }

    /// System prompt, as many recent exchanges as fit, and the new user message, as text
    /// and tokens. When the text extends the previous turn's, the previous tokens are kept
    /// and only the new part is tokenized.
    fn prompt(&self, user_message: &str, backend: &dyn TurnBackend) -> Result<(String, Vec<u32>)> {
        let build = |from: usize| {
            let mut m = vec![Message::new("system", SYSTEM_PROMPT)];
            for (u, a) in &self.exchanges[from..] {
                m.push(Message::new("user", u));
                m.push(Message::new("assistant", a));
            }
            m.push(Message::new("user", user_message));
            m
        };
        let mut from = 0;
        loop {
            let text = backend.render(&build(from))?;
            let tokens = match &self.context {
                Some((prev, prev_tokens)) if text.starts_with(prev.as_str()) => {
                    let mut t = prev_tokens.clone();
                    t.extend(backend.encode(&text[prev.len()..])?);
                    t
                }
                _ => backend.encode(&text)?,
            };
            if from >= self.exchanges.len() || tokens.len() <= MAX_PROMPT_TOKENS {
                return Ok((text, tokens));
            }
            // Drop two exchanges at a time so the cache is rebuilt less often.
            from = (from + 2).min(self.exchanges.len());
        }
    }
}

/// A new session's name: `interview-<UTC time>`.
pub fn new_session_id() -> String {
    format!(
        "interview-{}",
        super::routing::now_rfc3339().replace([':', '-'], "")
    )
}

/// The default transcript path: `./interviews/interview-<UTC time>.jsonl`.
pub fn default_transcript_path() -> PathBuf {
    PathBuf::from("interviews").join(format!("{}.jsonl", new_session_id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_for(plan: &TurnPlan, depth: u8, completeness: u8) -> Value {
        json!({
            "interview_stage": plan.stage.id(),
            "response": "That is helpful. What happens next?",
            "metadata": {"question_depth": depth, "completeness": completeness, "engagement_level": plan.engagement.id()},
            "internal_tracking": {"key_insights": [], "examples_collected": plan.examples.0, "follow_up_needed": []}
        })
    }

    #[test]
    fn stages_run_in_the_seed_order_and_end_after_wrap_up() {
        let ids: Vec<&str> = Stage::ALL.iter().map(|s| s.id()).collect();
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
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
                super::super::validate_against(&decoder_schema(&plan).to_string(), &no_err)
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

    struct Failing {
        calls: u32,
    }

    impl TurnBackend for Failing {
        fn generate(&mut self, _: &StructuredRequest) -> Result<StructuredOutput> {
            self.calls += 1;
            Err(anyhow::anyhow!("device lost"))
        }
        fn render(&self, m: &[Message]) -> Result<String> {
            Ok(m.iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"))
        }
        fn encode(&self, text: &str) -> Result<Vec<u32>> {
            Ok(text.bytes().map(u32::from).collect())
        }
    }

    /// Generation that always fails: the turn falls back, is saved, and the session goes on.
    #[test]
    fn failing_generation_gives_a_fallback_turn_and_resume_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let opts = InterviewOptions {
            retries: 0,
            ..Default::default()
        };
        let mut iv = Interview::create(&path, "test", opts.clone()).unwrap();
        let (t, stats) = iv.next_turn_with(&mut Failing { calls: 0 }).unwrap();
        assert_eq!(t["error"], "API_ERROR");
        assert_eq!(stats.attempts, 1);
        iv.answer("I am a site reliability engineer.").unwrap();
        let mut iv = Interview::resume(&path, opts.clone()).unwrap();
        assert!(iv.needs_turn());
        let mut failing = Failing { calls: 0 };
        let (t, stats) = iv.next_turn_with(&mut failing).unwrap();
        assert_eq!((stats.attempts, failing.calls), (1, 1));
        assert_eq!(t["interview_stage"], "greeting");
        // A torn last line (crash mid-write) is ignored on resume.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"type\":\"answ"))
            .unwrap();
        let iv = Interview::resume(&path, opts).unwrap();
        assert_eq!(iv.state.turns, 2);
        assert_eq!(iv.waiting_turn(), Some(&t));
        assert!(Interview::create(&path, "test", InterviewOptions::default()).is_err());
    }

    #[test]
    fn a_failed_retry_is_api_retry_failed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut iv = Interview::create(&path, "test", InterviewOptions::default()).unwrap();
        let (t, stats) = iv.next_turn_with(&mut Failing { calls: 0 }).unwrap();
        assert_eq!(stats.attempts, 2);
        assert_eq!(t["error"], "API_RETRY_FAILED");
        let saved: Vec<Record> = crate::jsonl::read(&path).unwrap();
        match saved.last() {
            Some(Record::Turn(t)) => assert_eq!(t.errors.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    /// A random model under the decoder schema: every turn is valid, generated or fallback.
    #[test]
    fn every_turn_of_a_random_model_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        let mut llm = crate::llm::tiny::tiny_llm(21).unwrap();
        let path = dir.path().join("t.jsonl");
        let opts = InterviewOptions {
            max_tokens: 1024,
            ..Default::default()
        };
        let mut iv = Interview::create(&path, "tiny", opts).unwrap();
        let mut generated = 0;
        for i in 0..4 {
            let (t, _) = iv.next_turn(&mut llm).unwrap();
            validate_turn(&t).unwrap();
            generated += t.get("error").is_none() as usize;
            iv.answer(&format!("answer number {i} about my work"))
                .unwrap();
        }
        assert!(generated > 0, "no turn was generated by the model");
    }
}
