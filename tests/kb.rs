//! Knowledge base tests on the real MiniLM weights and the sample KB in `examples/kb/`.
//! One embedder is loaded once and shared by every test in this file.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use sextant::embed::{cosine, Embedder, Precision};
use sextant::kb::ingest::{ingest, IngestOptions, IngestReport};
use sextant::kb::search::{search, SearchMode};
use sextant::kb::KnowledgeBase;
use sextant::models::{ModelStore, Role};

mod common;
use common::{embedder, sample_kb};

/// A JSON array of numbers, as f64.
fn numbers(v: &serde_json::Value) -> impl Iterator<Item = f64> + '_ {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap())
}

fn ingest_into(dir: &Path, roots: &[PathBuf]) -> (KnowledgeBase, IngestReport) {
    let mut kb = KnowledgeBase::open(dir, embedder()).unwrap();
    let report = ingest(&mut kb, roots, &IngestOptions::default(), &mut |_| {}).unwrap();
    (kb, report)
}

/// The sample KB ingested once, shared by the read-only tests.
fn shared_kb() -> &'static std::sync::Mutex<KnowledgeBase> {
    static KB: OnceLock<std::sync::Mutex<KnowledgeBase>> = OnceLock::new();
    KB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let (kb, report) = ingest_into(&dir, &[sample_kb()]);
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        std::sync::Mutex::new(kb)
    })
}

#[test]
fn embeddings_match_sentence_transformers() {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string("tests/fixtures/minilm_reference.json").unwrap(),
    )
    .unwrap();
    let sentences: Vec<&str> = fixture["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let e = embedder();
    // Both precisions: f32 is the reference's arithmetic, int8 (the default where the CPU
    // has VNNI) must stay as close.
    let mut precisions = vec![Precision::F32];
    if sextant::llm::tiled_q8::runs_here() {
        precisions.push(Precision::Int8);
    } else {
        eprintln!("neither AVX-512 VNNI nor AVX2 here: int8 embedding is not exercised");
    }
    let model = ModelStore::open(None)
        .resolve(Role::Embedding, None)
        .unwrap();
    for precision in precisions {
        let ours = Embedder::load_as(&model, precision)
            .unwrap()
            .embed(&sentences)
            .unwrap();
        let mut worst = 1.0f32;
        for (i, reference) in fixture["embeddings"].as_array().unwrap().iter().enumerate() {
            let reference: Vec<f32> = numbers(reference).map(|x| x as f32).collect();
            assert_eq!(ours[i].len(), 384);
            let c = cosine(&ours[i], &reference);
            worst = worst.min(c);
            assert!(c >= 0.999, "{precision:?}, sentence {i}: cosine {c}");
        }
        println!("{precision:?}: worst cosine vs sentence-transformers: {worst:.6}");
    }
    // Tokenisation agrees too.
    let tok = e.counting_tokenizer();
    for (i, ids) in fixture["input_ids"].as_array().unwrap().iter().enumerate() {
        let want: Vec<u32> = numbers(ids).map(|x| x as u32).collect();
        let got = tok.encode(sentences[i], true).unwrap().get_ids().to_vec();
        assert_eq!(got, want, "sentence {i}");
    }
}

#[test]
fn sample_kb_ingests_with_sections_pages_and_stable_ids() {
    let mut kb = shared_kb().lock().unwrap();
    let stats = kb.stats().unwrap();
    assert_eq!(stats.documents, 20, "{stats:?}");
    assert!(stats.consistent, "{stats:?}");
    assert_eq!(stats.chunks, stats.vectors);
    // PDF chunks carry their page and the seed's id format; sections come from the outline.
    let listing = kb.store().chunk_listing().unwrap();
    let pdf: Vec<(String, Option<i64>, String)> = listing
        .iter()
        .filter(|c| c.kind == "pdf")
        .map(|c| (c.chunk_id.clone(), c.page.map(i64::from), c.heading.clone()))
        .collect();
    assert!(!pdf.is_empty());
    for (id, page, _) in &pdf {
        let page = page.expect("PDF chunks have a page");
        assert!(id.starts_with(&format!("pdfpage_{page}_chunk_")), "{id}");
    }
    let pages: std::collections::BTreeSet<i64> = pdf.iter().filter_map(|p| p.1).collect();
    assert_eq!(pages.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    assert!(
        pdf.iter().any(|p| p.2 == "Shift handover"),
        "outline sections"
    );
    // HTML sections, scripts dropped.
    let html_text: String = listing
        .iter()
        .filter(|c| c.kind == "html")
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        !html_text.contains("function") && !html_text.contains("{"),
        "{html_text}"
    );
    // No chunk exceeds the embedding window.
    let tok = kb.embedder.counting_tokenizer();
    let texts: Vec<String> = listing.into_iter().map(|c| c.text).collect();
    for t in &texts {
        assert!(tok.encode(t.as_str(), true).unwrap().len() <= 256, "{t}");
    }
}

#[test]
fn roll_back_question_finds_the_rollback_section_first() {
    let kb = shared_kb().lock().unwrap();
    let hits = search(
        &kb,
        "how do I roll back a deployment",
        5,
        SearchMode::Hybrid,
    )
    .unwrap();
    assert_eq!(hits[0].file, "operations/rollbacks.md", "{hits:#?}");
    assert_eq!(hits[0].section, "Rolling back a deployment");
    assert_eq!(
        hits[0].section_path.last().unwrap(),
        "Rolling back a deployment"
    );
    assert!(hits[0].score > 0.5 && hits[0].score <= 1.0);
    assert!(hits
        .windows(2)
        .all(|w| w[0].id != w[1].id || w[0].file != w[1].file));
}

/// Hybrid retrieval must be at least as good as either list alone on the labelled set.
#[test]
fn hybrid_hit_at_5_is_at_least_as_good_as_dense_and_bm25() {
    let kb = shared_kb().lock().unwrap();
    let questions: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/kb_questions.json").unwrap())
            .unwrap();
    assert!(questions.len() >= 25);
    let hits_at = |mode: SearchMode| -> (usize, usize) {
        let mut at5 = 0;
        let mut at1 = 0;
        for q in &questions {
            let hits = search(&kb, q["question"].as_str().unwrap(), 5, mode).unwrap();
            let ok = |h: &sextant::kb::search::Hit| {
                h.file == q["file"].as_str().unwrap() && h.section == q["section"].as_str().unwrap()
            };
            if hits.iter().any(ok) {
                at5 += 1;
            }
            if hits.first().is_some_and(ok) {
                at1 += 1;
            }
        }
        (at1, at5)
    };
    let n = questions.len();
    let (d1, dense) = hits_at(SearchMode::Dense);
    let (b1, bm25) = hits_at(SearchMode::Bm25);
    let (h1, hybrid) = hits_at(SearchMode::Hybrid);
    println!("hit@5 on {n} questions: dense {dense}, bm25 {bm25}, hybrid {hybrid}");
    println!("hit@1 on {n} questions: dense {d1}, bm25 {b1}, hybrid {h1}");
    assert!(hybrid >= dense, "hybrid {hybrid} < dense {dense}");
    assert!(hybrid >= bm25, "hybrid {hybrid} < bm25 {bm25}");
    assert!(hybrid * 10 >= n * 8, "hybrid hit@5 {hybrid}/{n} below 80%");
}

