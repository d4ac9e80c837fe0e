//! The `sextant` binary as a user runs it: stdout carries only the JSON object, errors
//! name the problem and the fix, exit codes distinguish failures.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn sextant(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run sextant")
}

/// `sextant search --kb KB --json QUERY`, which must succeed, parsed.
fn search_json(kb_dir: &str, query: &str) -> Value {
    let o = sextant(&["search", "--kb", kb_dir, "--json", query]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn generate_prints_only_a_valid_object_on_stdout() {
    let schema_path = "schemas/routing-decision.schema.json";
    let o = sextant(&[
        "generate",
        "--schema",
        schema_path,
        "--explain",
        "--system",
        "Route the build flow. Steps: build-step-3, build-step-4.",
        "Tests: 42 passed, 0 failed. Status VERIFIED. What next?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let value: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON object");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    assert!(
        jsonschema::validator_for(&schema).unwrap().is_valid(&value),
        "{value}"
    );
    let err = stderr(&o);
    assert!(err.contains("bounds added to the schema"), "{err}");
    assert!(err.contains("validation: parsed and valid"), "{err}");
}

#[test]
fn stream_writes_tokens_to_stderr_and_the_object_to_stdout() {
    let o = sextant(&[
        "generate",
        "--schema",
        "interview-turn",
        "--example",
        "--stream",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let value: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(stderr(&o).contains("\"interview_stage\""), "{}", stderr(&o));
    assert!(value["metadata"]["question_depth"].as_i64().unwrap() >= 1);
}

#[test]
fn an_exhausted_budget_exits_3_with_incomplete() {
    // A formatted string has no minimal size the engine can tell, so decoding starts.
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("contact.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "required": ["contact"], "properties": {"contact": {"type": "string", "format": "email"}}}"#,
    )
    .unwrap();
    let o = sextant(&[
        "generate",
        "--schema",
        schema.to_str().unwrap(),
        "--max-tokens",
        "5",
        "Who do I email about TLS?",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "no partial JSON on stdout");
    assert!(stderr(&o).contains("incomplete"), "{}", stderr(&o));
}

#[test]
fn malformed_schema_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"type\": \"object\",").unwrap();
    let o = sextant(&["generate", "--schema", bad.to_str().unwrap(), "x"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("bad.json") && err.contains("not valid JSON"),
        "{err}"
    );
}

#[test]
fn a_missing_model_names_the_model_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let o = sextant(&[
        "--models",
        dir.path().to_str().unwrap(),
        "generate",
        "--schema",
        "rag-response",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("qwen2.5-coder-0.5b-instruct"), "{err}");
    assert!(err.contains("sextant models pull"), "{err}");
}

#[test]
fn models_list_reports_the_defaults_as_verified() {
    let o = sextant(&["models", "list", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = list.as_array().unwrap();
    for name in [
        "qwen2.5-coder-0.5b-instruct",
        "smollm2-135m-instruct",
        "all-minilm-l6-v2",
    ] {
        let m = list.iter().find(|m| m["name"] == name).unwrap();
        assert_eq!(m["state"], "verified", "{m}");
        assert!(Path::new(m["dir"].as_str().unwrap()).is_dir());
    }
}

#[test]
fn ingest_then_search_json_finds_the_rollback_section_first() {
    let kb = tempfile::tempdir().unwrap();
    let kb_dir = kb.path().to_str().unwrap();
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("20 added") && out.contains("0 skipped"),
        "{out}"
    );
    let v = search_json(kb_dir, "how do I roll back a deployment");
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 5);
    let first = &hits[0];
    assert_eq!(first["file"], "operations/rollbacks.md");
    assert_eq!(first["section"], "Rolling back a deployment");
    for key in ["id", "section_path", "anchor", "page", "text", "score"] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
    assert!(first["page"].is_null());
    let score = first["score"].as_f64().unwrap();
    assert!(score > 0.5 && score <= 1.0);
    // A second ingest changes nothing.
    let o = sextant(&["ingest", "--kb", kb_dir, "--json", "examples/kb"]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["unchanged"], 20, "{r}");
    let o = sextant(&["kb", "stats", "--kb", kb_dir, "--json"]);
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["documents"], 20);
    assert_eq!(s["consistent"], true);
    assert_eq!(s["chunks"], s["vectors"]);

    // Both answer formats, exactly the seed's fields, valid against schemas/.
    for (format, schema, fields) in [
        (
            "navigator",
            "schemas/navigator-response.schema.json",
            &[
                "answer",
                "sources",
                "confidence",
                "confidenceReason",
                "relatedTopics",
                "outOfDomain",
            ][..],
        ),
        (
            "rag",
            "schemas/rag-response.schema.json",
            &["final_answer", "retrieved_chunks", "confidence"][..],
        ),
    ] {
        let o = sextant(&[
            "ask",
            "--kb",
            kb_dir,
            "--format",
            format,
            "--mode",
            "extractive",
            "--explain",
            "How do I roll back a deployment?",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, fields.iter().collect::<Vec<_>>(), "{v:#}");
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
        assert!(
            jsonschema::validator_for(&schema).unwrap().is_valid(&v),
            "{v:#}"
        );
        let text = v
            .get("answer")
            .or(v.get("final_answer"))
            .unwrap()
            .as_str()
            .unwrap();
        assert!(text.contains("kubectl rollout undo"), "{text}");
        let err = stderr(&o);
        assert!(
            err.contains("grounding:") && err.contains("validation:"),
            "{err}"
        );
    }

    // `sextant eval` on a small labelled set, extractive (no model): figures known from
    // the set. Of the 4 answerable questions, two extractive answers hold their keyword
    // and cite the expected file; the other two answer from a neighbouring section.
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("eval.json");
    let o = sextant(&[
        "eval",
        "--kb",
        kb_dir,
        "--modes",
        "extractive",
        "--json",
        json.to_str().unwrap(),
        "tests/fixtures/eval_small.jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("navigator · extractive"), "{table}");
    let runs: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let f = &runs[0]["figures"];
    for (figure, expected) in [
        ("questions", 8.0),
        ("answerable", 4.0),
        ("hit_at_k", 1.0),
        // Three expected files ranked first, one second: (3 + 1/2) / 4.
        ("expected_file_mrr", 0.875),
        ("cited_expected_file", 0.5),
        ("keyword_share", 0.5),
        ("keyword_retrieved", 1.0),
        ("grounded_share", 1.0),
        ("answerable_refused", 0.0),
        ("not_documented_honesty", 1.0),
        ("out_of_domain_accuracy", 1.0),
        ("invented_answers", 0.0),
    ] {
        let got = f[figure].as_f64().unwrap();
        assert!(
            (got - expected).abs() < 1e-9,
            "{figure}: {got} ≠ {expected}\n{f:#}"
        );
    }
    // Each targeted share comes with its 95 % interval, around it.
    let cited = &f["intervals"]["cited_expected_file"];
    let (lo, hi) = (cited[0].as_f64().unwrap(), cited[1].as_f64().unwrap());
    assert!(lo < 0.5 && 0.5 < hi && hi <= 1.0, "{f:#}");
    assert!(table.contains("95 % intervals"), "{table}");
    // No model read anything: no kw-read figure.
    assert!(f["keyword_shown"].is_null(), "{f:#}");
    assert!(table.contains(" — "), "{table}");
    let questions = runs[0]["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 8);
    // Each question lists what it retrieved, best first, as `file § section`.
    let first = &questions[0];
    assert_eq!(first["retrieved"].as_array().unwrap().len(), 8, "{first:#}");
    assert!(
        first["retrieved"][0]
            .as_str()
            .unwrap()
            .starts_with("operations/rollbacks.md § "),
        "{first:#}"
    );
    // A conversation's follow-up, asked with its history, says how it was read; a
    // question asked as written says nothing.
    assert!(first.get("asked_as").is_none(), "{first:#}");
    let conversation = out.path().join("conversation.jsonl");
    std::fs::write(
        &conversation,
        "{\"id\": \"c\", \"split\": \"tune\", \"kind\": \"answerable\", \"turns\": [\"How do I roll back a deployment?\"], \"question\": \"and if that fails?\", \"standalone\": \"What do I do if a deployment rollback fails?\", \"file\": \"operations/rollbacks.md\", \"section\": \"Rollbacks\", \"keywords\": [\"rollout\"]}\n",
    )
    .unwrap();
    let o = sextant(&[
        "eval",
        "--kb",
        kb_dir,
        "--format",
        "rag",
        "--modes",
        "extractive",
        "--asked",
        "history",
        "--json",
        json.to_str().unwrap(),
        conversation.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let read = runs[0]["questions"][0]["asked_as"]
        .as_str()
        .unwrap_or_default();
    assert!(
        read.starts_with("and if that fails? (about: ") && read.contains("roll"),
        "{read}"
    );
    // A malformed set is named with its line.
    let bad = out.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"a\", \"kind\": \"answerable\", \"question\": \"q\"}\n",
    )
    .unwrap();
    let o = sextant(&["eval", "--kb", kb_dir, bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("bad.jsonl") && err.contains("line 1"), "{err}");
}

#[test]
fn a_mistyped_kb_is_an_error_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("no-such-kb");
    let missing_arg = missing.to_str().unwrap();
    for args in [
        vec!["ask", "--kb", missing_arg, "How do I roll back?"],
        vec!["search", "--kb", missing_arg, "rollback"],
        vec!["kb", "stats", "--kb", missing_arg],
    ] {
        let o = sextant(&args);
        assert!(!o.status.success(), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("no knowledge base at") && err.contains("sextant ingest --kb"),
            "{args:?}: {err}"
        );
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
}

#[test]
fn ingest_watch_follows_additions_and_deletions() {
    let docs = tempfile::tempdir().unwrap();
    let kb = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("a.md"),
        "# Alpha\n\nThe alpha service listens on port 7001.\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["ingest", "--watch", "--kb"])
        .arg(kb.path())
        .arg(docs.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stats = |kb: &Path| -> Value {
        let o = sextant(&["kb", "stats", "--json", "--kb", kb.to_str().unwrap()]);
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
    };
    // Generous: each poll is a `sextant kb stats` process that loads the embedder, and
    // under a full parallel test run on 2 cores the first ingest has taken over 60 s.
    let wait_for = |docs: u64| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(150);
        loop {
            if stats(kb.path())["documents"] == docs {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    };
    assert!(wait_for(1), "initial ingest");
    // Let the watcher start before changing the folder.
    std::thread::sleep(std::time::Duration::from_secs(2));
    std::fs::write(
        docs.path().join("z.md"),
        "# Zebra\n\nThe zebra controller uses port 9009.\n",
    )
    .unwrap();
    let added = wait_for(2);
    std::fs::remove_file(docs.path().join("a.md")).unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let removed = wait_for(1);
    child.kill().unwrap();
    let _ = child.wait();
    assert!(added, "the new file was not ingested");
    assert!(removed, "the deleted file was not removed");
    let o = sextant(&[
        "search",
        "--kb",
        kb.path().to_str().unwrap(),
        "--json",
        "--mode",
        "bm25",
        "zebra controller",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hits"][0]["file"], "z.md");
}

#[test]
fn route_decides_by_rule_logs_and_refuses_malformed_input() {
    let runs = tempfile::tempdir().unwrap();
    let forensics = runs.path().join("f.json");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string("examples/forensics.json").unwrap()).unwrap();
    v["iteration"]["current"] = 3.into();
    std::fs::write(&forensics, v.to_string()).unwrap();
    let run_base = runs.path().to_str().unwrap();
    let o = sextant(&[
        "route",
        "--flow",
        "examples/flow.toml",
        "--run-base",
        run_base,
        forensics.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["decision"], "CONTINUE");
    assert_eq!(d["next_step_id"], "build-step-4");
    assert_eq!(d["decided_by"], "deterministic");
    let log = std::fs::read_to_string(runs.path().join("build/routing/decisions.jsonl")).unwrap();
    let entry: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(entry["step_id"], "build-step-3");
    assert_eq!(entry["forensic_summary"]["iteration"]["current"], 3);
    // Malformed input: a clear error, nothing logged.
    std::fs::write(&forensics, "{\"step_completed\": 3").unwrap();
    let o = sextant(&[
        "route",
        "--flow",
        "examples/flow.toml",
        "--run-base",
        run_base,
        forensics.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("forensic summary"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(runs.path().join("build/routing/decisions.jsonl")).unwrap(),
        log
    );
}

/// `sextant interview --json` piped: the first turn comes before any input, each answer
/// gets one JSONL turn, EOF saves and exits 0, and `--resume` shows the waiting question
/// again and goes on.
#[test]
fn interview_over_a_pipe_prints_jsonl_turns_and_resumes() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["interview", "--json", "--transcript"])
        .arg(&transcript)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let first: Value = serde_json::from_str(&line).expect("first turn before any input");
    assert_eq!(first["interview_stage"], "greeting");
    writeln!(stdin, "I maintain the billing database and its backups.").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let second: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(second["response"].as_str().unwrap().matches('?').count(), 1);
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    let o = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["interview", "--json", "--resume"])
        .arg(&transcript)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown, second, "resume shows the question still waiting");
    let o = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["interview", "--transcript"])
        .arg(&transcript)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
}

/// One writer per KB: a second one is refused with the holder named and nothing written;
/// readers are not blocked, and the lock goes with its holder.
#[test]
fn a_second_writer_is_refused_and_told_who_writes() {
    let kb = tempfile::tempdir().unwrap();
    let kb_dir = kb.path().to_str().unwrap();
    let held = sextant::kb::lock::WriterLock::try_acquire(kb.path()).unwrap();
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("being written by process {}", std::process::id())),
        "{err}"
    );
    let o = sextant(&["kb", "stats", "--kb", kb_dir, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stats["documents"], 0);
    drop(held);
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb/operations"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A budget below what the schema's smallest valid output takes fails before decoding,
/// with the figure, as the `incomplete` exit code.
#[test]
fn a_budget_too_small_for_the_required_fields_is_refused_with_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("wide.json");
    let mut props = serde_json::Map::new();
    for i in 0..8 {
        props.insert(
            format!("field_number_{i}"),
            serde_json::json!({"type": "string", "minLength": 12}),
        );
    }
    let keys: Vec<String> = props.keys().cloned().collect();
    std::fs::write(
        &schema,
        serde_json::json!({"type": "object", "required": keys, "properties": props}).to_string(),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let o = sextant(&[
        "generate",
        "--schema",
        schema.to_str().unwrap(),
        "--max-tokens",
        "30",
        "fill it",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains("too small") && err.contains("at least"),
        "{err}"
    );
    println!("refused in {:?}: {err}", t.elapsed());
}

#[test]
fn a_word_document_ingests_with_its_headings_lists_and_tables() {
    // Written by python-docx with Word's default styles (scripts/docx_fixture.py).
    let kb = tempfile::tempdir().unwrap();
    let kb_dir = kb.path().to_str().unwrap();
    let o = sextant(&["ingest", "--kb", kb_dir, "tests/fixtures/docx"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 added"));
    let o = sextant(&[
        "search",
        "--kb",
        kb_dir,
        "--json",
        "which command restarts the gateway",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hits = v["hits"].as_array().unwrap();
    let top = &hits[0];
    assert_eq!(top["file"], "gateway-runbook.docx");
    assert_eq!(top["section"], "Restart commands");
    assert_eq!(
        top["section_path"],
        serde_json::json!(["Before you start", "Restart commands"])
    );
    assert_eq!(top["anchor"], "restart-commands");
    assert!(top["text"]
        .as_str()
        .unwrap()
        .contains("gatewayctl restart --grace 45s --node NODE"));
    let o = sextant(&[
        "search",
        "--kb",
        kb_dir,
        "--json",
        "-k",
        "10",
        "grace timeout setting",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hits = v["hits"].as_array().unwrap();
    // The table's and the list's sections, with their structure kept.
    for (section, holds) in [
        ("Timeouts", "ready timeout | 120s"),
        ("Before you start", "- Announce the restart"),
    ] {
        let hit = hits
            .iter()
            .find(|h| h["section"] == section)
            .unwrap_or_else(|| panic!("no hit in {section}: {v}"));
        let text = hit["text"].as_str().unwrap();
        assert!(text.contains(holds), "{hit}");
    }
}

/// `sextant` with extra environment variables.
fn sextant_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sextant"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A scanned page (an image, no text layer; scripts/ocr_fixture.py): without OCR it is
/// ingested in part with a note naming the package, and read in full, cited by page,
/// once Tesseract is there (`make test` installs it).
#[test]
fn a_scanned_pdf_page_is_read_with_tesseract_and_named_without_it() {
    assert!(
        Command::new("tesseract").arg("--version").output().is_ok(),
        "Tesseract is not installed: `make test` installs it (apt install tesseract-ocr)"
    );
    let src = tempfile::tempdir().unwrap();
    std::fs::copy(
        "tests/fixtures/ocr/scanned-page.pdf",
        src.path().join("scanned-page.pdf"),
    )
    .unwrap();
    let kb = tempfile::tempdir().unwrap();
    let (kb_dir, src_dir) = (kb.path().to_str().unwrap(), src.path().to_str().unwrap());
    let o = sextant_env(
        &["ingest", "--kb", kb_dir, src_dir],
        &[("SEXTANT_TESSERACT", "")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("in part scanned-page.pdf: scanned page(s) 1 have no text layer")
            && out.contains("apt install tesseract-ocr"),
        "{out}"
    );
    // With Tesseract the same file is read again (it was stored as incomplete).
    let o = sextant(&["ingest", "--kb", kb_dir, src_dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("1 changed") && !out.contains("in part"),
        "{out}"
    );
    let v = search_json(
        kb_dir,
        "how long to wait for the pressure to drop after stopping the pump",
    );
    let top = &v["hits"][0];
    assert_eq!(top["file"], "scanned-page.pdf");
    assert_eq!(top["page"], 1);
    let text = top["text"].as_str().unwrap().to_lowercase();
    for word in ["valve v12", "pump p3", "pressure", "drain valve"] {
        assert!(text.contains(word), "OCR missed {word:?}: {text}");
    }
}

#[test]
fn kb_remove_keeps_a_document_out_and_reindex_restores_it() {
    let kb = tempfile::tempdir().unwrap();
    let kb_dir = kb.path().to_str().unwrap();
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb/deployment"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = |kb_dir: &str| -> Value {
        let o = sextant(&["kb", "list", "--kb", kb_dir, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let o = sextant(&["kb", "remove", "--kb", kb_dir, "deploying.md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let l = list(kb_dir);
    assert_eq!(l["removed"], serde_json::json!(["deploying.md"]), "{l}");
    assert!(
        !l["documents"].to_string().contains("\"deploying.md\""),
        "{l}"
    );
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb/deployment"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("left out deploying.md"), "{out}");
    let o = sextant(&["kb", "reindex", "--kb", kb_dir, "deploying.md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let l = list(kb_dir);
    assert_eq!(l["removed"], serde_json::json!([]), "{l}");
    assert!(
        l["documents"].to_string().contains("\"deploying.md\""),
        "{l}"
    );
    let o = sextant(&["kb", "remove", "--kb", kb_dir, "nope.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("sextant kb list"), "{}", stderr(&o));
}

/// An image file is read only when asked (`--images`): with Tesseract its text is found,
/// without it the image is skipped with the package named; an ingest without `--images`
/// keeps what an earlier one read.
#[test]
fn images_are_read_with_ocr_only_when_asked() {
    let src = tempfile::tempdir().unwrap();
    std::fs::copy(
        "tests/fixtures/ocr/scanned-note.png",
        src.path().join("scanned-note.png"),
    )
    .unwrap();
    std::fs::write(
        src.path().join("notes.md"),
        "# Notes\n\nNothing about filters.\n",
    )
    .unwrap();
    let kb = tempfile::tempdir().unwrap();
    let (kb_dir, src_dir) = (kb.path().to_str().unwrap(), src.path().to_str().unwrap());
    let o = sextant(&["ingest", "--kb", kb_dir, src_dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        out.contains("1 added") && !out.contains("scanned-note"),
        "{out}"
    );
    let o = sextant_env(
        &["ingest", "--kb", kb_dir, "--images", src_dir],
        &[("SEXTANT_TESSERACT", "")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        out.contains("skipped scanned-note.png") && out.contains("apt install tesseract-ocr"),
        "{out}"
    );
    let o = sextant(&["ingest", "--kb", kb_dir, "--images", src_dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = search_json(kb_dir, "where are the spare coolant filters kept");
    let top = &v["hits"][0];
    assert_eq!(top["file"], "scanned-note.png", "{v}");
    let text = top["text"].as_str().unwrap().to_lowercase();
    assert!(
        text.contains("cabinet 7") && text.contains("coolant"),
        "{text}"
    );
    // Without --images the image read before stays.
    let o = sextant(&["ingest", "--kb", kb_dir, src_dir]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("0 removed"), "{out}");
    assert_eq!(
        search_json(kb_dir, "spare coolant filters")["hits"][0]["file"],
        "scanned-note.png"
    );
}

/// `sextant chat` over a pipe: a follow-up is read with the turn before it, and a chat
/// killed (-9) while the model writes an answer keeps every turn answered before it.
#[test]
fn chat_keeps_its_conversation_through_a_kill_mid_answer() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let kb = tempfile::tempdir().unwrap();
    let kb_dir = kb.path().to_str().unwrap();
    let o = sextant(&["ingest", "--kb", kb_dir, "examples/kb"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let chat = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sextant"))
            .args(["chat", "--json", "--kb", kb_dir])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut child = chat(&[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "How do I rotate a secret?").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let first: Value = serde_json::from_str(&line).expect("one JSON line per answer");
    let id = first["conversation"].as_str().unwrap().to_string();
    assert_eq!(first["turn"], 1, "{first}");
    // The reader takes seconds to write an answer: kill the chat while it does.
    writeln!(stdin, "and what breaks if I forget to?").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    // Had the rules answered alone within that time, the answer was printed and kept.
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    let finished = rest.lines().filter(|l| l.starts_with('{')).count();

    let mut child = chat(&["--conversation", &id, "--mode", "extractive"]);
    writeln!(
        child.stdin.as_mut().unwrap(),
        "how often should that be done?"
    )
    .unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let next: Value = serde_json::from_slice(&o.stdout).expect("one answer");
    assert_eq!(next["conversation"], id.as_str(), "{next}");
    assert_eq!(
        next["turn"],
        2 + finished,
        "the killed turn is not kept: {next}"
    );
    assert_eq!(
        next["citations"][0]["file"], "security/secrets.md",
        "{next}"
    );
    let kept = sextant::kb::conversations::Conversations::open(kb.path())
        .unwrap()
        .turns(&id)
        .unwrap();
    let asked: Vec<&str> = kept.iter().map(|t| t.question.as_str()).collect();
    let mut expected = vec!["How do I rotate a secret?"];
    if finished == 1 {
        expected.push("and what breaks if I forget to?");
    }
    expected.push("how often should that be done?");
    assert_eq!(asked, expected);
}
