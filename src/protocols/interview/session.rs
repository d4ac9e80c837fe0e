//! An interview session bound to its transcript: create, resume, answer, next turn.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::llm::chat_template::Message;
use crate::llm::Llm;
use crate::structured::{generate_structured, OutputSpec, StructuredOutput, StructuredRequest};

use super::checks::{asks_about_itself, has_placeholder, speaks_as_the_person};
use super::state::InterviewState;
use super::transcript::{Record, TurnRecord};
use super::turn::{
    assemble_turn, fallback_turn, plan_note, response_pattern, validate_turn, TurnError,
    SYSTEM_PROMPT, WELCOME,
};

/// A turn's token budget (an acknowledgement and one question).
const TURN_MAX_TOKENS: usize = 96;
/// Prompts longer than this drop their oldest exchanges (the system prompt stays).
const MAX_PROMPT_TOKENS: usize = 3072;

/// Why a generated response is not used (the turn is generated again).
#[derive(Debug, thiserror::Error)]
enum Unfit {
    #[error("the turn repeats an earlier question")]
    Repeated,
    #[error("the turn speaks as the person rather than to them")]
    SpeaksAsThePerson,
    #[error("the turn holds a template placeholder")]
    Placeholder,
    #[error("the question is about the interviewer, not the person")]
    AboutItself,
}

/// Questions that stand in when every generated turn was unfit and the stage's own
/// question was asked already: each follows up on any answer.
const STAND_IN_QUESTIONS: &[&str] = &[
    "Could you give me a concrete example of that?",
    "What is the hardest part of that for you?",
    "What would you tell someone new to your work about this?",
    "What would you do differently if you started again?",
];

#[derive(Debug, Clone)]
pub struct InterviewOptions {
    pub reuse_kv: bool,
    pub seed: u64,
    /// Retries after a failed or unfit generation before the fallback turn.
    pub retries: u32,
    pub max_tokens: usize,
}

