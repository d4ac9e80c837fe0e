//! The rule stages (fast path, deterministic checks) and what the model stage may choose
//! from what is left (`offers`).

use serde_json::{json, Value};

use super::{decision, DecidedBy, Decision, DecisionKind, Flow, ForensicSummary};

/// Stage 1: patterns that need no judgement.
pub fn fast_path(flow: &Flow, s: &ForensicSummary) -> Option<Decision> {
    let step = &flow.steps[flow.step_index(&s.step_completed)?];
    if step.terminal && s.status == "VERIFIED" {
        return Some(decision(
            DecisionKind::Terminate,
            None,
            None,
            format!("terminal step {} verified", step.id),
            DecidedBy::FastPath,
        ));
    }
    let f = &s.forensics;
    if s.status == "VERIFIED" && f.tests.failed == 0 && f.lint.errors == 0 && s.high_concerns() == 0
    {
        let next = flow.next_step(&step.id)?;
        return Some(decision(
            DecisionKind::Continue,
            Some(&next.id),
            None,
            format!(
                "verified: {} tests pass, no lint errors, no HIGH concerns",
                f.tests.passed
            ),
            DecidedBy::FastPath,
        ));
    }
    None
}

/// Stage 2: the seed's microloop exit conditions and signature matching, in order.
pub fn deterministic(flow: &Flow, s: &ForensicSummary) -> Option<Decision> {
    let next = flow.next_step(&s.step_completed).map(|n| n.id.as_str());
    if s.status == "VERIFIED" {
        return Some(decision(
            DecisionKind::Continue,
            next,
            None,
            format!(
                "status VERIFIED (with {} HIGH concerns noted)",
                s.high_concerns()
            ),
            DecidedBy::Deterministic,
        ));
    }
    if s.can_further_iteration_help == Some(false) {
        return Some(decision(
            DecisionKind::Continue,
            next,
            None,
            "further iteration cannot help: continuing with the concerns recorded".into(),
            DecidedBy::Deterministic,
        ));
    }
    let limit = s.iteration.max.min(flow.limits.max_iterations);
    if s.iteration.current >= limit {
        return Some(decision(
            DecisionKind::Continue,
            next,
            None,
            format!(
                "iteration limit reached ({}/{limit}): continuing with warnings ({} failing tests, {} HIGH concerns)",
                s.iteration.current,
                s.forensics.tests.failed,
                s.high_concerns()
            ),
            DecidedBy::Deterministic,
        ));
    }
    if let Some(sig) = s.signature() {
        if let Some(d) = flow.detour_for(&sig) {
            let repeated = s.previous_failure_signature.as_deref() == Some(sig.as_str());
            return Some(decision(
                DecisionKind::Detour,
                None,
                Some(&d.target),
                if repeated {
                    format!(
                        "failure signature {sig} repeated: detour to the known fix {}",
                        d.target
                    )
                } else {
                    format!("known failure signature {sig}: detour to {}", d.target)
                },
                DecidedBy::Deterministic,
            ));
        }
        // A signature the catalogue does not know: the model weighs iterating against
        // escalating.
        return None;
    }
    if s.status == "BLOCKED" {
        // The seed's ESCALATE: cannot proceed.
        return Some(decision(
            DecisionKind::Escalate,
            None,
            None,
            format!(
                "status BLOCKED at iteration {} of {limit}: the step cannot proceed, a person must unblock it",
                s.iteration.current
            ),
            DecidedBy::Deterministic,
        ));
    }
    let f = &s.forensics;
    let measured_failures = f.tests.failed > 0 || f.lint.errors > 0;
    if s.status == "UNVERIFIED" && measured_failures && s.high_concerns() == 0 {
        // Generic iteration: failures the tests measure, nothing that needs a judgement.
        return Some(decision(
            DecisionKind::Loop,
            Some(&s.step_completed),
            None,
            format!(
                "LOOP: {} failing tests and {} lint errors, no HIGH concerns, iteration {} of {limit}: another iteration can fix them",
                f.tests.failed, f.lint.errors, s.iteration.current
            ),
            DecidedBy::Deterministic,
        ));
    }
    if s.status == "UNVERIFIED" && !measured_failures && s.high_concerns() == 0 {
        // The seed's CONTINUE: tests pass, no HIGH concerns.
        return Some(decision(
            DecisionKind::Continue,
            next,
            None,
            format!(
                "tests pass ({} passing), no lint errors, no HIGH concerns",
                f.tests.passed
            ),
            DecidedBy::Deterministic,
        ));
    }
    None
}

