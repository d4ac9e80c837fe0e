//! The two agents behind the service: routing (a forensic summary in, a logged decision
//! out) and interviews (sessions kept by id, each with its transcript file).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Service, ServiceError};
use crate::kb::parse::excerpt;
use crate::protocols::interview::{self, Interview, InterviewOptions, TurnStats};
use crate::protocols::routing::{self, Decision, Flow, ForensicSummary};
use crate::protocols::Report;

/// The longest flow name: it becomes a folder name under the run base.
const MAX_FLOW_NAME: usize = 64;

/// A routing decision, logged, with what it rests on.
pub struct Routed {
    pub decision: Decision,
    pub report: Report,
    /// The flow it was routed in.
    pub flow: String,
    /// The decision log it was appended to.
    pub log: PathBuf,
}

/// Which transcript an interview session writes.
pub enum InterviewFile<'a> {
    /// A new transcript at this path.
    New(&'a Path),
    /// Continue the transcript at this path.
    Resume(&'a Path),
}

/// One step of an interview: the interviewer's turn, or the end.
pub struct InterviewStep {
    /// The turn waiting for the person's answer; `None` once the interview is done.
    pub turn: Option<Value>,
    pub done: bool,
    /// Set when the model wrote the turn in this step.
    pub stats: Option<TurnStats>,
}

impl Service {
    /// Routes one forensic summary (its JSON text) in the named flow (default: the
    /// service's) and appends the decision to the flow's log.
    pub fn route(&self, forensics: &str, flow: Option<&str>) -> Result<Routed, ServiceError> {
        let flow = self.flow(flow)?;
        let summary = ForensicSummary::parse(forensics, &flow)
            .map_err(|e| ServiceError::BadRequest(format!("{e:#}")))?;
        let (decision, report) = self.finish(routing::prepare(&flow, &summary))?;
        let log = routing::record(&self.config.run_base, &flow, &summary, &decision)?;
        Ok(Routed {
            decision,
            report,
            flow: flow.name,
            log,
        })
    }

    pub(super) fn route_json(
        &self,
        forensics: &Value,
        flow: Option<&str>,
    ) -> Result<Value, ServiceError> {
        let routed = self.route(&forensics.to_string(), flow)?;
        let mut v = serde_json::to_value(&routed.decision).map_err(anyhow::Error::from)?;
        v["flow"] = json!(routed.flow);
        Ok(v)
    }

    /// A flow's decision log.
    pub(super) fn route_log(&self, flow: &str) -> Result<Value, ServiceError> {
        let path = routing::log_path(&self.config.run_base, flow_name(flow)?);
        Ok(json!({ "decisions": routing::read_log(&path)? }))
    }

    /// The flow a routing request names: the default, or one from the flows folder.
    fn flow(&self, name: Option<&str>) -> Result<Flow, ServiceError> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(self.config.flow.clone());
        };
        if name == self.config.flow.name {
            return Ok(self.config.flow.clone());
        }
        let name = flow_name(name)?;
        for ext in ["toml", "json"] {
            let path = self.config.flows_dir.join(format!("{name}.{ext}"));
            if path.is_file() {
                return Flow::load(&path).map_err(|e| ServiceError::BadRequest(format!("{e:#}")));
            }
        }
        Err(ServiceError::NotFound(format!(
            "no flow named {name:?}: use {:?} or put {name}.toml in {}",
            self.config.flow.name,
            self.config.flows_dir.display()
        )))
    }

    /// Starts or resumes an interview with its transcript at a path the caller chose (the
    /// CLI's `--transcript` / `--resume`); returns the session id and the transcript.
    pub fn open_interview(
        &self,
        file: InterviewFile<'_>,
        opts: InterviewOptions,
    ) -> Result<(String, PathBuf), ServiceError> {
        let iv = match file {
            InterviewFile::New(path) => Interview::create(path, &self.llm_name(), opts)?,
            InterviewFile::Resume(path) => Interview::resume(path, opts)
                .map_err(|e| ServiceError::NotFound(format!("{e:#}")))?,
        };
        let path = iv.path.clone();
        let id = interview::new_session_id();
        self.interviews_lock().insert(id.clone(), iv);
        Ok((id, path))
    }

    /// One step of the session `id`: the person's answer recorded (when one waits for it),
    /// then the next turn written by the model, or the end. Without an answer, a turn that
    /// is waiting is shown again.
    pub fn interview_step(
        &self,
        id: &str,
        answer: Option<&str>,
    ) -> Result<InterviewStep, ServiceError> {
        let answer = answer.map(str::trim).filter(|s| !s.is_empty());
        let mut sessions = self.interviews_lock();
        let iv = sessions
            .get_mut(id)
            .ok_or_else(|| ServiceError::NotFound(format!("no interview session {id:?}")))?;
        if let Some(turn) = iv.waiting_turn() {
            match answer {
                Some(a) => iv.answer(a)?,
                None => {
                    return Ok(InterviewStep {
                        turn: Some(turn.clone()),
                        done: false,
                        stats: None,
                    })
                }
            }
        }
        if iv.is_finished() {
            return Ok(InterviewStep {
                turn: None,
                done: true,
                stats: None,
            });
        }
        let (turn, stats) = self.with_llm(|llm| Ok(iv.next_turn(llm)?))?;
        Ok(InterviewStep {
            turn: Some(turn),
            done: false,
            stats: Some(stats),
        })
    }

    /// `Request::Interview`: a session named by id lives in the open KB's `interviews`
    /// folder; no session starts a new one there.
    pub(super) fn interview_json(
        &self,
        session: Option<&str>,
        answer: Option<&str>,
    ) -> Result<Value, ServiceError> {
        let id = match session.filter(|s| !s.is_empty()) {
            Some(id) => {
                if !interview::is_session_id(id) {
                    return Err(ServiceError::BadRequest(format!(
                        "session {id:?} is not an id"
                    )));
                }
                if !self.interviews_lock().contains_key(id) {
                    let path = self.kb_dir().join("interviews").join(format!("{id}.jsonl"));
                    let iv = Interview::resume(&path, InterviewOptions::default())
                        .map_err(|e| ServiceError::NotFound(format!("{e:#}")))?;
                    self.interviews_lock().entry(id.to_string()).or_insert(iv);
                }
                id.to_string()
            }
            None => {
                let (id, path) = interview::new_session_path(&self.kb_dir().join("interviews"));
                let iv = Interview::create(&path, &self.llm_name(), InterviewOptions::default())?;
                self.interviews_lock().insert(id.clone(), iv);
                id
            }
        };
        let step = self.interview_step(&id, answer)?;
        let mut v = json!({"session": id, "turn": step.turn, "done": step.done});
        if let Some(stats) = step.stats {
            v["stats"] = serde_json::to_value(stats).map_err(anyhow::Error::from)?;
        }
        Ok(v)
    }
}

/// A flow name that can only name a folder under the run base or a file in the flows
/// folder: letters, digits, - and _, at most `MAX_FLOW_NAME` of them.
pub(super) fn flow_name(flow: &str) -> Result<&str, ServiceError> {
    if flow.is_empty()
        || flow.len() > MAX_FLOW_NAME
        || !flow
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ServiceError::BadRequest(format!(
            "flow {:?}: name a flow with 1 to {MAX_FLOW_NAME} letters, digits, - and _",
            excerpt(flow, 40)
        )));
    }
    Ok(flow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_names_cannot_name_paths() {
        assert!(flow_name("build").is_ok());
        assert!(flow_name(&"a".repeat(MAX_FLOW_NAME)).is_ok());
        let long = "a".repeat(5000);
        for bad in ["", "../etc", "/etc/passwd", "a/b", "a.toml", long.as_str()] {
            let e = flow_name(bad).unwrap_err();
            assert!(matches!(e, ServiceError::BadRequest(_)), "{bad}");
            assert!(e.to_string().len() < 200, "{e}");
        }
    }
}
