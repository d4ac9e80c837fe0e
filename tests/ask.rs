//! The answer formats on the sample KB, real MiniLM and real SmolLM2: one test per seed
//! pattern, asserting the fields the rules fix. One KB and one LLM are shared.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use sextant::embed::Embedder;
use sextant::kb::ingest::{ingest, IngestOptions};
use sextant::kb::KnowledgeBase;
use sextant::llm::{Llm, LoadOptions};
use sextant::models::{ModelStore, Role};
use sextant::protocols::navigator::{self, NavigatorResponse};
use sextant::protocols::{gap, rag, AnswerMode};
use sextant::schemas::SchemaId;

/// Lock order: the KB first, then the LLM.
fn kb() -> std::sync::MutexGuard<'static, KnowledgeBase> {
    static KB: OnceLock<Mutex<KnowledgeBase>> = OnceLock::new();
    KB.get_or_init(|| {
        let store = ModelStore::open(None);
        let m = store
            .resolve(Role::Embedding, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let embedder = Arc::new(Embedder::load(&m).unwrap());
        let dir = tempfile::tempdir().unwrap().keep();
        let mut kb = KnowledgeBase::open(&dir, embedder).unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kb");
        let r = ingest(&mut kb, &[root], &IngestOptions::default(), &mut |_| {}).unwrap();
        assert!(r.skipped.is_empty());
        Mutex::new(kb)
    })
    .lock()
    .unwrap_or_else(|p| p.into_inner())
}

fn llm() -> std::sync::MutexGuard<'static, Llm> {
    static LLM: OnceLock<Mutex<Llm>> = OnceLock::new();
    LLM.get_or_init(|| {
        let m = ModelStore::open(None)
            .resolve(Role::Llm, None)
            .unwrap_or_else(|e| panic!("{e}"));
        Mutex::new(Llm::load(&m, &LoadOptions::default()).unwrap())
    })
    .lock()
    .unwrap_or_else(|p| p.into_inner())
}

fn schema_valid(schema: &str, v: &Value) {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(v), "{v:#}");
}

fn navigate(q: &str, mode: AnswerMode) -> NavigatorResponse {
    let kb = kb();
    let mut guard = mode.needs_llm().then(llm);
    let llm = guard.as_deref_mut();
    let (r, report) = navigator::prepare(&kb, q, 5, mode)
        .unwrap()
        .complete(llm)
        .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    schema_valid(SchemaId::NavigatorResponse.builtin().json, &v);
    for s in &r.sources {
        assert!(
            kb.store().section_exists(&s.file, &s.section).unwrap(),
            "{s:?}"
        );
    }
    println!("{q}\n{v:#}\n{:?}", report.rules);
    r
}

#[test]
fn pattern_1_direct_answer_cites_the_section_with_high_confidence() {
    // The default mode: the answer is the documented command, cited.
    let r = navigate("How do I roll back a deployment?", AnswerMode::Extractive);
    assert!(!r.out_of_domain);
    assert_eq!(r.sources[0].file, "operations/rollbacks.md");
    assert_eq!(r.sources[0].section, "Rolling back a deployment");
    assert!(r.answer.contains("kubectl rollout undo"), "{}", r.answer);
    assert_eq!(r.confidence, "high", "{}", r.confidence_reason);
    assert!(!r.related_topics.is_empty());
    assert!(!r.related_topics.iter().any(|t| t == &r.sources[0].section));
    // Grounded: whatever the 135M model chooses, it is sentences of the rollback file,
    // and the citations are the sections those sentences come from.
    let r = navigate("How do I roll back a deployment?", AnswerMode::Grounded);
    assert!(!r.sources.is_empty());
    assert!(
        r.sources
            .iter()
            .all(|s| s.file == "operations/rollbacks.md" || s.file == "reference/cli.md"),
        "{:?}",
        r.sources
    );
    assert_ne!(r.confidence, "", "{}", r.confidence_reason);
}

#[test]
fn pattern_2_synthesis_across_files_is_medium() {
    let r = navigate(
        "Which alerts fire for high latency and how do I scale the workers?",
        AnswerMode::Extractive,
    );
    assert!(!r.out_of_domain);
    let files: std::collections::BTreeSet<_> = r.sources.iter().map(|s| s.file.as_str()).collect();
    assert!(files.len() >= 2, "{:?}", r.sources);
    assert_eq!(r.confidence, "medium", "{}", r.confidence_reason);
    assert!(r.confidence_reason.contains("combines sections from"));
}