/// Headings whose anchors collide ("Setup", "Setup", then "Setup 1", whose own slug is
/// the second's) ingest as three sections with three anchors; before, the third chunk id
/// repeated the second's and the whole ingest stopped on SQLite's UNIQUE constraint (seen
/// on Apache's manual).
#[test]
fn headings_whose_anchors_collide_ingest_with_distinct_anchors() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("setup.md"),
        "# Guide\n\n## Setup\n\nFirst setup.\n\n## Setup\n\nSecond setup.\n\n## Setup 1\n\nThird setup.\n",
    )
    .unwrap();
    let (kb, report) = ingest_into(&tmp.path().join("kb"), &[docs]);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let chunks = kb.store().chunk_listing().unwrap();
    let mut ids: Vec<&str> = chunks.iter().map(|c| c.chunk_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "chunk ids repeat: {ids:?}");
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walk(from) {
        let rel = e.strip_prefix(from).unwrap();
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&e, &dst).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn chunk_ids(kb: &KnowledgeBase, file: &str) -> Vec<String> {
    let mut ids: Vec<String> = kb
        .store()
        .chunk_listing()
        .unwrap()
        .into_iter()
        .filter(|c| c.file == file)
        .map(|c| c.chunk_id)
        .collect();
    ids.sort();
    ids
}

