//! The routing navigator (seeds/routing-navigator-protocol.md): a forensic summary in, a
//! bounded decision out. Stages run in order and the first that decides wins: fast-path
//! rules, deterministic checks (`stages`), then the LLM under a schema whose enums are the
//! flow's own vocabulary, step ids and detour targets. The kernel validates every decision
//! (from any stage); a rejected one becomes ESCALATE with the reason. Every decision is
//! appended to `RUN_BASE/<flow>/routing/decisions.jsonl`, fsynced (`log`).

mod flow;
mod kernel;
mod log;
mod stages;
mod summary;
#[cfg(test)]
mod tests;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::jsonl::now_rfc3339;
pub use flow::{Charter, Detour, Flow, Limits, Step, EXAMPLE_FLOW};
pub use kernel::kernel_check;
pub use log::{append_log, log_path, read_log, record, LogEntry};
pub use stages::{decoder_schema, deterministic, fast_path};
pub use summary::{Concern, ForensicSummary, Iteration, Lint, Measurements, Tests};

use super::shared::llm_object;
use super::{Pending, Report, Step as ProtocolStep};
use crate::llm::Llm;

/// The seed's decision vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DecisionKind {
    Continue,
    Loop,
    Detour,
    InjectFlow,
    InjectNodes,
    Escalate,
    Terminate,
}

impl DecisionKind {
    pub const ALL: [DecisionKind; 7] = [
        DecisionKind::Continue,
        DecisionKind::Loop,
        DecisionKind::Detour,
        DecisionKind::InjectFlow,
        DecisionKind::InjectNodes,
        DecisionKind::Escalate,
        DecisionKind::Terminate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Continue => "CONTINUE",
            DecisionKind::Loop => "LOOP",
            DecisionKind::Detour => "DETOUR",
            DecisionKind::InjectFlow => "INJECT_FLOW",
            DecisionKind::InjectNodes => "INJECT_NODES",
            DecisionKind::Escalate => "ESCALATE",
            DecisionKind::Terminate => "TERMINATE",
        }
    }
}

impl PartialEq<&str> for DecisionKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

/// Which stage decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    FastPath,
    Deterministic,
    /// The LLM stage ("navigator" in logs written before it was renamed).
    #[serde(alias = "navigator")]
    Llm,
    /// No stage could decide, or the kernel rejected what one proposed.
    Escalate,
}

impl DecidedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::FastPath => "fast-path",
            DecidedBy::Deterministic => "deterministic",
            DecidedBy::Llm => "llm",
            DecidedBy::Escalate => "escalate",
        }
    }
}

impl PartialEq<&str> for DecidedBy {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Decision {
    pub decision: DecisionKind,
    pub next_step_id: Option<String>,
    pub detour_target: Option<String>,
    pub reason: String,
    pub confidence: Confidence,
    pub decided_by: DecidedBy,
}

/// A rule's decision (rules are certain: HIGH).
pub(crate) fn decision(
    kind: DecisionKind,
    next: Option<&str>,
    detour: Option<&str>,
    reason: String,
    by: DecidedBy,
) -> Decision {
    Decision {
        decision: kind,
        next_step_id: next.map(str::to_string),
        detour_target: detour.map(str::to_string),
        reason,
        confidence: Confidence::High,
        decided_by: by,
    }
}

/// The LLM stage's part: the flow and the summary no rule decided.
pub struct PendingRoute {
    flow: Flow,
    summary: ForensicSummary,
    report: Report,
}

/// The rule stages, then the kernel; the LLM stage is left pending when no rule decides.
pub fn prepare(
    flow: &Flow,
    summary: &ForensicSummary,
) -> ProtocolStep<(Decision, Report), PendingRoute> {
    let mut report = Report {
        mode: "route".into(),
        ..Default::default()
    };
    match fast_path(flow, summary).or_else(|| deterministic(flow, summary)) {
        Some(d) => {
            report.decision = format!("decided by {}", d.decided_by);
            let d = kernel(flow, summary, d, &mut report);
            ProtocolStep::Done((d, report))
        }
        None => {
            report.decision = "no rule decides: the LLM stage".into();
            ProtocolStep::NeedsLlm(PendingRoute {
                flow: flow.clone(),
                summary: summary.clone(),
                report,
            })
        }
    }
}

impl Pending for PendingRoute {
    type Output = (Decision, Report);

    fn finish(self, llm: &mut Llm) -> Result<(Decision, Report)> {
        let PendingRoute {
            flow,
            summary: s,
            mut report,
        } = self;
        let user = format!(
            "Flow '{}'. Goal: {}. Non-goals: {}. Steps: {}. Known detours: {}.\n\
             Forensic summary:\n{}\n\nDecide the next routing step.",
            flow.name,
            flow.charter.goal,
            flow.charter.non_goals.join("; "),
            flow.steps
                .iter()
                .map(|x| x.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            flow.detours
                .iter()
                .map(|d| format!("{} -> {}", d.signature, d.target))
                .collect::<Vec<_>>()
                .join(", "),
            serde_json::to_string(&s)?
        );
        let v = llm_object(llm, SYSTEM, &user, decoder_schema(&flow, &s), &mut report)?;
        let proposed = match llm_decision(&v) {
            Ok(d) => d,
            Err(why) => {
                report.notes.push(why.clone());
                escalation(format!("the LLM's decision is not usable: {why}"))
            }
        };
        let d = kernel(&flow, &s, proposed, &mut report);
        Ok((d, report))
    }
}

/// Both steps at once: the LLM stage runs when `llm` is given and no rule decides; with
/// no LLM it escalates to a human.
pub fn route(
    flow: &Flow,
    summary: &ForensicSummary,
    llm: Option<&mut Llm>,
) -> Result<(Decision, Report)> {
    match (prepare(flow, summary), llm) {
        (ProtocolStep::Done(d), _) => Ok(d),
        (ProtocolStep::NeedsLlm(p), Some(llm)) => p.finish(llm),
        (ProtocolStep::NeedsLlm(p), None) => Ok((
            escalation("no rule decides and no LLM is available: a human must decide".into()),
            p.report,
        )),
    }
}

/// The decision object the LLM wrote (its schema is a narrowed copy of the seed's).
fn llm_decision(v: &Value) -> Result<Decision, String> {
    let decision =
        serde_json::from_value(v["decision"].clone()).map_err(|e| format!("decision: {e}"))?;
    Ok(Decision {
        decision,
        next_step_id: v["next_step_id"].as_str().map(str::to_string),
        detour_target: v["detour_target"].as_str().map(str::to_string),
        reason: v["reason"].as_str().unwrap_or_default().into(),
        confidence: serde_json::from_value(v["confidence"].clone()).unwrap_or(Confidence::Low),
        decided_by: DecidedBy::Llm,
    })
}

fn escalation(reason: String) -> Decision {
    decision(
        DecisionKind::Escalate,
        None,
        None,
        reason,
        DecidedBy::Escalate,
    )
}

/// The kernel's verdict on a proposed decision: kept, or replaced by ESCALATE with why.
fn kernel(flow: &Flow, s: &ForensicSummary, proposed: Decision, report: &mut Report) -> Decision {
    match kernel_check(flow, s, &proposed) {
        Ok(()) => proposed,
        Err(why) => {
            report
                .notes
                .push(format!("kernel rejected {proposed:?}: {why}"));
            escalation(format!(
                "{} decision rejected by the kernel: {why}",
                proposed.decided_by
            ))
        }
    }
}

const SYSTEM: &str = "You are the routing navigator of a software build flow. Route on the \
    measurements, not on narrative. When in doubt, escalate.";
