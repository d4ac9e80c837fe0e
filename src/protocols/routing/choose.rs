//! The model stage: what no rule decides, from measured signals.
//!
//! - HIGH concerns (the usual case): a checklist question per concern — a defect the
//!   implementer fixes, or a decision someone else must make? — scored as the probability
//!   of each answer; LOOP when every concern is clearly a defect, ESCALATE when one is
//!   clearly a decision or any is unclear.
//! - Otherwise (an unknown failure signature, a FAILED step): the decisions the rules
//!   allow (`offers`) scored as the model's answer; the best only when it leads by
//!   `MIN_LEAD`, else ESCALATE.
//!
//! "When in doubt, escalate — never guess." The reason is written from the forensic facts,
//! so it names the fields the decision rests on.

use anyhow::Result;

use super::facts::forensic_facts;
use super::stages::{offers, Offer};
use super::{Confidence, DecidedBy, Decision, DecisionKind, Flow, ForensicSummary};
use crate::llm::chat_template::Message;
use crate::llm::choice::{option_logprobs, relative_probabilities};
use crate::llm::Llm;
use crate::protocols::Report;

/// The best decision must lead the next by this much relative probability, else the
/// stage escalates.
pub const MIN_LEAD: f64 = 0.2;
/// The checklist's boundary between a defect and a decision, and the band around it where
/// neither is clearly ahead: the midpoint of the tuning half's two groups (fixable
/// concerns 0.50–0.76, person-needing 0.02–0.27) and a band inside the gap.
pub const BUG_MIN: f64 = 0.39;
pub const UNSURE_BAND: f64 = 0.05;
/// HIGH concerns judged per decision (each costs one short model call).
const MAX_JUDGED: usize = 3;

/// What each decision means, as the model is told (the seed's vocabulary table).
fn meaning(o: &Offer, s: &ForensicSummary) -> String {
    match o.kind {
        DecisionKind::Loop => format!(
            "run {} again: the implementer can fix what the forensics show (failing tests, a defect in the code a concern points at)",
            s.step_completed
        ),
        DecisionKind::Escalate => "a human must decide: a concern asks for a product, design, legal or access decision the implementer cannot make, or the failure is one nobody knows how to fix".into(),
        DecisionKind::Continue => format!(
            "advance to {}: the step's work is done",
            o.next_step_id.as_deref().unwrap_or("the next step")
        ),
        DecisionKind::Terminate => "finish the flow: the last step's work is done".into(),
        DecisionKind::Detour => format!(
            "send the work to {}, the known fix for this failure signature",
            o.detour_target.as_deref().unwrap_or("the known fix")
        ),
        DecisionKind::InjectFlow => "start another flow first: this one cannot go on as it is".into(),
        DecisionKind::InjectNodes => "add ad-hoc steps for a requirement the flow does not cover".into(),
    }
}

/// The prompt: the flow, the step, the facts, the allowed decisions.
fn prompt(flow: &Flow, s: &ForensicSummary, offers: &[Offer], facts: &[String]) -> String {
    let step = flow
        .steps
        .iter()
        .find(|x| x.id == s.step_completed)
        .map(|x| format!("{} ({})", x.id, x.description))
        .unwrap_or_else(|| s.step_completed.clone());
    let facts: Vec<String> = facts.iter().map(|f| format!("- {f}")).collect();
    let choices: Vec<String> = offers
        .iter()
        .map(|o| format!("- {}: {}", o.kind.as_str(), meaning(o, s)))
        .collect();
    format!(
        "Flow '{}' (goal: {}). Step {step} has finished.\nForensics:\n{}\n\n\
         Decisions allowed here:\n{}\n\nWhich decision do the forensics call for?",
        flow.name,
        flow.charter.goal,
        facts.join("\n"),
        choices.join("\n")
    )
}

/// The checklist question asked of each HIGH concern: a defect the implementer fixes in
/// the code, or a decision someone else must make?
fn concern_question(concern: &str) -> String {
    format!(
        "Code review finding: \"{concern}\"\nIs it a bug the programmer fixes in the code, \
         or a decision someone else (product owner, legal, security, operations) must make? \
         Answer bug or decision."
    )
}

/// Worked answers shown before the question (written for the prompt, not taken from the
/// routing set). Without them the model gives every concern the same answer: the
/// probability of "bug" ranged 0.38–0.46 over fixable and person-needing concerns alike
/// (docs/AGENTS.md).
const CONCERN_EXAMPLES: &[(&str, &str)] = &[
    ("The loop variable shadows the outer index", "bug"),
    (
        "Whether to keep supporting Windows 7 must be decided by the product owner",
        "decision",
    ),
    (
        "The timeout is hard-coded instead of read from the configuration",
        "bug",
    ),
    (
        "Sending user emails to a third-party analytics service requires a privacy review",
        "decision",
    ),
];

/// The probability, relative to "decision", that the model calls a concern a bug.
pub fn bug_probability(llm: &mut Llm, concern: &str) -> Result<f64> {
    let mut messages = vec![Message::new("system", CHECKLIST_SYSTEM)];
    for (c, a) in CONCERN_EXAMPLES {
        messages.push(Message::new("user", &concern_question(c)));
        messages.push(Message::new("assistant", a));
    }
    messages.push(Message::new("user", &concern_question(concern)));
    let lp = option_logprobs(llm, &messages, "", &["bug", "decision"])?;
    Ok(relative_probabilities(&lp)[0])
}