/// BM25 counts a deleted chunk's words until tantivy merges its segment away. A KB whose
/// files changed ranks as one built fresh from the same files: a segment is merged once a
/// tenth of it is deleted (tantivy's default waits until all of it is).
#[test]
fn keyword_scores_after_files_change_match_a_kb_built_fresh() {
    let docs = tempfile::tempdir().unwrap();
    let words = [
        "rollback",
        "replica",
        "quota",
        "certificate",
        "backup",
        "ingress",
    ];
    let page = |i: usize, version: &str| {
        format!(
            "# Page {i}\n\nThe {w} runbook, {version}: check the {w} status, then the cluster.\n\n\
             ## Details\n\nEvery {w} step is logged {version}.\n",
            w = words[i % words.len()]
        )
    };
    for i in 0..10 {
        std::fs::write(docs.path().join(format!("p{i}.md")), page(i, "first")).unwrap();
    }
    let changed_dir = tempfile::tempdir().unwrap();
    let (mut changed, _) = ingest_into(changed_dir.path(), &[docs.path().to_path_buf()]);
    for i in 0..3 {
        std::fs::write(
            docs.path().join(format!("p{i}.md")),
            page(i, "second, rewritten"),
        )
        .unwrap();
    }
    let r = ingest(
        &mut changed,
        &[docs.path().to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.changed.len(), 3, "{r:?}");
    drop(changed);
    let changed = KnowledgeBase::open(changed_dir.path(), embedder()).unwrap();
    let fresh_dir = tempfile::tempdir().unwrap();
    let (fresh, _) = ingest_into(fresh_dir.path(), &[docs.path().to_path_buf()]);
    for query in [
        "rollback status",
        "replica cluster",
        "runbook logged",
        "first step",
    ] {
        let scores = |kb: &KnowledgeBase| -> Vec<String> {
            kb.store()
                .bm25(query, 20)
                .unwrap()
                .iter()
                .map(|(_, s)| format!("{s:.5}"))
                .collect()
        };
        assert_eq!(scores(&changed), scores(&fresh), "{query:?}");
    }
}

#[test]
fn incremental_ingest_adds_changes_and_removes_only_what_changed() {
    let docs = tempfile::tempdir().unwrap();
    copy_dir(&sample_kb().join("operations"), &docs.path().join("ops"));
    copy_dir(&sample_kb().join("handbook"), &docs.path().join("handbook"));
    let kbdir = tempfile::tempdir().unwrap();
    let (mut kb, first) = ingest_into(kbdir.path(), &[docs.path().to_path_buf()]);
    assert_eq!(first.added.len(), 4, "{first:?}");
    let ids_before = chunk_ids(&kb, "ops/rollbacks.md");
    let pdf_before = chunk_ids(&kb, "handbook/oncall-guide.pdf");

    // Nothing changed: nothing embedded.
    let again = ingest(
        &mut kb,
        &[docs.path().to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        (again.unchanged, again.chunks_embedded),
        (4, 0),
        "{again:?}"
    );

    // Change one file, add one, delete one.
    let scaling = docs.path().join("ops/scaling.md");
    let mut text = std::fs::read_to_string(&scaling).unwrap();
    text.push_str("\n## Zebra capacity\n\nThe zebra pool holds 42 workers.\n");
    std::fs::write(&scaling, text).unwrap();
    std::fs::write(
        docs.path().join("ops/new.md"),
        "# New page\n\nFresh content about quokkas.\n",
    )
    .unwrap();
    std::fs::remove_file(docs.path().join("ops/backups-and-restore.md")).unwrap();
    let r = ingest(
        &mut kb,
        &[docs.path().to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.changed, vec!["ops/scaling.md"]);
    assert_eq!(r.added, vec!["ops/new.md"]);
    assert_eq!(r.removed, vec!["ops/backups-and-restore.md"]);
    assert_eq!(r.unchanged, 2);
    assert_eq!(
        chunk_ids(&kb, "ops/rollbacks.md"),
        ids_before,
        "ids stable for unchanged files"
    );
    assert_eq!(chunk_ids(&kb, "handbook/oncall-guide.pdf"), pdf_before);
    assert!(chunk_ids(&kb, "ops/backups-and-restore.md").is_empty());
    let stats = kb.stats().unwrap();
    assert!(stats.consistent && stats.documents == 4, "{stats:?}");
    let hits = search(&kb, "zebra pool workers", 3, SearchMode::Hybrid).unwrap();
    assert_eq!(hits[0].section, "Zebra capacity");
    let hits = search(&kb, "quokkas", 3, SearchMode::Bm25).unwrap();
    assert_eq!(hits[0].file, "ops/new.md");
    // Re-ingest into a fresh KB gives the same ids: they depend only on content.
    let other = tempfile::tempdir().unwrap();
    let (kb2, _) = ingest_into(other.path(), &[docs.path().to_path_buf()]);
    assert_eq!(chunk_ids(&kb2, "ops/rollbacks.md"), ids_before);
}

#[test]
fn bad_files_are_skipped_with_reasons_and_lose_nothing() {
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("good.md"),
        "# Good\n\nValid text about otters.\n",
    )
    .unwrap();
    std::fs::write(
        docs.path().join("broken.pdf"),
        b"%PDF-1.7\nthis is not really a pdf",
    )
    .unwrap();
    std::fs::write(
        docs.path().join("binary.txt"),
        [0u8, 159, 146, 150, 0, 1, 2],
    )
    .unwrap();
    std::fs::write(docs.path().join("big.txt"), "x".repeat(5000)).unwrap();
    let mut latin1 = b"# Caf".to_vec();
    latin1.extend_from_slice(&[0xe9]);
    latin1.extend_from_slice(b"\n\nMostly fine text with one latin-1 byte in the heading.\n");
    std::fs::write(docs.path().join("latin1.md"), latin1).unwrap();
    let kbdir = tempfile::tempdir().unwrap();
    let mut kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    let opts = IngestOptions {
        max_file_bytes: 4000,
        ..IngestOptions::default()
    };
    let r = ingest(&mut kb, &[docs.path().to_path_buf()], &opts, &mut |_| {}).unwrap();
    let reasons: std::collections::HashMap<_, _> = r.skipped.iter().cloned().collect();
    assert!(reasons["broken.pdf"].contains("PDF"), "{reasons:?}");
    assert!(reasons["binary.txt"].contains("binary"), "{reasons:?}");
    assert!(reasons["big.txt"].contains("too large"), "{reasons:?}");
    let mut added = r.added.clone();
    added.sort();
    assert_eq!(added, vec!["good.md", "latin1.md"]);
    // A file that turns bad later keeps its last good version.
    std::fs::write(docs.path().join("good.md"), [0u8; 10]).unwrap();
    let r = ingest(&mut kb, &[docs.path().to_path_buf()], &opts, &mut |_| {}).unwrap();
    assert!(r.skipped.iter().any(|(f, _)| f == "good.md"));
    let hits = search(&kb, "otters", 1, SearchMode::Bm25).unwrap();
    assert_eq!(hits[0].file, "good.md");
}

/// What a KB holds, independent of its rowids: every chunk as (file, id, text), sorted.
fn chunk_set(kb: &KnowledgeBase) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = kb
        .store()
        .chunk_listing()
        .unwrap()
        .into_iter()
        .map(|c| (c.file, c.chunk_id, c.text))
        .collect();
    v.sort();
    v
}

/// The texts of a keyword search's hits, best first (copies of a file read the same).
fn keyword_hits(kb: &KnowledgeBase, query: &str) -> Vec<String> {
    search(kb, query, 8, SearchMode::Bm25)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

#[test]
fn a_crash_mid_ingest_leaves_a_kb_that_opens_answers_and_completes() {
    // A folder big enough that ingest takes several seconds: the sample KB five times.
    let docs = tempfile::tempdir().unwrap();
    for i in 0..5 {
        copy_dir(&sample_kb(), &docs.path().join(format!("copy{i}")));
    }
    let files = walk(docs.path()).len();
    let kbdir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["ingest", "--kb"])
        .arg(kbdir.path())
        .arg(docs.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Past the first checkpoint (16 documents) but before the end.
    let db = kbdir.path().join("kb.sqlite");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let n =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| {
                    c.query_row("SELECT COUNT(*) FROM documents", [], |r| r.get::<_, i64>(0))
                })
                .unwrap_or(0);
        if n >= 18 || std::time::Instant::now() > deadline {
            break;
        }
    }
    // Search answers while the ingest runs, from what it has committed.
    {
        let reader = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
        assert!(!keyword_hits(&reader, "roll back a deployment").is_empty());
        let dense = search(&reader, "roll back a deployment", 3, SearchMode::Dense).unwrap();
        assert!(!dense.is_empty());
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the ingest finished before it could be killed"
    );
    // The lock goes with the last process that has its file open: a parse worker the
    // killed ingest was spawning holds a copy until it execs (milliseconds, longer on a
    // loaded machine: CI's two cores run the other tests meanwhile).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while sextant::kb::lock::WriterLock::try_acquire(kbdir.path()).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed ingest's lock was not released"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Reopening repairs: every chunk has a vector and its words indexed again.
    let mut kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    let stats = kb.stats().unwrap();
    assert!(stats.consistent, "{stats:?} repaired {:?}", kb.repaired);
    assert!(
        stats.documents >= 18 && stats.documents < files,
        "{stats:?}"
    );
    assert_eq!(kb.store().keyword_count(), stats.chunks as u64);
    let hits = search(&kb, "roll back a deployment", 3, SearchMode::Hybrid).unwrap();
    assert!(!hits.is_empty());
    // The next ingest finishes the job, with what an uninterrupted ingest makes.
    let r = ingest(
        &mut kb,
        &[docs.path().to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    let stats = kb.stats().unwrap();
    assert_eq!(stats.documents, files, "{stats:?}");
    assert!(stats.consistent, "{stats:?}");
    let whole_dir = tempfile::tempdir().unwrap();
    let (whole, _) = ingest_into(whole_dir.path(), &[docs.path().to_path_buf()]);
    assert_eq!(chunk_set(&kb), chunk_set(&whole));
    assert_eq!(kb.store().keyword_count(), whole.store().keyword_count());
    for q in [
        "renew the TLS certificate",
        "pods stuck in CrashLoopBackOff",
    ] {
        let mut a = keyword_hits(&kb, q);
        let mut b = keyword_hits(&whole, q);
        assert!(!a.is_empty(), "{q}");
        // Five copies of each chunk tie, in any order.
        a.sort();
        b.sort();
        assert_eq!(a, b, "{q}");
    }
}

/// A KB written before the keyword index existed (format 1: no `keywords/`, no format
/// row, none of its tables) is brought up to date on open; one of a newer format is
/// refused with the fix.
#[test]
fn an_older_kb_is_migrated_on_open_and_a_newer_one_refused() {
    let kbdir = tempfile::tempdir().unwrap();
    let (kb, _) = ingest_into(kbdir.path(), &[sample_kb()]);
    let before = keyword_hits(&kb, "renew the TLS certificate");
    let chunks = kb.store().counts().unwrap().chunks as u64;
    drop(kb);
    std::fs::remove_dir_all(kbdir.path().join(sextant::kb::store::KEYWORDS_DIR)).unwrap();
    let db = rusqlite::Connection::open(kbdir.path().join("kb.sqlite")).unwrap();
    db.execute_batch(
        "DELETE FROM meta WHERE key = 'format';
         DROP TRIGGER chunks_keywords_insert; DROP TRIGGER chunks_keywords_delete;
         DROP TABLE keyword_pending;",
    )
    .unwrap();
    let kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    assert_eq!(kb.repaired.keywords_pending as u64, chunks);
    assert_eq!(kb.store().keyword_count(), chunks);
    assert_eq!(keyword_hits(&kb, "renew the TLS certificate"), before);
    drop(kb);
    let format: String = db
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(format, sextant::kb::store::FORMAT.to_string());

    db.execute("UPDATE meta SET value = '99' WHERE key = 'format'", [])
        .unwrap();
    let err = KnowledgeBase::open(kbdir.path(), embedder())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("newer Sextant") && err.contains("upgrade"),
        "{err}"
    );
}

/// A KB being created by one process (an ingest starting) and opened by another at that
/// moment (`sextant kb stats` polling): the second never empties the first's new keyword
/// index. It did when a new KB's missing format row was read as format 1 (CI: `ingest
/// --watch` died and the test waiting for its first document timed out).
#[test]
fn a_new_kb_opened_by_a_second_process_keeps_the_first_ones_keyword_index() {
    let kbdir = tempfile::tempdir().unwrap();
    let first = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    let db = rusqlite::Connection::open(kbdir.path().join("kb.sqlite")).unwrap();
    let format: String = db
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(
        format,
        sextant::kb::store::FORMAT.to_string(),
        "a new KB has its format"
    );
    // The moment before the first process recorded it.
    db.execute("DELETE FROM meta WHERE key = 'format'", [])
        .unwrap();
    let keywords = kbdir.path().join(sextant::kb::store::KEYWORDS_DIR);
    let marker = keywords.join("first-process-was-here");
    std::fs::write(&marker, "").unwrap();
    let second = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    assert!(
        marker.exists(),
        "the second opener emptied the keyword index"
    );
    drop((first, second));
}

/// The keyword index is derived data: deleted or damaged, it is rebuilt from the chunks.
#[test]
fn a_lost_or_damaged_keyword_index_is_rebuilt_from_the_chunks() {
    let kbdir = tempfile::tempdir().unwrap();
    let (kb, _) = ingest_into(kbdir.path(), &[sample_kb()]);
    let before = keyword_hits(&kb, "rotate a leaked secret");
    drop(kb);
    let keywords = kbdir.path().join(sextant::kb::store::KEYWORDS_DIR);
    std::fs::write(keywords.join("meta.json"), "{ not json").unwrap();
    let kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    assert_eq!(keyword_hits(&kb, "rotate a leaked secret"), before);
    assert!(kbdir.path().join("keywords.unreadable").is_dir());
    drop(kb);
    std::fs::remove_dir_all(&keywords).unwrap();
    let kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    assert_eq!(keyword_hits(&kb, "rotate a leaked secret"), before);
}

/// A reader never takes the writer lock of a consistent KB, so a writer starting while
/// `sextant kb stats` (or a search) opens it is not refused as busy.
#[test]
fn opening_a_consistent_kb_leaves_the_writer_lock_alone() {
    let kbdir = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(docs.path().join("a.md"), "# Alpha\n\nPort 7001.\n").unwrap();
    drop(ingest_into(kbdir.path(), &[docs.path().to_path_buf()]));
    let lock_file = kbdir.path().join(sextant::kb::lock::LOCK_FILE);
    std::fs::write(&lock_file, "").unwrap();
    let held = sextant::kb::lock::WriterLock::try_acquire(kbdir.path()).unwrap();
    let holder = std::fs::read_to_string(&lock_file).unwrap();
    let kb = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    assert_eq!(kb.store().counts().unwrap().documents, 1);
    drop(held);
    std::fs::write(&lock_file, "").unwrap();
    let reader = KnowledgeBase::open(kbdir.path(), embedder()).unwrap();
    // Taking the lock writes the holder into the file; a reader leaves it empty.
    assert_eq!(std::fs::read_to_string(&lock_file).unwrap(), "", "{holder}");
    drop(reader);
}

/// Code blocks, tables and lists survive from the source to the Reader, in Markdown, HTML
/// and DOCX, and a chunk holds a code block whole.
#[test]
fn code_tables_and_lists_reach_the_reader_as_such_in_every_format() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(
        src.path().join("restore.md"),
        "# Restore\n\nTo restore the database, run:\n\n```sh\npg_restore --clean -d lighthouse /backups/latest.dump\n```\n\n\
         | Backup | Kept for |\n|---|---|\n| daily | 14 days |\n\n- stop the workers\n- restore\n",
    )
    .unwrap();
    std::fs::write(
        src.path().join("restore.html"),
        "<html><head><title>Restore</title></head><body><h1>Restore</h1>\
         <p>To restore the database, run:</p>\
         <pre><code class=\"language-sh\">pg_restore --clean -d lighthouse /backups/latest.dump</code></pre>\
         <table><tr><th>Backup</th><th>Kept for</th></tr><tr><td>daily</td><td>14 days</td></tr></table>\
         <ul><li>stop the workers</li><li>restore</li></ul></body></html>",
    )
    .unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docx/gateway-runbook.docx"),
        src.path().join("gateway-runbook.docx"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kb, report) = ingest_into(dir.path(), &[src.path().to_path_buf()]);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let html_of = |file: &str| {
        sextant::service::document::render(&kb, file).unwrap()["html"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for file in ["restore.md", "restore.html"] {
        let html = html_of(file);
        for expected in [
            "<pre><code class=\"language-sh\">pg_restore --clean -d lighthouse /backups/latest.dump\n</code></pre>",
            "<th>Backup</th>",
            "<td>14 days</td>",
            "<li>stop the workers</li>",
        ] {
            assert!(html.contains(expected), "{file}: {expected} not in\n{html}");
        }
    }
    let docx = html_of("gateway-runbook.docx");
    for expected in [
        "<pre><code>gatewayctl drain --node NODE\ngatewayctl status --node NODE\n</code></pre>",
        "<th>Setting</th>",
        "<td>120s</td>",
        "<li>Drain traffic from the node you restart.</li>",
    ] {
        assert!(docx.contains(expected), "docx: {expected} not in\n{docx}");
    }
    // The chunk holding the command holds its whole block, fences included.
    let chunks = kb.store().chunk_listing().unwrap();
    for file in ["restore.md", "restore.html"] {
        let chunk = chunks
            .iter()
            .find(|c| c.file == file && c.text.contains("pg_restore"))
            .unwrap_or_else(|| panic!("{file}: no chunk holds the command"));
        assert!(
            chunk
                .text
                .contains("```sh\npg_restore --clean -d lighthouse /backups/latest.dump\n```"),
            "{}",
            chunk.text
        );
    }
}

#[test]
fn the_reader_gets_a_pdf_s_own_bytes_until_the_file_changes() {
    let src = tempfile::tempdir().unwrap();
    let pdf = src.path().join("oncall-guide.pdf");
    std::fs::copy(sample_kb().join("handbook/oncall-guide.pdf"), &pdf).unwrap();
    std::fs::write(src.path().join("notes.md"), "# Notes\n\nNothing here.\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kb, _) = ingest_into(dir.path(), &[src.path().to_path_buf()]);
    use base64::Engine;
    let out = sextant::service::document::pdf_file(&kb, "oncall-guide.pdf").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(out["base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, std::fs::read(&pdf).unwrap());
    // Not a PDF, not in the KB: refused, naming why.
    let md = sextant::service::document::pdf_file(&kb, "notes.md").unwrap_err();
    assert!(md.to_string().contains("not a PDF"), "{md}");
    let none = sextant::service::document::pdf_file(&kb, "../etc/passwd").unwrap_err();
    assert_eq!(none.code(), "not_found", "{none}");
    // Changed since ingest: the cited pages may have moved, so the fix is named.
    let mut changed = std::fs::read(&pdf).unwrap();
    changed.extend_from_slice(b"\n% appended\n");
    std::fs::write(&pdf, changed).unwrap();
    let stale = sextant::service::document::pdf_file(&kb, "oncall-guide.pdf").unwrap_err();
    assert_eq!(stale.code(), "stale_document", "{stale}");
    assert!(stale.to_string().contains("sextant ingest"), "{stale}");
}

#[test]
fn one_document_is_removed_kept_out_and_restored_by_a_re_index() {
    let src = tempfile::tempdir().unwrap();
    copy_dir(&sample_kb().join("deployment"), src.path());
    let dir = tempfile::tempdir().unwrap();
    let (mut kb, _) = ingest_into(dir.path(), &[src.path().to_path_buf()]);
    let before = chunk_ids(&kb, "canary-releases.md");
    assert!(!before.is_empty());
    let opts = IngestOptions::default();

    // An unchanged document is read and embedded again, with the same chunk ids.
    let report = sextant::kb::documents::reindex(&mut kb, "canary-releases.md", &opts).unwrap();
    assert_eq!(
        report.changed,
        vec!["canary-releases.md".to_string()],
        "{report:?}"
    );
    assert_eq!(report.chunks_embedded, before.len());
    assert_eq!(chunk_ids(&kb, "canary-releases.md"), before);

    // Removed: gone from the KB and its search, and left out by the next ingest.
    sextant::kb::documents::remove(&mut kb, "canary-releases.md").unwrap();
    assert!(chunk_ids(&kb, "canary-releases.md").is_empty());
    let listed = kb.store().list_documents().unwrap();
    assert!(listed.iter().all(|d| d.path != "canary-releases.md"));
    let hits = search(&kb, "canary release traffic", 10, SearchMode::Hybrid).unwrap();
    assert!(
        hits.iter().all(|h| h.file != "canary-releases.md"),
        "{hits:?}"
    );
    let again = ingest(&mut kb, &[src.path().to_path_buf()], &opts, &mut |_| {}).unwrap();
    assert_eq!(
        again.excluded,
        vec!["canary-releases.md".to_string()],
        "{again:?}"
    );
    assert!(
        again.added.is_empty() && again.removed.is_empty(),
        "{again:?}"
    );
    assert!(chunk_ids(&kb, "canary-releases.md").is_empty());

    // Restored by a re-index, with the same ids; later ingests keep it.
    sextant::kb::documents::reindex(&mut kb, "canary-releases.md", &opts).unwrap();
    assert_eq!(chunk_ids(&kb, "canary-releases.md"), before);
    let after = ingest(&mut kb, &[src.path().to_path_buf()], &opts, &mut |_| {}).unwrap();
    assert!(after.excluded.is_empty(), "{after:?}");

    let unknown = sextant::kb::documents::remove(&mut kb, "no/such.md").unwrap_err();
    assert!(unknown.to_string().contains("sextant kb list"), "{unknown}");
}

/// Several knowledge bases through the service, as the Library drives them: one created,
/// opened, fed a folder that is then followed live, refused a switch while it is being
/// written, renamed while open, and removed once another is open.
#[test]
fn knowledge_bases_are_created_switched_renamed_and_follow_their_folders() {
    use serde_json::json;
    use sextant::service::{OpenOptions, Request, Service, ServiceError};
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("pumps.md"),
        "# Pumps\n\nThe P3 pump seal is replaced every 2000 hours.\n",
    )
    .unwrap();
    let start = tmp.path().join("start");
    let mut svc = Service::open(
        &ModelStore::open(None),
        &OpenOptions {
            kb: Some(start.display().to_string()),
            lazy_llm: true,
            watch: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    svc.config.home = sextant::kb::home::KbHome::at(tmp.path().join("home"));
    let svc = svc.shared();
    let call = |v: serde_json::Value| svc.handle(Request::from_json(v).unwrap());
    let documents = || {
        call(json!({"op": "kb"})).unwrap()["stats"]["documents"]
            .as_u64()
            .unwrap()
    };

    call(json!({"op": "create_kb", "name": "ops"})).unwrap();
    call(json!({"op": "switch_kb", "name": "ops"})).unwrap();
    assert_eq!(svc.kb_name(), "ops");
    assert_eq!(documents(), 0, "a new knowledge base is empty");
    svc.ingest(std::slice::from_ref(&docs), false, &mut |_| {})
        .unwrap();
    assert_eq!(documents(), 1);
    let listed = call(json!({"op": "kbs"})).unwrap();
    let open = listed["kbs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["current"] == true)
        .unwrap()
        .clone();
    assert_eq!(open["name"], "ops", "{listed}");
    assert_eq!(open["live"]["state"], "following", "{listed}");
    assert_eq!(
        open["live"]["folders"],
        json!([docs.canonicalize().unwrap()]),
        "{listed}"
    );
    assert!(
        listed["kbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["path"] == json!(start)),
        "the KB it started with stays listed: {listed}"
    );

    // A file saved into the followed folder is ingested without a request.
    std::fs::write(
        docs.join("valves.md"),
        "# Valves\n\nValve V12 is checked weekly for leaks.\n",
    )
    .unwrap();
    let t = std::time::Instant::now();
    while documents() < 2 && t.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(documents(), 2, "the new file was not ingested within 60 s");
    let hits = call(json!({"op": "search", "query": "valve leak check", "k": 1})).unwrap();
    assert_eq!(hits["hits"][0]["file"], "valves.md", "{hits}");

    // Another writer holds the open KB: it cannot be swapped out under the write.
    let open_dir = svc.kb_dir();
    let writer = sextant::kb::lock::WriterLock::try_acquire(&open_dir).unwrap();
    let busy = call(json!({"op": "switch_kb", "name": start.display().to_string()}));
    assert!(matches!(busy, Err(ServiceError::KbBusy(_))), "{busy:?}");
    drop(writer);

    // Renamed while open: still open, with its documents, answering searches.
    call(json!({"op": "rename_kb", "name": "ops", "to": "Ops handbook"})).unwrap();
    assert_eq!(svc.kb_name(), "Ops handbook");
    assert_eq!(documents(), 2);
    let hits = call(json!({"op": "search", "query": "pump seal", "k": 1})).unwrap();
    assert_eq!(hits["hits"][0]["file"], "pumps.md", "{hits}");
    let refused = call(json!({"op": "remove_kb", "name": "Ops handbook"}));
    assert!(
        matches!(refused, Err(ServiceError::BadRequest(_))),
        "{refused:?}"
    );

    // Following turned off is kept with the KB; then the first KB opens again and the
    // other is removed (moved aside, not deleted).
    let off = call(json!({"op": "watch_kb", "on": false})).unwrap();
    assert_eq!(off["state"], "off", "{off}");
    call(json!({"op": "switch_kb", "name": start.display().to_string()})).unwrap();
    assert_eq!(documents(), 0);
    let removed = call(json!({"op": "remove_kb", "name": "Ops handbook"})).unwrap();
    let moved = Path::new(removed["moved_to"].as_str().unwrap());
    assert!(moved.join("kb.sqlite").is_file(), "{removed}");
    let left = call(json!({"op": "kbs"})).unwrap();
    assert_eq!(left["kbs"].as_array().unwrap().len(), 1, "{left}");
    let bad = call(json!({"op": "create_kb", "name": "../escape"}));
    assert!(matches!(bad, Err(ServiceError::BadRequest(_))), "{bad:?}");
}

/// A conversation over the sample KB: the follow-up finds the secrets section only with
/// its history, a new topic is searched as asked, and the conversation is kept across a
/// restart and exported with its citations as links.
#[test]
fn a_follow_up_is_read_with_its_conversation_and_the_conversation_is_kept() {
    use serde_json::json;
    use sextant::service::{OpenOptions, Request, Service};
    let kbdir = tempfile::tempdir().unwrap();
    drop(ingest_into(kbdir.path(), &[sample_kb()]));
    let open = || {
        Service::open(
            &ModelStore::open(None),
            &OpenOptions {
                kb: Some(kbdir.path().display().to_string()),
                lazy_llm: true,
                ..OpenOptions::default()
            },
        )
        .unwrap()
    };
    let svc = open();
    let ask = |q: &str, conversation: Option<&str>| {
        let mut r = json!({"op": "ask", "question": q, "mode": "extractive"});
        if let Some(c) = conversation {
            r["conversation"] = json!(c);
        }
        svc.handle(Request::from_json(r).unwrap()).unwrap()
    };
    let first_file = |a: &Value| a["citations"][0]["file"].as_str().unwrap().to_string();
    let first = ask("How do I rotate a secret?", Some("new"));
    let id = first["conversation"].as_str().unwrap().to_string();
    assert_eq!(first["turn"], 1, "{first}");
    let follow_up = "how often should that be done?";
    let alone = ask(follow_up, None);
    assert_ne!(first_file(&alone), "security/secrets.md", "{alone}");
    let second = ask(follow_up, Some(&id));
    assert_eq!(first_file(&second), "security/secrets.md", "{second}");
    let decision = second["decision"].as_str().unwrap();
    assert!(decision.starts_with("Read as a follow-up"), "{decision}");
    assert!(
        second["standalone"].as_str().unwrap().contains("secret"),
        "{second}"
    );
    // A client that keeps the history itself gets the same reading.
    let stateless = svc
        .handle(
            Request::from_json(
                json!({"op": "ask", "question": follow_up, "mode": "extractive",
                                      "history": ["How do I rotate a secret?"]}),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(stateless["standalone"], second["standalone"]);
    // A new topic in the same conversation is searched as asked.
    let third = ask("How do I renew a TLS certificate manually?", Some(&id));
    assert_eq!(
        first_file(&third),
        "security/tls-certificates.md",
        "{third}"
    );
    assert_eq!(
        third["standalone"], "How do I renew a TLS certificate manually?",
        "{third}"
    );
    drop(svc);

    let svc = open();
    let call = |v: Value| svc.handle(Request::from_json(v).unwrap());
    let listed = call(json!({"op": "conversations"})).unwrap();
    assert_eq!(listed["conversations"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["conversations"][0]["turns"], 3, "{listed}");
    let kept = call(json!({"op": "conversation", "id": id})).unwrap();
    assert_eq!(kept["turns"][1]["question"], follow_up, "{kept}");
    assert_eq!(kept["turns"][1]["response"], second["response"]);
    let md = call(json!({"op": "export_conversation", "id": id})).unwrap()["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    let anchor = second["citations"][0]["anchor"].as_str().unwrap();
    assert!(
        md.contains(&format!("(security/secrets.md#{anchor})")),
        "{md}"
    );
    assert!(md.contains(&format!("## {follow_up}")), "{md}");
    call(json!({"op": "delete_conversation", "id": id})).unwrap();
    assert_eq!(
        call(json!({"op": "conversations"})).unwrap()["conversations"],
        json!([])
    );
    call(json!({"op": "restore_conversation", "id": id})).unwrap();
    let bad = call(json!({"op": "conversation", "id": "../../etc/passwd"}));
    assert!(format!("{:?}", bad.unwrap_err()).contains("not a conversation id"));
}

/// The follow-up rules on the sample KB: a continuation or a pointer back carries the
/// earlier turn's subject; a question naming its own subject, even with a pointer into
/// itself, is read as asked; the person's own words stay apart for the evidence checks.
#[test]
fn follow_ups_carry_the_earlier_subject_and_new_subjects_stand_alone() {
    use sextant::protocols::followup::{carried_words, is_tentative, own_words, resolve};
    let kb = shared_kb().lock().unwrap();
    let earlier = vec!["How do I rotate the database password?".to_string()];
    for q in [
        "and how often?",
        "does that need a restart?",
        "what about in staging?",
        "only in production?",
        // A pointer after a word that picks from a set points back wherever it stands.
        "after the weekly rotation, can I revoke each of them separately?",
        // "instead" with nothing named that it is instead of.
        "can I use a vault token instead?",
        // A fragment in the KB's words leans on the turn before.
        "owned by the platform team?",
    ] {
        let r = resolve(&kb, &earlier, q).unwrap();
        assert!(r.is_follow_up(), "{q}: {r:?}");
        assert!(r.carried.contains(&"password".to_string()), "{q}: {r:?}");
        assert_eq!(own_words(&r.query), q);
    }
    for q in [
        "How do I renew a TLS certificate manually?",
        "Which CrashLoopBackOff exit codes mean that the pod ran out of memory?",
        // Every word of it is common in this KB: a whole question all the same.
        "How do I roll back a deployment?",
        "Can I use a vault token instead of a password?",
    ] {
        let r = resolve(&kb, &earlier, q).unwrap();
        assert!(!r.is_follow_up(), "{q}: {r:?}");
        assert_eq!(r.query, q);
    }
    // A pointer after the question has said enough may point into it or back: the
    // earlier subject is carried tentatively, and the question's own words lead the
    // search, so a new topic still finds its own section first.
    let q = "How do I renew a TLS certificate manually and check that it worked?";
    let r = resolve(&kb, &earlier, q).unwrap();
    assert!(is_tentative(&r.query), "{r:?}");
    assert_eq!(own_words(&r.query), q);
    assert_eq!(carried_words(&r.query).unwrap(), r.carried.join(" "));
    let ev = sextant::protocols::evidence::Evidence::gather(&kb, &r.query, 8).unwrap();
    assert_eq!(ev.hits[0].file, "security/tls-certificates.md", "{r:?}");
    let first = resolve(&kb, &[], "and how often?").unwrap();
    assert!(!first.is_follow_up(), "nothing to follow: {first:?}");
    // A turn read as a question of its own carried nothing of the one before it; a
    // follow-up to it carries both, the nearer turn's words first.
    let second = "How do I renew a TLS certificate manually?";
    assert!(!resolve(&kb, &earlier, second).unwrap().is_follow_up());
    let chain = vec![earlier[0].clone(), second.to_string()];
    let r = resolve(&kb, &chain, "and does that need a restart?").unwrap();
    let at = |w: &str| r.carried.iter().position(|c| c == w);
    assert!(
        at("certificate").is_some() && at("password").is_some(),
        "{r:?}"
    );
    assert!(at("certificate") < at("password"), "{r:?}");
    // A nearer turn that was itself a follow-up already carries the one before it.
    let followed = resolve(&kb, &earlier, "does that need a restart?").unwrap();
    let chain = vec![earlier[0].clone(), followed.query.clone()];
    let r = resolve(&kb, &chain, "and how often?").unwrap();
    assert!(r.carried.contains(&"password".to_string()), "{r:?}");
}

/// Words most documents' titles share ("git-add(1) Manual Page", "git-stash(1) Manual
/// Page") name no page: a follow-up carries the earlier page's own title words only.
#[test]
fn a_follow_up_carries_no_title_words_every_page_shares() {
    use sextant::protocols::followup::resolve;
    let docs = tempfile::tempdir().unwrap();
    for (name, options) in [
        (
            "git-stash",
            "--keep-index keeps the changes already added to the index.",
        ),
        (
            "git-rebase",
            "--abort restores the original branch and aborts the rebase.",
        ),
        ("git-bisect", "bisect replay replays a saved bisect log."),
    ] {
        let text = format!(
            "# {name}(1) Manual Page\n\n## NAME\n\n{name} - a command\n\n## OPTIONS\n\n{options}\n"
        );
        std::fs::write(docs.path().join(format!("{name}.md")), text).unwrap();
    }
    let kbdir = tempfile::tempdir().unwrap();
    let (kb, _) = ingest_into(kbdir.path(), &[docs.path().to_path_buf()]);
    assert_eq!(kb.store().top_heading_share("manual").unwrap(), 1.0);
    assert!((kb.store().top_heading_share("git-rebase").unwrap() - 1.0 / 3.0).abs() < 1e-9);
    let earlier = vec!["How do I rebase my branch onto main?".to_string()];
    let r = resolve(&kb, &earlier, "and if it goes wrong halfway through?").unwrap();
    assert!(r.carried.contains(&"git-rebase".to_string()), "{r:?}");
    for shared in ["manual", "page"] {
        assert!(!r.carried.contains(&shared.to_string()), "{r:?}");
    }
}

/// A KB's topic vectors are embedded once and read back from its folder after; other
/// texts, or a damaged file, are embedded again.
#[test]
fn topic_vectors_are_kept_in_the_kb_folder() {
    use sextant::kb::domain::{topic_vectors, TOPIC_VECTORS};
    let kb = shared_kb().lock().unwrap();
    let path = kb.store().dir().join(TOPIC_VECTORS);
    let texts = vec!["Rolling back a deployment".to_string(), "TLS".to_string()];
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let fresh = kb.embedder.embed(&refs).unwrap();
    assert_eq!(topic_vectors(&kb, &texts).unwrap(), fresh);
    // What the file holds is what comes back: its first value changed on disk.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[40..44].copy_from_slice(&0.5f32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(topic_vectors(&kb, &texts).unwrap()[0][0], 0.5);
    // Other texts are not the cached ones.
    let other = vec!["Rolling back a deployment".to_string()];
    let alone = topic_vectors(&kb, &other).unwrap();
    assert_ne!(alone[0][0], 0.5);
    assert!(cosine(&alone[0], &fresh[0]) > 0.9999);
    // A truncated file is embedded again, and rewritten whole.
    std::fs::write(&path, &bytes[..100]).unwrap();
    assert_eq!(topic_vectors(&kb, &texts).unwrap(), fresh);
    assert_eq!(std::fs::read(&path).unwrap().len(), 40 + 2 * 384 * 4);
}

/// A short query is embedded on one thread (`embed::ONE_THREAD_TOKENS`), a long batch on
/// all of them: the query's vector is the same either way.
#[test]
fn a_query_embedded_alone_matches_its_vector_in_a_large_batch() {
    let e = embedder();
    let query = "how do I roll back a deployment";
    let long = "Rolling back a deployment restores the previous revision of its pod \
                template; the controller then replaces the running pods step by step, \
                and the history keeps the revisions that a later rollout can return to.";
    let alone = e.embed(&[query]).unwrap().remove(0);
    let batch = e.embed(&[long, query, long]).unwrap();
    let c = cosine(&alone, &batch[1]);
    assert!(
        c > 0.99999,
        "cosine {c} between the query alone and in a batch"
    );
    assert!(
        cosine(&alone, &batch[0]) < 0.99,
        "the batch's texts are not the query"
    );
}

/// A site's footer, on every page under classes no rule names, is stored once; a second
/// ingest of the unchanged folder reads no page again (the blocks are cached) and a page
/// that changes is counted with the rest.
#[test]
fn a_footer_repeated_on_every_page_is_kept_on_one_page() {
    use sextant::kb::ingest::PAGE_BLOCKS;
    let site = footer_site();
    let dir = tempfile::tempdir().unwrap();
    let (kb, report) = ingest_into(dir.path(), &[site.path().to_path_buf()]);
    assert_eq!(report.added.len(), 12);
    assert_eq!(report.repeated_blocks, 22, "two blocks on 11 pages");
    let holders = |kb: &KnowledgeBase, text: &str| -> Vec<String> {
        chunk_set(kb)
            .into_iter()
            .filter(|(_, _, t)| t.contains(text))
            .map(|(file, _, _)| file)
            .collect()
    };
    assert_eq!(holders(&kb, "Example Licence"), ["page-00.html"]);
    assert_eq!(holders(&kb, "Last updated"), ["page-00.html"]);
    assert_eq!(holders(&kb, "step by step").len(), 12);
    let cache = std::fs::read(dir.path().join(PAGE_BLOCKS)).unwrap();
    drop(kb);

    // Nothing changed: nothing read again, and the cache is left as it was.
    let (kb, report) = ingest_into(dir.path(), &[site.path().to_path_buf()]);
    assert_eq!((report.unchanged, report.repeated_blocks), (12, 0));
    assert_eq!(std::fs::read(dir.path().join(PAGE_BLOCKS)).unwrap(), cache);
    drop(kb);

    // One page changed: it is read again and still loses the footer.
    let changed = site.path().join("page-05.html");
    let text = std::fs::read_to_string(&changed).unwrap();
    std::fs::write(&changed, text.replace("step by step", "in five steps")).unwrap();
    let (kb, report) = ingest_into(dir.path(), &[site.path().to_path_buf()]);
    assert_eq!(
        (report.changed.len(), report.repeated_blocks),
        (1, 2),
        "{report:?}"
    );
    assert_eq!(holders(&kb, "Example Licence"), ["page-00.html"]);
    assert_ne!(std::fs::read(dir.path().join(PAGE_BLOCKS)).unwrap(), cache);

    // Re-indexing one page counts it with its folder as the last ingest found it.
    let mut kb = kb;
    let report =
        sextant::kb::documents::reindex(&mut kb, "page-07.html", &IngestOptions::default())
            .unwrap();
    assert_eq!(
        (report.changed.len(), report.repeated_blocks),
        (1, 2),
        "{report:?}"
    );
    assert_eq!(holders(&kb, "Last updated"), ["page-00.html"]);
}

/// The shells' ingest (`Service::ingest`) reports the pages read for the repeated blocks
/// before the first file, up to all of them.
#[test]
fn an_ingest_reports_the_pages_read_for_repeated_blocks_before_the_first_file() {
    use sextant::service::{OpenOptions, Service};
    let site = footer_site();
    let tmp = tempfile::tempdir().unwrap();
    let svc = Service::open(
        &ModelStore::open(None),
        &OpenOptions {
            kb: Some(tmp.path().join("kb").display().to_string()),
            lazy_llm: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let mut seen: Vec<(Option<[usize; 2]>, String)> = Vec::new();
    let report = svc
        .ingest(&[site.path().to_path_buf()], false, &mut |p| {
            seen.push((p.pages_read, p.file.to_string()))
        })
        .unwrap();
    assert_eq!(report.repeated_blocks, 22);
    let first_file = seen.iter().position(|(_, f)| !f.is_empty()).unwrap();
    let read: Vec<[usize; 2]> = seen.iter().filter_map(|(r, _)| *r).collect();
    assert_eq!(read.last(), Some(&[12, 12]), "{seen:?}");
    assert!(
        seen[..first_file].iter().any(|(r, _)| *r == Some([12, 12])),
        "{seen:?}"
    );
}

/// Twelve pages of one site, each with the same footer (a licence line and a date).
fn footer_site() -> tempfile::TempDir {
    let site = tempfile::tempdir().unwrap();
    let topics = [
        "rolling back a release",
        "rotating TLS certificates",
        "scaling the worker pool",
        "restoring a database backup",
        "draining a node for maintenance",
        "tuning garbage collection",
        "reading the audit log",
        "pinning a dependency version",
        "throttling the ingest queue",
        "renewing an API token",
        "moving a volume between zones",
        "silencing a noisy alert",
    ];
    for (i, topic) in topics.iter().enumerate() {
        let page = format!(
            "<html><head><title>{topic}</title></head><body><h1>{topic}</h1>\
             <p>This page is about {topic}, step by step, with the commands it needs.</p>\
             <div id=\"ft\"><p>Copyright 2026 Example Corp. Licensed under the Example \
             Licence 2.0.</p><p>Last updated 2026-11-{:02} 10:00:00 UTC</p></div></body></html>",
            i + 1
        );
        std::fs::write(site.path().join(format!("page-{i:02}.html")), page).unwrap();
    }
    site
}

/// A question may name the KB's own subject (a name in 5 % of its chunks or more) though
/// the sections it retrieves never repeat it; a name the KB mentions once must be in them.
#[test]
fn the_kb_s_own_subject_need_not_be_in_the_retrieved_sections() {
    use sextant::protocols::evidence::Evidence;
    let docs = tempfile::tempdir().unwrap();
    let tasks = [
        "choosing a colour theme",
        "printing invoices",
        "adding a user to a team",
        "searching the catalogue",
        "exporting contacts to a spreadsheet",
        "setting up single sign-on",
        "changing the language of the menus",
        "setting a profile picture",
    ];
    for (i, task) in tasks.iter().enumerate() {
        let mention = if i == 0 {
            " Zenith users see it too."
        } else {
            ""
        };
        std::fs::write(
            docs.path().join(format!("guide-{i}.md")),
            format!("# Acme: {task}\n\nThis guide covers {task} in Acme, one step at a time.{mention}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        docs.path().join("rollback.md"),
        "# Rolling back a release\n\nRun `release rollback --to PREVIOUS` and wait until every \
         node reports the previous build as live.\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kb, _) = ingest_into(dir.path(), &[docs.path().to_path_buf()]);
    let unretrieved = |q: &str| {
        let ev = Evidence::gather(&kb, q, 1).unwrap();
        assert_eq!(ev.hits[0].file, "rollback.md", "{q}");
        ev.unretrieved_terms
    };
    assert!(unretrieved("How do I roll back an Acme release to the previous build?").is_empty());
    assert_eq!(
        unretrieved("How do I roll back a Zenith release to the previous build?"),
        ["Zenith"]
    );
}