#[test]
fn pattern_3_confidence_levels_follow_the_written_rules() {
    use navigator::{confidence_level, Level};
    // One file, close match: high. Same score, two files that do not all confirm: medium.
    assert_eq!(confidence_level(&[0.85], 1), Level::High);
    assert_eq!(confidence_level(&[0.85, 0.70], 2), Level::Medium);
    assert_eq!(
        confidence_level(&[0.85, 0.80], 2),
        Level::High,
        "confirming sources"
    );
    assert_eq!(confidence_level(&[0.74], 1), Level::Medium);
    // Partially relevant: low.
    assert_eq!(confidence_level(&[0.66], 1), Level::Low);
}

#[test]
fn pattern_4_in_domain_without_an_answer_is_honest_and_not_out_of_domain() {
    let r = navigate(
        "Which Kafka topic does Lighthouse publish billing events to?",
        AnswerMode::Grounded,
    );
    assert!(r.sources.is_empty());
    assert!(!r.out_of_domain);
    assert_eq!(r.confidence, "high");
    assert!(r.answer.contains("don't have information") && r.answer.contains("Kafka"));
}

#[test]
fn an_extractive_answer_keeps_the_command_as_a_code_block() {
    let r = navigate("How do I roll back a deployment?", AnswerMode::Extractive);
    assert!(
        r.answer
            .contains("```sh\nkubectl rollout undo deployment/lighthouse-api -n lighthouse-prod\n"),
        "{}",
        r.answer
    );
    // The block is fenced on lines of its own, so it renders as code.
    let block = r.answer.find("```sh").unwrap();
    assert!(
        block == 0 || r.answer[..block].ends_with('\n'),
        "{}",
        r.answer
    );
    assert!(r.answer.trim_end().ends_with("```") || r.answer.contains("```\n\n"));
}

#[test]
fn a_small_kb_names_no_gap_from_words_it_lacks_by_chance() {
    // The note naming what the documentation found does not mention needs a KB large
    // enough for a word's absence to mean something (the rule itself: protocols::gap
    // and evidence::coverage unit tests; its figures: docs/EVALUATION.md). The sample
    // KB's 220 chunks lack everyday words such as "place" and "compress" by chance.
    assert!(kb().store().vector_count() < 1000);
    for q in [
        "When does the weekly on-call handover meeting take place?",
        "How do I compress old backups before they are uploaded?",
    ] {
        let r = navigate(q, AnswerMode::Extractive);
        assert!(
            !r.sources.is_empty(),
            "{q}: answered from the closest sections"
        );
        assert!(!r.answer.contains(gap::NOTE_START), "{q}: {}", r.answer);
    }
    let kb = kb();
    let (r, report) = rag::prepare(
        &kb,
        "How do I compress old backups?",
        5,
        AnswerMode::Extractive,
    )
    .unwrap()
    .complete(None)
    .unwrap();
    assert!(
        !r.final_answer.contains(gap::NOTE_START),
        "{}",
        r.final_answer
    );
    assert!(report.unmentioned.is_empty());
    // The words were looked up, and "compress" is unknown to the KB: only its size held
    // the note back.
    assert!(report
        .terms
        .iter()
        .any(|t| t.word == "compress" && t.chunks == 0 && !t.barely_known));
}

#[test]
fn pattern_5_out_of_domain_has_no_sources() {
    let r = navigate(
        "How do I bake sourdough bread at home?",
        AnswerMode::Grounded,
    );
    assert!(r.out_of_domain);
    assert!(r.sources.is_empty());
    assert_eq!(r.confidence, "high");
}