impl Default for InterviewOptions {
    fn default() -> Self {
        InterviewOptions {
            reuse_kv: true,
            seed: 7,
            retries: 2,
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
        Ok(generate_structured(self, req, &mut |_| {})?)
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
    /// Every answer so far (what a turn may not claim as the interviewer's own).
    answers: Vec<String>,
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
                started: crate::jsonl::now_rfc3339(),
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
            answers: Vec::new(),
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
                    iv.answers.push(text.clone());
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
                timestamp: crate::jsonl::now_rfc3339(),
                text: text.to_string(),
            },
        )?;
        self.state.answered();
        self.answers.push(text.to_string());
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
        // The model writes only the response, under a pattern that admits one question
        // put to the person; the turn's other fields are set by rule (`assemble_turn`).
        let pattern = response_pattern();
        let mut attempts = 0;
        let mut errors = Vec::new();
        let mut produced: Option<(Value, String, Vec<u32>, usize)> = None;
        let mut last_err = None;
        if self.state.turns == 0 {
            // The opening has nothing to build on: the greeting stage's own question.
            let response = format!("{WELCOME} {}", plan.stage.fallback_question());
            let tokens = backend.encode(&response)?;
            produced = Some((assemble_turn(&plan, &response, None), response, tokens, 0));
            attempts = 1;
        }
        while produced.is_none() && attempts <= self.opts.retries {
            attempts += 1;
            let mut req = StructuredRequest::new(Vec::new(), OutputSpec::Regex(pattern.clone()));
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
                let response = out.text.trim().to_string();
                if has_placeholder(&response) {
                    bail!(Unfit::Placeholder);
                }
                if speaks_as_the_person(&response, &self.answers) {
                    bail!(Unfit::SpeaksAsThePerson);
                }
                if asks_about_itself(&response) {
                    bail!(Unfit::AboutItself);
                }
                if self.repeats_a_question(&response) {
                    bail!(Unfit::Repeated);
                }
                let mut turn = assemble_turn(&plan, &response, self.pending_answer.as_deref());
                let mut probe = self.state.clone();
                probe.accept(&plan, &mut turn);
                validate_turn(&turn)?;
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
                let err = last_err.as_ref().expect("a failed attempt left its error");
                let mut t = fallback_turn(&plan, &self.state, TurnError::classify(err, attempts));
                if err.downcast_ref::<Unfit>().is_some() {
                    // The model answered, but not as an interviewer would: the stage's own
                    // question (or a general follow-up) not asked yet stands in, with no
                    // error (nothing failed).
                    let question = std::iter::once(plan.stage.fallback_question())
                        .chain(STAND_IN_QUESTIONS.iter().copied())
                        .map(|q| format!("Thank you. {q}"))
                        .find(|r| !self.repeats_a_question(r))
                        .unwrap_or_else(|| format!("Thank you. {}", STAND_IN_QUESTIONS[0]));
                    t = assemble_turn(&plan, &question, self.pending_answer.as_deref());
                }
                self.context = None;
                let text = t["response"].as_str().unwrap_or_default().to_string();
                (t, text, 0)
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
                timestamp: crate::jsonl::now_rfc3339(),
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

    /// Whether a response repeats an earlier turn's (words and case aside). Earlier
    /// assistant messages are the response text, or a turn object in transcripts written
    /// before the model wrote only the response.
    fn repeats_a_question(&self, response: &str) -> bool {
        let norm = |s: &str| {
            s.to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let new = norm(response);
        self.exchanges.iter().any(|(_, a)| {
            let old = serde_json::from_str::<Value>(a)
                .ok()
                .and_then(|v| v["response"].as_str().map(String::from))
                .unwrap_or_else(|| a.clone());
            norm(&old) == new
        })
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
        crate::jsonl::now_rfc3339().replace([':', '-'], "")
    )
}

/// The default transcript path: `<data dir>/sextant/interviews/interview-<UTC time>.jsonl`.
pub fn default_transcript_path() -> PathBuf {
    new_session_path(&crate::data_dir().join("interviews")).1
}

/// A new session id with its transcript path in `dir`, numbered when the id is taken.
pub fn new_session_path(dir: &Path) -> (String, PathBuf) {
    let base = new_session_id();
    let mut id = base.clone();
    let mut n = 1;
    while dir.join(format!("{id}.jsonl")).exists() {
        n += 1;
        id = format!("{base}-{n}");
    }
    let path = dir.join(format!("{id}.jsonl"));
    (id, path)
}

/// Whether `id` has the form of a session id (so it names a file in the interviews
/// folder and nothing else).
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // The opening turn is the program's: the model is not asked.
        let mut failing = Failing { calls: 0 };
        let (t, _) = iv.next_turn_with(&mut failing).unwrap();
        assert_eq!((failing.calls, t.get("error")), (0, None));
        iv.answer("I am a site reliability engineer.").unwrap();
        let (t, stats) = iv.next_turn_with(&mut failing).unwrap();
        assert_eq!(t["error"], "API_ERROR");
        assert_eq!(stats.attempts, 1);
        iv.answer("Eight years now.").unwrap();
        let mut iv = Interview::resume(&path, opts.clone()).unwrap();
        assert!(iv.needs_turn());
        let mut failing = Failing { calls: 0 };
        let (t, stats) = iv.next_turn_with(&mut failing).unwrap();
        assert_eq!((stats.attempts, failing.calls), (1, 1));
        assert_eq!(t["error"], "API_ERROR");
        // A torn last line (crash mid-write) is ignored on resume.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"type\":\"answ"))
            .unwrap();
        let iv = Interview::resume(&path, opts).unwrap();
        assert_eq!(iv.state.turns, 3);
        assert_eq!(iv.waiting_turn(), Some(&t));
        assert!(Interview::create(&path, "test", InterviewOptions::default()).is_err());
    }

    #[test]
    fn a_failed_retry_is_api_retry_failed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut iv = Interview::create(&path, "test", InterviewOptions::default()).unwrap();
        iv.next_turn_with(&mut Failing { calls: 0 }).unwrap();
        iv.answer("I am a site reliability engineer.").unwrap();
        let (t, stats) = iv.next_turn_with(&mut Failing { calls: 0 }).unwrap();
        assert_eq!(stats.attempts, 3);
        assert_eq!(t["error"], "API_RETRY_FAILED");
        let saved: Vec<Record> = crate::jsonl::read(&path).unwrap();
        match saved.last() {
            Some(Record::Turn(t)) => assert_eq!(t.errors.len(), 3),
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
