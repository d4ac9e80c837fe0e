//! The routing navigator (seeds/routing-navigator-protocol.md): a forensic summary in, a
//! bounded decision out. Stages run in order and the first that decides wins: fast-path
//! rules, deterministic checks (`stages`), then the model stage (`choose`), which scores
//! only the decisions the rules allow from the forensics and escalates when none is
//! clearly ahead. The kernel validates every decision (from any stage), including that
//! its reason names a forensic field (`facts`) and that a DETOUR's signature is the one
//! the forensics show; a rejected one becomes ESCALATE with the reason. Every decision is
//! appended to `RUN_BASE/<flow>/routing/decisions.jsonl`, fsynced (`log`).

mod choose;
mod facts;
mod flow;
mod kernel;
mod log;
mod stages;
mod summary;
#[cfg(test)]
mod tests;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use crate::jsonl::now_rfc3339;
pub use choose::MIN_LEAD;
pub use facts::{forensic_facts, names_forensic_field};
pub use flow::{Charter, Detour, Flow, Limits, Step, EXAMPLE_FLOW};
pub use kernel::kernel_check;
pub use log::{append_log, log_path, read_log, record, LogEntry};
pub use stages::{decoder_schema, deterministic, fast_path, offers, Offer};
pub use summary::{Concern, ForensicSummary, Iteration, Lint, Measurements, Tests};

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
    /// The forensic facts the decision was made on ("2 failing tests", "iteration 2 of
    /// 3", …): what the router console shows next to it.
    #[serde(default)]
    pub rests_on: Vec<String>,
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
        rests_on: Vec::new(),
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
        None if offers(flow, summary).len() == 1 => {
            let facts = forensic_facts(flow, summary).join("; ");
            let d = decision(
                DecisionKind::Escalate,
                None,
                None,
                format!(
                    "ESCALATE: no rule decides and nothing but escalation is allowed on {facts}"
                ),
                DecidedBy::Deterministic,
            );
            report.decision = "decided by deterministic: only ESCALATE is allowed".into();
            ProtocolStep::Done((kernel(flow, summary, d, &mut report), report))
        }
        None => {
            report.decision = "no rule decides: the LLM stage".into();
            report.decoder_schema = Some(decoder_schema(flow, summary));
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
        let proposed = choose::choose(llm, &flow, &s, &mut report)?;
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
        (ProtocolStep::NeedsLlm(p), None) => {
            let mut d =
                escalation("no rule decides and no LLM is available: a human must decide".into());
            d.rests_on = forensic_facts(flow, summary);
            Ok((d, p.report))
        }
    }
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
    let mut d = match kernel_check(flow, s, &proposed) {
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
    };
    if d.rests_on.is_empty() {
        d.rests_on = forensic_facts(flow, s);
    }
    d
}