#[test]
fn rag_response_ids_scores_and_confidence_follow_the_seed() {
    let kb = kb();
    for mode in [AnswerMode::Extractive, AnswerMode::Grounded] {
        let mut guard = mode.needs_llm().then(llm);
        let llm = guard.as_deref_mut();
        let (r, report) = rag::prepare(
            &kb,
            "When does the weekly on-call handover meeting take place?",
            5,
            mode,
        )
        .unwrap()
        .complete(llm)
        .unwrap();
        let v = serde_json::to_value(&r).unwrap();
        schema_valid(SchemaId::RagResponse.builtin().json, &v);
        assert_eq!(r.retrieved_chunks.len(), 5);
        let max = r
            .retrieved_chunks
            .iter()
            .map(|c| c.score)
            .fold(0.0, f64::max);
        assert_eq!(r.confidence, (max * 1000.0).round() / 1000.0);
        for c in &r.retrieved_chunks {
            assert!((0.0..=1.0).contains(&c.score));
            assert_eq!(c.score, (c.score * 1000.0).round() / 1000.0, "3 decimals");
            assert!(c.page >= 1);
            if let Some(rest) = c.id.strip_prefix("pdfpage_") {
                let (page, idx) = rest.split_once("_chunk_").unwrap();
                assert_eq!(page.parse::<u32>().unwrap(), c.page);
                idx.parse::<u32>().unwrap();
            } else {
                assert!(c.id.contains("_chunk_"), "{}", c.id);
            }
        }
        assert!(
            r.retrieved_chunks
                .iter()
                .any(|c| c.id.starts_with("pdfpage_1_chunk_")),
            "{v:#}"
        );
        // The answer is grounded: every word comes from the retrieved chunks.
        assert!(
            report.grounding_share >= 0.99,
            "{mode:?}: {}",
            r.final_answer
        );
        assert_ne!(r.final_answer, rag::NOT_FOUND);
    }
}

#[test]
fn rag_not_found_when_nothing_relevant() {
    let (r, _) = rag::prepare(
        &kb(),
        "What is the stock price of Apple?",
        5,
        AnswerMode::Extractive,
    )
    .unwrap()
    .complete(None)
    .unwrap();
    assert_eq!(r.final_answer, rag::NOT_FOUND);
    schema_valid(
        SchemaId::RagResponse.builtin().json,
        &serde_json::to_value(&r).unwrap(),
    );
    assert!(r.confidence < 0.7);
}

#[test]
fn llm_mode_citations_can_only_name_retrieved_sections() {
    let r = navigate("How do I renew the TLS certificate?", AnswerMode::Llm);
    assert!(!r.sources.is_empty());
    // Rules 1 and 4 report on the free-text answer; whatever the model wrote, the
    // citations exist.
}

#[test]
fn navigate_to_section_uses_the_real_heading_tree() {
    use sextant::protocols::section_tool::{navigate, HeadingTree, NavigatedBy};
    let kb = kb();
    let tree = HeadingTree::load(&kb).unwrap();
    let tool = tree.tool_definition();
    let params = tool["function"]["parameters"].clone();
    // Every enum value is a real heading, or the title a document with several top
    // headings sits under.
    for s in params["properties"]["section"]["enum"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        let (_, node, _) = tree.sections.iter().find(|x| x.0 == s).unwrap();
        assert!(
            tree.titled.get(&node.file).map(String::as_str) == Some(s)
                || kb.store().section_exists(&node.file, s).unwrap(),
            "{s}"
        );
    }
    assert!(tree.sections.iter().any(|s| s.0 == "Rollbacks"));
    let validator = jsonschema::validator_for(&params).unwrap();

    // Fast path: a request that names the heading.
    let (nav, report) = navigate(&kb, None, "take me to the TLS certificates page").unwrap();
    assert!(report.decision.starts_with("fast path"));
    assert_eq!(nav.target.file, "security/tls-certificates.md");
    assert!(validator.is_valid(&nav.call["arguments"]));
    // The same heading in a question that asks to go nowhere: the evidence decides, and
    // it finds the subsection that answers, not the page's top.
    let (nav, report) =
        navigate(&kb, None, "How do I renew the TLS certificates manually?").unwrap();
    assert_eq!(
        nav.decided_by,
        NavigatedBy::Retrieval,
        "{}",
        report.decision
    );
    assert_eq!(
        nav.target.section_path,
        ["TLS certificates", "Renewing a certificate manually"]
    );

    // Retrieval or LLM path: the pair chosen always exists under its section, and the LLM
    // path, which only breaks ties, runs at least once.
    let mut llm = llm();
    let mut llm_decisions = 0;
    for q in [
        "my pods keep restarting, where do I look?",
        "where is the bit about undoing a bad release",
        // Two sections retrieval scores equally (found with `sextant eval --navigate`).
        "What does the nginx.ingress.kubernetes.io/canary-weight annotation control?",
        "No admin answers and I urgently need admin rights for a restore. How do I get them temporarily?",
    ] {
        let (nav, report) = navigate(&kb, Some(&mut llm), q).unwrap();
        let by_llm = report.decision.starts_with("LLM between");
        assert!(
            by_llm || report.decision.starts_with("retrieval"),
            "{}",
            report.decision
        );
        if by_llm {
            llm_decisions += 1;
            let chose = format!(
                "chose {} § {}",
                nav.target.file,
                nav.target.section_path.join(" > ")
            );
            assert!(report.decision.ends_with(&chose), "{} / {chose}", report.decision);
        }
        let args = &nav.call["arguments"];
        assert!(validator.is_valid(args), "{args}");
        let section = args["section"].as_str().unwrap();
        let sub = args["subsection"].as_str();
        let (node, fell_back) = tree.resolve(section, sub, &[]).unwrap();
        assert!(!fell_back, "{args}");
        assert_eq!(node.file, nav.target.file);
        assert_eq!(
            nav.target.section_path.first().map(String::as_str),
            Some(section)
        );
    }
    assert!(llm_decisions >= 1, "the LLM path was not exercised");
}

