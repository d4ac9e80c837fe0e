//! The routing navigator (seeds/routing-navigator-protocol.md): a forensic summary in, a
//! bounded decision out. Stages run in order and the first that decides wins: fast-path
//! rules, deterministic checks, then the LLM under a schema whose enums are the flow's own
//! vocabulary, step ids and detour targets. The kernel validates every decision (from any
//! stage); a rejected one becomes ESCALATE with the reason. Every decision is appended to
//! `RUN_BASE/<flow>/routing/decisions.jsonl`, fsynced.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{llm_object, AskReport};
use crate::llm::Llm;

pub const VOCABULARY: [&str; 7] = [
    "CONTINUE",
    "LOOP",
    "DETOUR",
    "INJECT_FLOW",
    "INJECT_NODES",
    "ESCALATE",
    "TERMINATE",
];
pub const SCHEMA: &str = include_str!("../../schemas/routing-decision.schema.json");

#[derive(Debug, Clone, Deserialize)]
pub struct Flow {
    pub name: String,
    #[serde(default)]
    pub charter: Charter,
    #[serde(default)]
    pub limits: Limits,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub detours: Vec<Detour>,
}

#[derive(Debug, Clone, Deserialize, Default)]
pub struct Charter {
    #[serde(default)]
    pub goal: String,
    #[serde(default)]
    pub non_goals: Vec<String>,
    #[serde(default)]
    pub key_question: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Limits {
    pub max_iterations: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_iterations: 3 }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub terminal: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Detour {
    pub signature: String,
    pub target: String,
    #[serde(default)]
    pub description: String,
}

impl Flow {
    pub fn load(path: &Path) -> Result<Flow> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let flow: Flow = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not a valid flow", path.display()))?
        } else {
            toml::from_str(&text)
                .with_context(|| format!("{} is not a valid flow", path.display()))?
        };
        if flow.steps.is_empty() {
            bail!("{}: a flow needs at least one step", path.display());
        }
        if flow.name.is_empty() || flow.name.contains(['/', '\\']) || flow.name.starts_with('.') {
            bail!(
                "{}: flow name {:?} cannot name a folder",
                path.display(),
                flow.name
            );
        }
        Ok(flow)
    }

    fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }

    fn next_step(&self, id: &str) -> Option<&Step> {
        self.step_index(id).and_then(|i| self.steps.get(i + 1))
    }

    fn detour_for(&self, signature: &str) -> Option<&Detour> {
        self.detours.iter().find(|d| d.signature == signature)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Tests {
    #[serde(default)]
    pub passed: u32,
    #[serde(default)]
    pub failed: u32,
    #[serde(default)]
    pub skip: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Lint {
    #[serde(default)]
    pub errors: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Concern {
    pub severity: String,
    pub description: String,
    #[serde(default)]
    pub location: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Measurements {
    #[serde(default)]
    pub tests: Tests,
    #[serde(default)]
    pub lint: Lint,
    #[serde(default)]
    pub diff: Option<Value>,
    #[serde(default)]
    pub concerns: Vec<Concern>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Iteration {
    pub current: u32,
    pub max: u32,
}

/// The compact forensic summary a step hands to the router.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForensicSummary {
    pub step_completed: String,
    #[serde(default)]
    pub agent: String,
    pub status: String,
    #[serde(default)]
    pub forensics: Measurements,
    pub iteration: Iteration,
    #[serde(default)]
    pub previous_failure_signature: Option<String>,
    /// This step's failure signature, when the step knows it.
    #[serde(default)]
    pub failure_signature: Option<String>,
    #[serde(default)]
    pub can_further_iteration_help: Option<bool>,
}

const STATUSES: [&str; 4] = ["VERIFIED", "UNVERIFIED", "FAILED", "BLOCKED"];
const SEVERITIES: [&str; 4] = ["HIGH", "MEDIUM", "LOW", "INFO"];

impl ForensicSummary {
    /// Parses and checks a summary against the flow; errors name the field and the fix.
    pub fn parse(text: &str, flow: &Flow) -> Result<ForensicSummary> {
        let s: ForensicSummary = serde_json::from_str(text)
            .map_err(|e| anyhow!("the forensic summary is not valid: {e}"))?;
        if flow.step_index(&s.step_completed).is_none() {
            bail!(
                "step_completed {:?} is not a step of flow '{}' (steps: {})",
                s.step_completed,
                flow.name,
                flow.steps
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !STATUSES.contains(&s.status.as_str()) {
            bail!(
                "status {:?} is not one of {}",
                s.status,
                STATUSES.join(", ")
            );
        }
        for c in &s.forensics.concerns {
            if !SEVERITIES.contains(&c.severity.as_str()) {
                bail!(
                    "concern severity {:?} is not one of {}",
                    c.severity,
                    SEVERITIES.join(", ")
                );
            }
        }
        if s.iteration.max == 0 || s.iteration.current == 0 {
            bail!("iteration.current and iteration.max start at 1");
        }
        Ok(s)
    }

    fn high_concerns(&self) -> usize {
        self.forensics
            .concerns
            .iter()
            .filter(|c| c.severity == "HIGH")
            .count()
    }

    /// The signature of this step's failure: given, or derived from the measurements.
    fn signature(&self) -> Option<String> {
        self.failure_signature.clone().or_else(|| {
            (self.forensics.lint.errors > 0 && self.forensics.tests.failed == 0)
                .then(|| "lint_errors".to_string())
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Decision {
    pub decision: String,
    pub next_step_id: Option<String>,
    pub detour_target: Option<String>,
    pub reason: String,
    pub confidence: String,
    /// fast-path, deterministic, navigator or escalate.
    pub decided_by: String,
}

fn decision(
    kind: &str,
    next: Option<&str>,
    detour: Option<&str>,
    reason: String,
    by: &str,
) -> Decision {
    Decision {
        decision: kind.into(),
        next_step_id: next.map(str::to_string),
        detour_target: detour.map(str::to_string),
        reason,
        confidence: "HIGH".into(),
        decided_by: by.into(),
    }
}

/// Stage 1: patterns that need no judgement.
pub fn fast_path(flow: &Flow, s: &ForensicSummary) -> Option<Decision> {
    let step = &flow.steps[flow.step_index(&s.step_completed)?];
    if step.terminal && s.status == "VERIFIED" {
        return Some(decision(
            "TERMINATE",
            None,
            None,
            format!("terminal step {} verified", step.id),
            "fast-path",
        ));
    }
    let f = &s.forensics;
    if s.status == "VERIFIED" && f.tests.failed == 0 && f.lint.errors == 0 && s.high_concerns() == 0
    {
        let next = flow.next_step(&step.id)?;
        return Some(decision(
            "CONTINUE",
            Some(&next.id),
            None,
            format!(
                "verified: {} tests pass, no lint errors, no HIGH concerns",
                f.tests.passed
            ),
            "fast-path",
        ));
    }
    None
}

/// Stage 2: the seed's microloop exit conditions and signature matching, in order.
pub fn deterministic(flow: &Flow, s: &ForensicSummary) -> Option<Decision> {
    let next = flow.next_step(&s.step_completed).map(|n| n.id.as_str());
    if s.status == "VERIFIED" {
        return Some(decision(
            "CONTINUE",
            next,
            None,
            format!(
                "status VERIFIED (with {} HIGH concerns noted)",
                s.high_concerns()
            ),
            "deterministic",
        ));
    }
    if s.can_further_iteration_help == Some(false) {
        return Some(decision(
            "CONTINUE",
            next,
            None,
            "further iteration cannot help: continuing with the concerns recorded".into(),
            "deterministic",
        ));
    }
    let limit = s.iteration.max.min(flow.limits.max_iterations);
    if s.iteration.current >= limit {
        return Some(decision(
            "CONTINUE",
            next,
            None,
            format!(
                "iteration limit reached ({}/{limit}): continuing with warnings ({} failing tests, {} HIGH concerns)",
                s.iteration.current,
                s.forensics.tests.failed,
                s.high_concerns()
            ),
            "deterministic",
        ));
    }
    if let Some(sig) = s.signature() {
        if let Some(d) = flow.detour_for(&sig) {
            let repeated = s.previous_failure_signature.as_deref() == Some(sig.as_str());
            return Some(decision(
                "DETOUR",
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
                "deterministic",
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
    let common = |kind: &str, extra: Vec<(&str, Value)>| {
        let mut props = serde_json::Map::new();
        props.insert("decision".into(), json!({"const": kind}));
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
            "CONTINUE",
            vec![("next_step_id", json!({"const": next.id}))],
        ));
    }
    if s.iteration.current < s.iteration.max.min(flow.limits.max_iterations) {
        branches.push(common(
            "LOOP",
            vec![("next_step_id", json!({"const": s.step_completed}))],
        ));
    }
    let mut targets: Vec<&str> = flow.detours.iter().map(|d| d.target.as_str()).collect();
    targets.dedup();
    if !targets.is_empty() {
        branches.push(common(
            "DETOUR",
            vec![("detour_target", json!({"enum": targets}))],
        ));
    }
    for kind in ["INJECT_FLOW", "INJECT_NODES", "ESCALATE"] {
        branches.push(common(kind, vec![]));
    }
    if flow.steps[here].terminal {
        branches.push(common("TERMINATE", vec![]));
    }
    json!({"anyOf": branches})
}

/// Kernel validation: vocabulary, targets that exist, graph constraints, loop limit.
pub fn kernel_check(flow: &Flow, s: &ForensicSummary, d: &Decision) -> Result<(), String> {
    if !VOCABULARY.contains(&d.decision.as_str()) {
        return Err(format!(
            "decision {:?} is not in the vocabulary",
            d.decision
        ));
    }
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
    match d.decision.as_str() {
        "CONTINUE" => {
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
        "LOOP" => {
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
        "DETOUR" if d.detour_target.is_none() => {
            return Err("DETOUR needs a detour_target from the catalogue".into())
        }
        "TERMINATE" if !flow.steps[here].terminal => {
            return Err(format!(
                "TERMINATE from non-terminal step {}",
                s.step_completed
            ))
        }
        _ => {}
    }
    Ok(())
}

/// Runs the stages and the kernel; `llm` is used only if no rule decides.
pub fn route(
    flow: &Flow,
    s: &ForensicSummary,
    llm: Option<&mut Llm>,
    report: &mut AskReport,
) -> Result<Decision> {
    let proposed = match fast_path(flow, s).or_else(|| deterministic(flow, s)) {
        Some(d) => d,
        None => match llm {
            Some(llm) => {
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
                    serde_json::to_string(s)?
                );
                let v = llm_object(llm, SYSTEM, &user, decoder_schema(flow, s), report)?;
                Decision {
                    decision: v["decision"].as_str().unwrap_or_default().into(),
                    next_step_id: v["next_step_id"].as_str().map(str::to_string),
                    detour_target: v["detour_target"].as_str().map(str::to_string),
                    reason: v["reason"].as_str().unwrap_or_default().into(),
                    confidence: v["confidence"].as_str().unwrap_or("LOW").into(),
                    decided_by: "navigator".into(),
                }
            }
            None => decision(
                "ESCALATE",
                None,
                None,
                "no rule decides and no LLM is available: a human must decide".into(),
                "escalate",
            ),
        },
    };
    Ok(match kernel_check(flow, s, &proposed) {
        Ok(()) => proposed,
        Err(why) => {
            report
                .notes
                .push(format!("kernel rejected {proposed:?}: {why}"));
            Decision {
                confidence: "HIGH".into(),
                ..decision(
                    "ESCALATE",
                    None,
                    None,
                    format!(
                        "{} decision rejected by the kernel: {why}",
                        proposed.decided_by
                    ),
                    "escalate",
                )
            }
        }
    })
}

const SYSTEM: &str = "You are the routing navigator of a software build flow. Route on the \
    measurements, not on narrative. When in doubt, escalate.";

/// The decision log of a flow: `RUN_BASE/<flow>/routing/decisions.jsonl`.
pub fn log_path(run_base: &Path, flow: &Flow) -> PathBuf {
    run_base
        .join(&flow.name)
        .join("routing")
        .join("decisions.jsonl")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogEntry {
    pub timestamp: String,
    pub step_id: String,
    #[serde(flatten)]
    pub decision: Decision,
    pub forensic_summary: ForensicSummary,
}

/// True when no rule decides, so `route` will ask the LLM: callers load (or queue for)
/// the model only then.
pub fn needs_llm(flow: &Flow, summary: &ForensicSummary) -> bool {
    fast_path(flow, summary)
        .or_else(|| deterministic(flow, summary))
        .is_none()
}

/// Checks the decision's seed fields against the schema and appends it to the flow's log
/// under `run_base`; returns the log's path.
pub fn record(
    run_base: &Path,
    flow: &Flow,
    summary: &ForensicSummary,
    decision: &Decision,
) -> Result<PathBuf> {
    let mut seed_fields = serde_json::to_value(decision)?;
    if let Some(o) = seed_fields.as_object_mut() {
        o.remove("decided_by");
    }
    super::validate_against(SCHEMA, &seed_fields)?;
    let log = log_path(run_base, flow);
    append_log(
        &log,
        &LogEntry {
            timestamp: now_rfc3339(),
            step_id: summary.step_completed.clone(),
            decision: decision.clone(),
            forensic_summary: summary.clone(),
        },
    )?;
    Ok(log)
}

/// Appends one decision to the log (locked, fsynced; see `crate::jsonl`).
pub fn append_log(path: &Path, entry: &LogEntry) -> Result<()> {
    crate::jsonl::append(path, entry)
}

/// Reads the log; lines that do not parse (a torn write) are skipped.
pub fn read_log(path: &Path) -> Result<Vec<LogEntry>> {
    crate::jsonl::read(path)
}

/// RFC 3339 UTC timestamp with seconds.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn flow() -> Flow {
        Flow::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow.toml")).unwrap()
    }

    fn summary(edit: impl FnOnce(&mut Value)) -> ForensicSummary {
        let mut v: Value =
            serde_json::from_str(include_str!("../../examples/forensics.json")).unwrap();
        edit(&mut v);
        ForensicSummary::parse(&v.to_string(), &flow()).unwrap()
    }

    fn decide(s: &ForensicSummary) -> Decision {
        route(&flow(), s, None, &mut AskReport::default()).unwrap()
    }

    #[test]
    fn example_flow_has_the_seed_step() {
        assert!(flow().step_index("build-step-3").is_some());
    }

    #[test]
    fn fast_path_continues_when_all_green_and_terminates_at_the_end() {
        let d = decide(&summary(|v| {
            v["status"] = json!("VERIFIED");
            v["forensics"]["tests"]["failed"] = json!(0);
            v["forensics"]["concerns"] = json!([]);
        }));
        assert_eq!(
            (d.decision.as_str(), d.decided_by.as_str()),
            ("CONTINUE", "fast-path")
        );
        assert_eq!(d.next_step_id.as_deref(), Some("build-step-4"));
        let d = decide(&summary(|v| {
            v["step_completed"] = json!("build-step-5");
            v["status"] = json!("VERIFIED");
        }));
        assert_eq!(d.decision, "TERMINATE");
    }

    #[test]
    fn deterministic_rules_in_order() {
        // VERIFIED with a HIGH concern: not the fast path, but CONTINUE.
        let d = decide(&summary(|v| v["status"] = json!("VERIFIED")));
        assert_eq!(
            (d.decision.as_str(), d.decided_by.as_str()),
            ("CONTINUE", "deterministic")
        );
        // Further iteration cannot help.
        let d = decide(&summary(|v| v["can_further_iteration_help"] = json!(false)));
        assert_eq!(d.decision, "CONTINUE");
        assert!(d.reason.contains("cannot help"));
        // Iteration limit.
        let d = decide(&summary(|v| v["iteration"]["current"] = json!(3)));
        assert_eq!(d.decision, "CONTINUE");
        assert!(d.reason.contains("iteration limit"));
        // Repeated failure signature → its known fix.
        let d = decide(&summary(|v| {
            v["failure_signature"] = json!("missing_import");
            v["previous_failure_signature"] = json!("missing_import");
        }));
        assert_eq!(
            (d.decision.as_str(), d.detour_target.as_deref()),
            ("DETOUR", Some("import-fixer"))
        );
        assert!(d.reason.contains("repeated"));
        // Known signature derived from lint errors.
        let d = decide(&summary(|v| {
            v["forensics"]["tests"]["failed"] = json!(0);
            v["forensics"]["lint"]["errors"] = json!(5);
        }));
        assert_eq!(d.detour_target.as_deref(), Some("auto-linter"));
        // Nothing decides and no LLM: escalate.
        let d = decide(&summary(|_| {}));
        assert_eq!(
            (d.decision.as_str(), d.decided_by.as_str()),
            ("ESCALATE", "escalate")
        );
    }

    #[test]
    fn kernel_rejections() {
        let f = flow();
        let s = summary(|_| {});
        let d = |kind: &str, next: Option<&str>, detour: Option<&str>| {
            decision(kind, next, detour, "x".repeat(12), "navigator")
        };
        assert!(kernel_check(&f, &s, &d("CONTINUE", Some("build-step-4"), None)).is_ok());
        assert!(kernel_check(&f, &s, &d("SKIP", None, None))
            .unwrap_err()
            .contains("vocabulary"));
        assert!(
            kernel_check(&f, &s, &d("CONTINUE", Some("build-step-9"), None))
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(
            kernel_check(&f, &s, &d("CONTINUE", Some("build-step-5"), None))
                .unwrap_err()
                .contains("next step")
        );
        assert!(
            kernel_check(&f, &s, &d("DETOUR", None, Some("magic-fixer")))
                .unwrap_err()
                .contains("catalogue")
        );
        assert!(kernel_check(&f, &s, &d("DETOUR", None, None)).is_err());
        assert!(kernel_check(&f, &s, &d("TERMINATE", None, None))
            .unwrap_err()
            .contains("non-terminal"));
        let at_limit = summary(|v| v["iteration"]["current"] = json!(3));
        assert!(kernel_check(&f, &at_limit, &d("LOOP", None, None))
            .unwrap_err()
            .contains("limit"));
        assert!(kernel_check(&f, &s, &d("LOOP", None, None)).is_ok());
    }

    #[test]
    fn decoder_schema_only_admits_what_the_kernel_accepts() {
        let f = flow();
        let s = summary(|_| {});
        let v = jsonschema::validator_for(&decoder_schema(&f, &s)).unwrap();
        let ok = |x: Value| v.is_valid(&x);
        let r = "measured reasons here";
        assert!(ok(
            json!({"decision": "CONTINUE", "next_step_id": "build-step-4", "reason": r, "confidence": "LOW"})
        ));
        assert!(!ok(
            json!({"decision": "CONTINUE", "next_step_id": "build-step-5", "reason": r, "confidence": "LOW"})
        ));
        assert!(!ok(
            json!({"decision": "DETOUR", "reason": r, "confidence": "LOW"})
        ));
        assert!(ok(
            json!({"decision": "DETOUR", "detour_target": "auto-linter", "reason": r, "confidence": "HIGH"})
        ));
        assert!(!ok(
            json!({"decision": "TERMINATE", "reason": r, "confidence": "HIGH"})
        ));
        let at_limit = summary(|v| v["iteration"]["current"] = json!(3));
        let v2 = jsonschema::validator_for(&decoder_schema(&f, &at_limit)).unwrap();
        assert!(!v2.is_valid(&json!({"decision": "LOOP", "next_step_id": "build-step-3", "reason": r, "confidence": "LOW"})));
    }

    #[test]
    fn malformed_forensics_are_refused_with_the_field_named() {
        let f = flow();
        assert!(ForensicSummary::parse("{", &f)
            .unwrap_err()
            .to_string()
            .contains("not valid"));
        let err = ForensicSummary::parse(
            r#"{"step_completed":"nope","status":"VERIFIED","iteration":{"current":1,"max":3}}"#,
            &f,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("nope") && err.contains("build-step-3"),
            "{err}"
        );
        let err = ForensicSummary::parse(
            r#"{"step_completed":"build-step-1","status":"DONE","iteration":{"current":1,"max":3}}"#,
            &f,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("status"), "{err}");
    }

    #[test]
    fn log_survives_concurrent_writers_and_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r/decisions.jsonl");
        let s = summary(|_| {});
        let entry = |i: usize| LogEntry {
            timestamp: now_rfc3339(),
            step_id: format!("build-step-{i}"),
            decision: decision("ESCALATE", None, None, "reason text".into(), "escalate"),
            forensic_summary: s.clone(),
        };
        std::thread::scope(|sc| {
            for t in 0..4 {
                let path = path.clone();
                let entry = &entry;
                sc.spawn(move || {
                    for i in 0..25 {
                        append_log(&path, &entry(t * 100 + i)).unwrap();
                    }
                });
            }
        });
        assert_eq!(read_log(&path).unwrap().len(), 100);
        // A crash mid-write leaves a torn line: it is ignored and the next append is intact.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"timestamp\": \"2026-").unwrap();
        drop(f);
        assert_eq!(read_log(&path).unwrap().len(), 100);
        append_log(&path, &entry(999)).unwrap();
        let log = read_log(&path).unwrap();
        assert_eq!(log.len(), 101);
        assert_eq!(log.last().unwrap().step_id, "build-step-999");
    }

    #[test]
    fn timestamps_are_rfc3339() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }
}
