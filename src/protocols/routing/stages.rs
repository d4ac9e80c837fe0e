//! The rule stages (fast path, deterministic checks) and the decoder schema that narrows
//! the LLM stage to what the kernel would accept.

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
    }
    None
}

/// The decoder schema for the LLM stage: one branch per decision the kernel could accept
/// from this step (CONTINUE to the next step only, LOOP only below the limit, DETOUR only
/// to a catalogued target, TERMINATE only from a terminal step), so the grammar already
/// rules out what the kernel would reject.
pub fn decoder_schema(flow: &Flow, s: &ForensicSummary) -> Value {
    let here = flow.step_index(&s.step_completed).unwrap_or(0);
    let common = |kind: DecisionKind, extra: Vec<(&str, Value)>| {
        let mut props = serde_json::Map::new();
        props.insert("decision".into(), json!({"const": kind.as_str()}));
        let mut required = vec!["decision"];
        for (k, v) in extra {
            props.insert(k.into(), v);
            required.push(k);
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
    };
    let mut branches = Vec::new();
    if let Some(next) = flow.steps.get(here + 1) {
        branches.push(common(
            DecisionKind::Continue,
            vec![("next_step_id", json!({"const": next.id}))],
        ));
    }
    if s.iteration.current < s.iteration.max.min(flow.limits.max_iterations) {
        branches.push(common(
            DecisionKind::Loop,
            vec![("next_step_id", json!({"const": s.step_completed}))],
        ));
    }
    let mut targets: Vec<&str> = flow.detours.iter().map(|d| d.target.as_str()).collect();
    targets.dedup();
    if !targets.is_empty() {
        branches.push(common(
            DecisionKind::Detour,
            vec![("detour_target", json!({"enum": targets}))],
        ));
    }
    for kind in [
        DecisionKind::InjectFlow,
        DecisionKind::InjectNodes,
        DecisionKind::Escalate,
    ] {
        branches.push(common(kind, vec![]));
    }
    if flow.steps[here].terminal {
        branches.push(common(DecisionKind::Terminate, vec![]));
    }
    json!({"anyOf": branches})
}