/// The issue's four cases that went to the model and came back DETOUR to "Flow 8 (Reset)":
/// on the real model each gets the decision the seed implies, never a detour without its
/// signature, with a reason that names the forensic fields and that the kernel accepts.
#[test]
fn routing_decides_the_four_cases_from_the_forensics() {
    use sextant::protocols::routing::{
        kernel_check, names_forensic_field, route, DecisionKind, Flow, ForensicSummary,
    };
    let flow =
        Flow::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow.toml")).unwrap();
    let base: Value = serde_json::from_str(include_str!("../examples/forensics.json")).unwrap();
    let mut llm = llm();
    let cases: [(&str, Value, &[DecisionKind]); 4] = [
        // The seed's own example: 2 failing tests, a HIGH "Missing error handling",
        // iteration 2 of 3.
        ("seed example", base.clone(), &[DecisionKind::Loop]),
        (
            "one failing test, a MEDIUM concern, iteration 1",
            {
                let mut v = base.clone();
                v["forensics"]["tests"]["failed"] = 1.into();
                v["forensics"]["concerns"][0]["severity"] = "MEDIUM".into();
                v["iteration"]["current"] = 1.into();
                v
            },
            &[DecisionKind::Loop],
        ),
        (
            "no failing tests, a HIGH concern that needs a product decision",
            {
                let mut v = base.clone();
                v["forensics"]["tests"]["failed"] = 0.into();
                v["forensics"]["concerns"][0]["description"] =
                    "Whether expired coupons may still be redeemed is not specified; the product owner has to decide".into();
                v
            },
            &[DecisionKind::Escalate],
        ),
        (
            "an unknown failure signature at iteration 2",
            {
                let mut v = base.clone();
                v["failure_signature"] = "segfault_in_native_extension".into();
                v["forensics"]["concerns"] = serde_json::json!([]);
                v
            },
            &[DecisionKind::Loop, DecisionKind::Escalate],
        ),
    ];
    for (name, v, allowed) in cases {
        let s = ForensicSummary::parse(&v.to_string(), &flow).unwrap();
        let (d, report) = route(&flow, &s, Some(&mut llm)).unwrap();
        assert!(
            allowed.contains(&d.decision),
            "{name}: {d:?} {:?}",
            report.notes
        );
        assert!(kernel_check(&flow, &s, &d).is_ok(), "{name}: {d:?}");
        assert!(names_forensic_field(&d.reason, &s), "{name}: {}", d.reason);
        assert!(!d.rests_on.is_empty(), "{name}");
    }
}

