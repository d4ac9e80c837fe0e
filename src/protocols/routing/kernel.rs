//! The kernel: every decision, from any stage, is checked against the flow's graph, the
//! detour catalogue and the iteration limit before it is used.

use super::{names_forensic_field, Decision, DecisionKind, Flow, ForensicSummary};

/// Kernel validation: vocabulary, targets that exist, graph constraints, loop limit, a
/// DETOUR only on its signature, a reason that names a forensic field.
pub fn kernel_check(flow: &Flow, s: &ForensicSummary, d: &Decision) -> Result<(), String> {
    if let Some(n) = &d.next_step_id {
        if flow.step_index(n).is_none() {
            return Err(format!(
                "next step {n:?} does not exist in flow '{}'",
                flow.name
            ));
        }
    }
    if let Some(t) = &d.detour_target {
        if !flow.detours.iter().any(|x| x.target == *t) {
            return Err(format!("detour target {t:?} is not in the catalogue"));
        }
    }
    let here = flow.step_index(&s.step_completed).unwrap_or(0);
    match d.decision {
        DecisionKind::Continue => {
            let want = flow.steps.get(here + 1).map(|x| x.id.as_str());
            match (want, d.next_step_id.as_deref()) {
                (None, _) => return Err("CONTINUE from the last step: nothing follows".into()),
                (Some(w), Some(n)) if w != n => {
                    return Err(format!("CONTINUE must go to the next step {w}, not {n}"))
                }
                (Some(_), None) => return Err("CONTINUE needs next_step_id".into()),
                _ => {}
            }
        }
        DecisionKind::Loop => {
            if s.iteration.current >= s.iteration.max.min(flow.limits.max_iterations) {
                return Err(format!(
                    "LOOP refused: iteration {} has reached the limit",
                    s.iteration.current
                ));
            }
            if d.next_step_id
                .as_deref()
                .is_some_and(|n| n != s.step_completed)
            {
                return Err("LOOP repeats the completed step".into());
            }
        }
        DecisionKind::Detour if d.detour_target.is_none() => {
            return Err("DETOUR needs a detour_target from the catalogue".into())
        }
        DecisionKind::Terminate if !flow.steps[here].terminal => {
            return Err(format!(
                "TERMINATE from non-terminal step {}",
                s.step_completed
            ))
        }
        _ => {}
    }
    if let (DecisionKind::Detour, Some(t)) = (d.decision, &d.detour_target) {
        let shown = s.signature();
        if !flow
            .detours
            .iter()
            .any(|x| x.target == *t && Some(&x.signature) == shown.as_ref())
        {
            return Err(format!(
                "DETOUR to {t} without its failure signature in the forensics (signature: {})",
                shown.as_deref().unwrap_or("none")
            ));
        }
    }
    if !names_forensic_field(&d.reason, s) {
        return Err(format!(
            "the reason {:?} names no forensic field (tests, lint errors, a concern, the iteration, a signature, the status)",
            d.reason
        ));
    }
    Ok(())
}
