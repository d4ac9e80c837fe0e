//! The labelled routing set (`eval/routing.jsonl`): forensic summaries over more than one
//! flow, each with the decision the seed implies, scored by `sextant bench routing`.
//!
//! A line: `{"id", "split": "tune"|"report", "flow": "example" | a flow file relative to
//! the set, "summary": {…}, "expect": ["LOOP", …], "detour_target"?, "note"}`. `expect`
//! lists every decision the seed allows (an unknown failure signature: LOOP or ESCALATE).

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::protocols::routing::{DecidedBy, Decision, DecisionKind, Flow, ForensicSummary};
use crate::stats::percentile;

use super::Share;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingCase {
    pub id: String,
    #[serde(default)]
    pub split: Option<String>,
    pub flow: String,
    pub summary: serde_json::Value,
    pub expect: Vec<DecisionKind>,
    #[serde(default)]
    pub detour_target: Option<String>,
    #[serde(default)]
    pub note: String,
}

/// A case ready to route: its flow and parsed summary.
pub struct LoadedCase {
    pub case: RoutingCase,
    pub flow: Flow,
    pub summary: ForensicSummary,
}

/// Reads the set, its flows and summaries; errors name the line and the fix.
pub fn load_routing_set(path: &Path) -> Result<Vec<LoadedCase>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the routing set {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let at = || format!("{} line {}", path.display(), n + 1);
        let case: RoutingCase = serde_json::from_str(line).with_context(|| {
            format!(
                "{}: not a routing case ({{\"id\", \"flow\", \"summary\", \"expect\"}})",
                at()
            )
        })?;
        if case.expect.is_empty() {
            bail!(
                "{}: case {} expects no decision; list at least one",
                at(),
                case.id
            );
        }
        let flow = if case.flow == "example" {
            Flow::example()
        } else {
            Flow::load(&dir.join(&case.flow)).with_context(at)?
        };
        let summary = ForensicSummary::parse(&case.summary.to_string(), &flow).with_context(at)?;
        out.push(LoadedCase {
            case,
            flow,
            summary,
        });
    }
    if out.is_empty() {
        bail!("{}: no routing cases", path.display());
    }
    Ok(out)
}

/// One routed case.
#[derive(Debug, Clone, Serialize)]
pub struct RoutingScored {
    pub id: String,
    pub decided_by: DecidedBy,
    pub decision: DecisionKind,
    pub detour_target: Option<String>,
    pub expect: Vec<DecisionKind>,
    pub right: bool,
    /// A DETOUR whose target's signature the forensics do not show.
    pub detour_without_signature: bool,
    pub reason: String,
    pub latency_ms: f64,
    /// The model stage ran (it decided, or it escalated for want of a clear lead).
    pub by_model: bool,
}

pub fn score_routing(
    loaded: &LoadedCase,
    d: &Decision,
    by_model: bool,
    latency_ms: f64,
) -> RoutingScored {
    let c = &loaded.case;
    let right = c.expect.contains(&d.decision)
        && (d.decision != DecisionKind::Detour || d.detour_target == c.detour_target);
    let signature = loaded.summary.signature();
    let detour_without_signature = d.decision == DecisionKind::Detour
        && !loaded.flow.detours.iter().any(|x| {
            Some(&x.target) == d.detour_target.as_ref() && Some(&x.signature) == signature.as_ref()
        });
    RoutingScored {
        id: c.id.clone(),
        decided_by: d.decided_by,
        decision: d.decision,
        detour_target: d.detour_target.clone(),
        expect: c.expect.clone(),
        right,
        detour_without_signature,
        reason: d.reason.clone(),
        latency_ms,
        by_model,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RoutingFigures {
    pub cases: usize,
    pub by_rules: Share,
    pub by_model: Share,
    pub detours_without_signature: usize,
    pub escalations: usize,
    /// Of the model stage's cases, those it escalated.
    pub model_escalations: usize,
    pub model_latency_p50_ms: f64,
    pub model_latency_p95_ms: f64,
}

pub fn summarise_routing(scored: &[RoutingScored]) -> RoutingFigures {
    let share = |rows: Vec<&RoutingScored>| {
        Share::count(rows.iter().filter(|s| s.right).count(), rows.len())
    };
    let model: Vec<&RoutingScored> = scored.iter().filter(|s| s.by_model).collect();
    let latencies: Vec<f64> = model.iter().map(|s| s.latency_ms).collect();
    RoutingFigures {
        cases: scored.len(),
        by_rules: share(scored.iter().filter(|s| !s.by_model).collect()),
        by_model: share(model.clone()),
        detours_without_signature: scored.iter().filter(|s| s.detour_without_signature).count(),
        escalations: scored
            .iter()
            .filter(|s| s.decision == DecisionKind::Escalate)
            .count(),
        model_escalations: model
            .iter()
            .filter(|s| s.decision == DecisionKind::Escalate)
            .count(),
        model_latency_p50_ms: percentile(latencies.clone(), 0.5),
        model_latency_p95_ms: percentile(latencies, 0.95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_set_loads_and_spans_two_flows() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/routing.jsonl");
        let set = load_routing_set(&path).unwrap();
        assert!(set.len() >= 40, "{}", set.len());
        let flows: std::collections::BTreeSet<&str> =
            set.iter().map(|c| c.flow.name.as_str()).collect();
        assert!(flows.len() >= 2, "{flows:?}");
    }

    #[test]
    fn a_detour_is_right_only_to_the_expected_target_and_flagged_without_its_signature() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/routing.jsonl");
        let set = load_routing_set(&path).unwrap();
        let seed = set
            .iter()
            .find(|c| c.case.note == "the seed's example")
            .unwrap();
        let mut d = crate::protocols::routing::route(&seed.flow, &seed.summary, None)
            .unwrap()
            .0;
        d.decision = DecisionKind::Detour;
        d.detour_target = Some("Flow 8 (Reset)".into());
        let s = score_routing(seed, &d, true, 1.0);
        assert!(!s.right && s.detour_without_signature);
        d.decision = DecisionKind::Loop;
        d.detour_target = None;
        let s = score_routing(seed, &d, true, 1.0);
        assert!(s.right && !s.detour_without_signature);
        let f = summarise_routing(&[s]);
        assert_eq!((f.by_model.right, f.by_rules.of), (1, 0));
    }
}
