//! The routing rules, kernel, decoder schema and log, on the example flow.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::*;

fn flow() -> Flow {
    Flow::example()
}

fn summary(edit: impl FnOnce(&mut Value)) -> ForensicSummary {
    let mut v: Value =
        serde_json::from_str(include_str!("../../../examples/forensics.json")).unwrap();
    edit(&mut v);
    ForensicSummary::parse(&v.to_string(), &flow()).unwrap()
}

fn decide(s: &ForensicSummary) -> Decision {
    route(&flow(), s, None).unwrap().0
}

#[test]
fn example_flow_has_the_seed_step() {
    assert!(flow().step_index("build-step-3").is_some());
    // The compiled-in flow is the file in examples/.
    let file = Flow::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow.toml"));
    assert_eq!(file.unwrap().steps.len(), flow().steps.len());
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
    // Failing tests and no HIGH concern: generic iteration, by rule.
    let d = decide(&summary(|v| {
        v["forensics"]["concerns"] =
            json!([{"severity": "MEDIUM", "description": "Long function"}]);
    }));
    assert_eq!(
        (
            d.decision.as_str(),
            d.decided_by.as_str(),
            d.next_step_id.as_deref()
        ),
        ("LOOP", "deterministic", Some("build-step-3"))
    );
    assert!(d.reason.contains("2 failing tests"), "{}", d.reason);
    // Tests pass and no HIGH concern, though unverified: the seed's CONTINUE.
    let d = decide(&summary(|v| {
        v["forensics"]["tests"]["failed"] = json!(0);
        v["forensics"]["concerns"] = json!([]);
    }));
    assert_eq!(
        (d.decision.as_str(), d.decided_by.as_str()),
        ("CONTINUE", "deterministic")
    );
    // Nothing decides (a HIGH concern to judge; a signature the catalogue lacks) and no
    // LLM: escalate.
    for s in [
        summary(|_| {}),
        summary(|v| v["failure_signature"] = json!("segfault_in_native_code")),
    ] {
        let d = decide(&s);
        assert_eq!(
            (d.decision.as_str(), d.decided_by.as_str()),
            ("ESCALATE", "escalate")
        );
    }
    // Every decision carries the facts it rests on.
    assert!(decide(&summary(|_| {}))
        .rests_on
        .contains(&"iteration 2 of 3".to_string()));
}

#[test]
fn the_model_stage_is_offered_no_detour_without_its_signature() {
    let f = flow();
    let kinds = |s: &ForensicSummary| {
        offers(&f, s)
            .into_iter()
            .map(|o| (o.kind.as_str(), o.detour_target))
            .collect::<Vec<_>>()
    };
    // The seed's example: something to fix, iterations left; no signature, so no DETOUR,
    // and a HIGH concern, so no CONTINUE.
    assert_eq!(
        kinds(&summary(|_| {})),
        [("LOOP", None), ("ESCALATE", None)]
    );
    // An unknown signature: still no DETOUR (no catalogued target has it).
    assert_eq!(
        kinds(&summary(|v| v["failure_signature"] = json!("segfault"))),
        [("LOOP", None), ("ESCALATE", None)]
    );
    // The last iteration: nothing but escalation.
    let last = summary(|v| {
        v["iteration"]["current"] = json!(3);
        v["iteration"]["max"] = json!(5);
    });
    let mut f3 = f.clone();
    f3.limits.max_iterations = 5;
    assert!(offers(&f3, &last)
        .iter()
        .any(|o| o.kind == DecisionKind::Loop));
    // A flow that allows injection offers it.
    f3.may_inject = vec![DecisionKind::InjectFlow];
    assert!(offers(&f3, &last)
        .iter()
        .any(|o| o.kind == DecisionKind::InjectFlow));
}

#[test]
fn kernel_rejections() {
    let f = flow();
    let s = summary(|_| {});
    let d = |kind: &str, next: Option<&str>, detour: Option<&str>| {
        let kind = serde_json::from_value(json!(kind)).unwrap();
        decision(
            kind,
            next,
            detour,
            "2 failing tests remain".into(),
            DecidedBy::Llm,
        )
    };
    assert!(kernel_check(&f, &s, &d("CONTINUE", Some("build-step-4"), None)).is_ok());
    // Outside the vocabulary: not a decision at all.
    assert!(serde_json::from_value::<DecisionKind>(json!("SKIP")).is_err());
    // A reason that names no forensic field.
    let mut narrative = d("LOOP", None, None);
    narrative.reason = "The current flow is not designed to handle errors or exceptions".into();
    assert!(kernel_check(&f, &s, &narrative)
        .unwrap_err()
        .contains("names no forensic field"));
    // A catalogued DETOUR whose signature the forensics do not show.
    assert!(
        kernel_check(&f, &s, &d("DETOUR", None, Some("Flow 8 (Reset)")))
            .unwrap_err()
            .contains("without its failure signature")
    );
    let diverged = summary(|v| v["failure_signature"] = json!("upstream_diverged"));
    assert!(kernel_check(&f, &diverged, &d("DETOUR", None, Some("Flow 8 (Reset)"))).is_ok());
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
    let r = "2 failing tests remain";
    assert!(ok(
        json!({"decision": "LOOP", "next_step_id": "build-step-3", "reason": r, "confidence": "LOW"})
    ));
    assert!(ok(
        json!({"decision": "ESCALATE", "reason": r, "confidence": "LOW"})
    ));
    // A HIGH concern: no CONTINUE; no signature: no DETOUR; not terminal: no TERMINATE.
    for bad in [
        json!({"decision": "CONTINUE", "next_step_id": "build-step-4", "reason": r, "confidence": "LOW"}),
        json!({"decision": "DETOUR", "detour_target": "auto-linter", "reason": r, "confidence": "HIGH"}),
        json!({"decision": "TERMINATE", "reason": r, "confidence": "HIGH"}),
    ] {
        assert!(!ok(bad.clone()), "{bad}");
    }
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
        decision: decision(
            DecisionKind::Escalate,
            None,
            None,
            "reason text".into(),
            DecidedBy::Escalate,
        ),
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