/// A scripted interview on the real model: every turn validates against the seed schema
/// with exactly one question, stages only move forward in the seed's order, the KV cache
/// is reused from the second turn on, and a resumed session continues where it stopped.
#[test]
fn interview_turns_on_the_real_model_are_valid_and_resume_continues() {
    use sextant::protocols::interview::{Interview, InterviewOptions, Stage};
    let answers = [
        "I am a site reliability engineer at a payments company; I run the on-call rotation.",
        "Eight years now. Before that I was a Linux sysadmin at a university.",
        "Last month a certificate expired on the load balancer and checkout was down for twenty minutes.",
        "We now alert thirty days before expiry and review the list every Monday.",
        "Mostly Kubernetes, Postgres and Terraform, plus a lot of reading of logs.",
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("interview.jsonl");
    let mut llm = llm();
    let stage_index = |t: &Value| {
        Stage::ALL
            .iter()
            .position(|s| s.id() == t["interview_stage"].as_str().unwrap())
            .unwrap()
    };
    let mut turns = Vec::new();
    {
        let mut iv = Interview::create(&path, "test", InterviewOptions::default()).unwrap();
        for (i, a) in answers[..3].iter().enumerate() {
            let (t, stats) = iv.next_turn(&mut llm).unwrap();
            // The opening turn is the program's, so the model's cache is warm from the
            // third turn on.
            if i > 1 {
                assert!(
                    stats.reused_tokens * 10 > stats.prompt_tokens * 7,
                    "turn {i}: only {} of {} prompt tokens reused",
                    stats.reused_tokens,
                    stats.prompt_tokens
                );
            }
            turns.push(t);
            iv.answer(a).unwrap();
        }
    }
    // A new process: resume from the file, the pending answer gets its turn.
    let mut iv = Interview::resume(&path, InterviewOptions::default()).unwrap();
    assert_eq!(iv.state.turns, 3);
    assert!(iv.needs_turn());
    for a in &answers[3..] {
        let (t, _) = iv.next_turn(&mut llm).unwrap();
        turns.push(t);
        iv.answer(a).unwrap();
    }
    let schema = SchemaId::InterviewTurn.builtin().json;
    let answers: Vec<String> = answers.iter().map(|a| a.to_string()).collect();
    let mut earlier: Vec<String> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        schema_valid(schema, t);
        let r = t["response"].as_str().unwrap();
        assert_eq!(r.matches('?').count(), 1, "turn {i}: {r}");
        assert!(t.get("error").is_none(), "turn {i} fell back: {t}");
        // What an interviewer would say: to the person, no placeholder, not a repeat, not
        // spoken as the person, insights from what they said.
        let s = sextant::eval::score_turn("sre", i, t, &answers[..i], &earlier, 0.0);
        assert!(
            s.addressed && !s.placeholder && !s.repeated && !s.speaks_as_person,
            "turn {i}: {s:?}"
        );
        assert_ne!(s.insights_from_answers, Some(false), "turn {i}: {s:?}");
        earlier.push(r.to_string());
        if i > 0 {
            let (a, b) = (stage_index(&turns[i - 1]), stage_index(t));
            assert!(b == a || b == a + 1, "stage jumped at turn {i}: {a} -> {b}");
        }
    }
    assert_eq!(turns[0]["interview_stage"], "greeting");
    // The greeting stage has a limit of two turns: the third turn has moved on.
    assert_eq!(turns[2]["interview_stage"], "profiling");
    let records = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        records.lines().count(),
        1 + 5 + 5,
        "session + 5 turns + 5 answers"
    );
}

#[test]
fn reader_rules_decide_unanswerable_and_out_of_domain_questions_without_the_model() {
    use sextant::protocols::{prepare_ask, AnswerFormat, AskRequest, Step};
    let kb = kb();
    let ask = |q: &str| AskRequest {
        question: q.into(),
        format: AnswerFormat::Navigator,
        mode: None,
        k: 5,
    };
    // Not documented (a name no document mentions) and out of domain: decided by rules.
    for (q, out_of_domain) in [
        (
            "Which Kafka topic does Lighthouse publish billing events to?",
            false,
        ),
        ("How do I bake sourdough bread at home?", true),
        // OpenTelemetry is named once in the KB (monitoring/logging.md), in none of the
        // sections about rollbacks that this question retrieves.
        (
            "How do I roll back a deployment that OpenTelemetry flagged?",
            false,
        ),
    ] {
        match prepare_ask(&kb, &ask(q)).unwrap() {
            Step::Done(a) => {
                assert_eq!(a.report.mode, "reader", "the default mode");
                assert_eq!(a.value["outOfDomain"], out_of_domain, "{q}");
                assert!(a.value["sources"].as_array().unwrap().is_empty(), "{q}");
                if q.contains("OpenTelemetry") {
                    assert!(
                        a.report
                            .decision
                            .contains("no retrieved section mentions OpenTelemetry"),
                        "{}",
                        a.report.decision
                    );
                }
            }
            Step::NeedsLlm(_) => panic!("{q}: the rules should have decided"),
        }
    }
    // A documented question is left to the reader.
    assert!(prepare_ask(&kb, &ask("How do I roll back a deployment?"))
        .unwrap()
        .needs_llm());
}