/// One decision the model stage may choose, with its fixed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub kind: DecisionKind,
    pub next_step_id: Option<String>,
    pub detour_target: Option<String>,
}

/// What the model stage may choose from this summary. ESCALATE always; LOOP only with
/// iterations left and something to fix; CONTINUE (TERMINATE at a terminal step) only
/// where the seed's CONTINUE holds: no failing tests, no lint errors, no HIGH concerns;
/// DETOUR only to a target whose signature the forensics show; INJECT_FLOW /
/// INJECT_NODES only where the flow lists them.
pub fn offers(flow: &Flow, s: &ForensicSummary) -> Vec<Offer> {
    let here = flow.step_index(&s.step_completed).unwrap_or(0);
    let offer = |kind, next: Option<&str>, detour: Option<&str>| Offer {
        kind,
        next_step_id: next.map(str::to_string),
        detour_target: detour.map(str::to_string),
    };
    let f = &s.forensics;
    let clean = f.tests.failed == 0 && f.lint.errors == 0 && s.high_concerns() == 0;
    let to_fix = f.tests.failed > 0
        || f.lint.errors > 0
        || f.concerns
            .iter()
            .any(|c| c.severity == "HIGH" || c.severity == "MEDIUM")
        || s.signature().is_some()
        || matches!(s.status.as_str(), "FAILED" | "BLOCKED");
    let mut out = Vec::new();
    if to_fix && s.iteration.current < s.iteration.max.min(flow.limits.max_iterations) {
        out.push(offer(DecisionKind::Loop, Some(&s.step_completed), None));
    }
    if clean {
        if let Some(next) = flow.steps.get(here + 1) {
            out.push(offer(DecisionKind::Continue, Some(&next.id), None));
        }
        if flow.steps[here].terminal {
            out.push(offer(DecisionKind::Terminate, None, None));
        }
    }
    if let Some(sig) = s.signature() {
        for d in flow.detours.iter().filter(|d| d.signature == sig) {
            out.push(offer(DecisionKind::Detour, None, Some(&d.target)));
        }
    }
    for kind in &flow.may_inject {
        out.push(offer(*kind, None, None));
    }
    out.push(offer(DecisionKind::Escalate, None, None));
    out
}

/// The decoder schema of the model stage's choices (`offers`): one branch per offer, so
/// a generated decision is one the rules allow and the kernel accepts.
pub fn decoder_schema(flow: &Flow, s: &ForensicSummary) -> Value {
    let branches: Vec<Value> = offers(flow, s)
        .into_iter()
        .map(|o| {
            let mut props = serde_json::Map::new();
            props.insert("decision".into(), json!({"const": o.kind.as_str()}));
            let mut required = vec!["decision"];
            if let Some(n) = &o.next_step_id {
                props.insert("next_step_id".into(), json!({"const": n}));
                required.push("next_step_id");
            }
            if let Some(t) = &o.detour_target {
                props.insert("detour_target".into(), json!({"const": t}));
                required.push("detour_target");
            }
            props.insert(
                "reason".into(),
                json!({"type": "string", "minLength": 10, "maxLength": 200}),
            );
            props.insert(
                "confidence".into(),
                json!({"type": "string", "enum": ["HIGH", "MEDIUM", "LOW"]}),
            );
            required.extend(["reason", "confidence"]);
            json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
        })
        .collect();
    json!({"anyOf": branches})
}