/// The checklist's verdict on HIGH concerns: each is a bug (LOOP can fix it) when its
/// probability is at least `BUG_MIN + UNSURE_BAND`, needs a person (ESCALATE) below
/// `BUG_MIN - UNSURE_BAND`; in between no decision is clearly ahead.
fn judge_concerns(
    llm: &mut Llm,
    s: &ForensicSummary,
    report: &mut Report,
) -> Result<Option<(DecisionKind, String, Confidence)>> {
    let high: Vec<&str> = s
        .forensics
        .concerns
        .iter()
        .filter(|c| c.severity == "HIGH")
        .map(|c| c.description.as_str())
        .take(MAX_JUDGED)
        .collect();
    if high.is_empty() {
        return Ok(None);
    }
    let mut judged = Vec::new();
    for c in &high {
        let p = bug_probability(llm, c)?;
        report
            .notes
            .push(format!("checklist: P(bug) {p:.2} for HIGH concern {c:?}"));
        judged.push((*c, p));
    }
    let lowest = judged
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one concern");
    let concern = crate::kb::parse::excerpt(lowest.0, 80);
    let verdict = if lowest.1 < BUG_MIN - UNSURE_BAND {
        (
            DecisionKind::Escalate,
            format!(
                "the HIGH concern \"{concern}\" needs a person's decision (P(bug) {:.2})",
                lowest.1
            ),
            Confidence::Medium,
        )
    } else if lowest.1 >= BUG_MIN + UNSURE_BAND {
        (
            DecisionKind::Loop,
            format!(
                "the HIGH concerns are defects to fix in code (P(bug) ≥ {:.2})",
                lowest.1
            ),
            Confidence::Medium,
        )
    } else {
        (
            DecisionKind::Escalate,
            format!(
                "unsure whether the HIGH concern \"{concern}\" is a defect or a decision (P(bug) {:.2})",
                lowest.1
            ),
            Confidence::Low,
        )
    };
    Ok(Some(verdict))
}

/// The model stage's decision, with the relative probabilities it rests on in the report.
pub fn choose(
    llm: &mut Llm,
    flow: &Flow,
    s: &ForensicSummary,
    report: &mut Report,
) -> Result<Decision> {
    let mut allowed = offers(flow, s);
    allowed.dedup_by_key(|o| o.kind);
    let facts = forensic_facts(flow, s);
    let shown = facts
        .iter()
        .filter(|f| !f.starts_with("status "))
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    // HIGH concerns: the checklist decides, by rule from its answers.
    let t = std::time::Instant::now();
    if let Some((kind, why, confidence)) = judge_concerns(llm, s, report)? {
        report.generation_ms = t.elapsed().as_secs_f64() * 1e3;
        let kind = if allowed.iter().any(|o| o.kind == kind) {
            kind
        } else {
            DecisionKind::Escalate
        };
        let offer = allowed.iter().find(|o| o.kind == kind);
        return Ok(Decision {
            decision: kind,
            next_step_id: offer.and_then(|o| o.next_step_id.clone()),
            detour_target: None,
            reason: format!("{}: {why}; {shown}", kind.as_str()),
            confidence,
            decided_by: DecidedBy::Llm,
            rests_on: facts,
        });
    }
    let messages = [
        Message::new("system", SYSTEM),
        Message::new("user", &prompt(flow, s, &allowed, &facts)),
    ];
    let options: Vec<String> = allowed
        .iter()
        .map(|o| format!("{}\"", o.kind.as_str()))
        .collect();
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let logprobs = option_logprobs(llm, &messages, "{\"decision\": \"", &options)?;
    report.generation_ms = t.elapsed().as_secs_f64() * 1e3;
    let p = relative_probabilities(&logprobs);
    let mut order: Vec<usize> = (0..allowed.len()).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
    let scores: Vec<String> = order
        .iter()
        .map(|&i| format!("{} {:.2}", allowed[i].kind.as_str(), p[i]))
        .collect();
    report.notes.push(format!("model: {}", scores.join(", ")));
    let (best, lead) = match order.as_slice() {
        [only] => (*only, 1.0),
        [a, b, ..] => (*a, p[*a] - p[*b]),
        [] => unreachable!("ESCALATE is always offered"),
    };
    let o = &allowed[best];
    if lead < MIN_LEAD && o.kind != DecisionKind::Escalate {
        return Ok(Decision {
            decision: DecisionKind::Escalate,
            next_step_id: None,
            detour_target: None,
            reason: format!(
                "ESCALATE: no decision is clearly ahead ({}) on {shown}",
                scores.join(", ")
            ),
            confidence: Confidence::Low,
            decided_by: DecidedBy::Llm,
            rests_on: facts,
        });
    }
    let confidence = match p[best] {
        x if x >= 0.8 => Confidence::High,
        x if x >= 0.6 => Confidence::Medium,
        _ => Confidence::Low,
    };
    let target = o
        .detour_target
        .as_deref()
        .map(|t| format!(" to {t}"))
        .unwrap_or_default();
    Ok(Decision {
        decision: o.kind,
        next_step_id: o.next_step_id.clone(),
        detour_target: o.detour_target.clone(),
        reason: format!(
            "{}{target}: {shown} (model {})",
            o.kind.as_str(),
            scores.join(", ")
        ),
        confidence,
        decided_by: DecidedBy::Llm,
        rests_on: facts,
    })
}

const CHECKLIST_SYSTEM: &str =
    "You sort code review findings: a bug the programmer fixes, or a decision for someone else.";

const SYSTEM: &str = "You are the routing navigator of a software build flow. Route on the \
    measurements, not on narrative. When in doubt, escalate.";