#[test]
fn reader_answers_a_documented_question_citing_what_it_quoted() {
    let question = "How do I roll back a deployment?";
    let (r, report, best) = {
        let kb = kb();
        let mut llm = llm();
        let ev = sextant::protocols::evidence::Evidence::gather(&kb, question, 5).unwrap();
        let best = ev.sentences[0].clone();
        let best = (best.text, ev.hits[best.hit].file.clone());
        let (r, report) = navigator::prepare(&kb, question, 5, AnswerMode::Reader)
            .unwrap()
            .complete(Some(&mut llm))
            .unwrap();
        (r, report, best)
    };
    // The documentation's best sentence follows the answer (unless the answer is made
    // of it; a unit with code is quoted as a block quote), and its file is cited.
    let unquoted: Vec<&str> = r
        .answer
        .lines()
        .map(|l| l.strip_prefix("> ").or(l.strip_prefix('>')).unwrap_or(l))
        .collect();
    assert!(
        unquoted.join("\n").contains(&best.0),
        "{}\n{best:?}",
        r.answer
    );
    assert!(r.sources.iter().any(|s| s.file == best.1), "{r:?}");
    println!("{r:#?}\n{:?}", report.notes);
    assert!(
        report.decision.starts_with("reader:"),
        "{}",
        report.decision
    );
    assert!(
        r.sources
            .iter()
            .any(|s| s.file == "operations/rollbacks.md"),
        "{r:?}"
    );
    assert!(!r.out_of_domain);
    // The README's example is answered from one file whose passages hold the question:
    // the seed's `high` (it was `low` while an answer taken from a passage the model read
    // but did not list was replaced by the listed ones' sentences).
    assert_eq!(r.confidence, "high", "{}", r.confidence_reason);
    // What the model was shown is the numbered passages: the first retrieved chunks.
    assert!(
        report.shown_to_model.starts_with(&format!(
            "[1] {} § {}",
            report.hits[0].file, report.hits[0].section
        )),
        "{}",
        report.shown_to_model
    );
    assert!(!report.shown_to_model.contains("[4] "));
    // Every cited section was retrieved, and the answer names nothing the cited
    // sections lack (the rule replaces such an answer by the quoted sentences).
    for s in &r.sources {
        assert!(report
            .hits
            .iter()
            .any(|h| h.file == s.file && h.section == s.section));
    }
    let hallucination = report
        .rules
        .iter()
        .find(|x| x.rule == "hallucination_patterns")
        .expect("the rule ran");
    assert!(hallucination.passed, "{hallucination:?}");
    assert!(r.answer.contains("rollout undo"), "{}", r.answer);
}

/// An everyday question whose words the sample KB happens to use passes the rules, but
/// its passages support nothing the reader writes from them: out of domain, not the
/// documentation's closest sentences.
#[test]
fn reader_refuses_as_out_of_domain_when_its_passages_support_nothing_it_wrote() {
    let question = "When is the deadline for filing my personal tax return?";
    let kb = kb();
    let mut llm = llm();
    let (r, report) = navigator::prepare(&kb, question, 8, AnswerMode::Reader)
        .unwrap()
        .complete(Some(&mut llm))
        .unwrap();
    assert!(
        report
            .decision
            .contains("supported nothing the reader wrote"),
        "{}",
        report.decision
    );
    assert!(r.out_of_domain, "{}", r.answer);
    assert!(r.sources.is_empty(), "{r:?}");
    assert!(!report.removed.is_empty(), "{:?}", report.notes);
    assert!(
        r.confidence_reason
            .contains("support nothing an answer could say"),
        "{}",
        r.confidence_reason
    );
}
