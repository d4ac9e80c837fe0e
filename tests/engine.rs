//! A second engine behind the store's traits (`kb::index`), as a team's distributed one
//! would be: chunks, vectors and documents in memory, exact cosine search and its own BM25
//! (k1 1.2, b 0.75) over lower-cased words. Nothing of the store's own indexes is used.
//! Search reads it through `ChunkIndex`; an ingest fills it through `DocumentLedger` and
//! `ChunkWrites`. Real MiniLM, the sample KB.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use sextant::embed::cosine;
use sextant::kb::index::{ChunkIndex, ChunkWrites, DocumentLedger};
use sextant::kb::ingest::{ingest, ingest_into, IngestOptions, IngestReport, IngestRun};
use sextant::kb::lock::WriterLock;
use sextant::kb::search::{search_index, Hit, SearchMode};
use sextant::kb::store::{ChunkRecord, DocRecord, NewDocument};
use sextant::kb::KnowledgeBase;

mod common;
use common::{embedder, sample_kb};

fn questions() -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string("tests/fixtures/kb_questions.json").unwrap())
        .unwrap()
}

#[derive(Default)]
struct OtherEngine {
    chunks: HashMap<u64, ChunkRecord>,
    vectors: HashMap<u64, Vec<f32>>,
    /// Per word: (key, count in the chunk).
    postings: HashMap<String, Vec<(u64, usize)>>,
    lengths: HashMap<u64, usize>,
    /// By (root, path): the ledger row and its chunks' keys.
    documents: HashMap<(String, String), (DocRecord, Vec<u64>)>,
    folders: HashSet<String>,
    next_key: u64,
    checkpoints: usize,
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl OtherEngine {
    /// The store's chunks and vectors copied out, under the store's keys.
    fn copy(kb: &KnowledgeBase) -> OtherEngine {
        let mut engine = OtherEngine::default();
        for key in kb.store().chunk_keys().unwrap() {
            let c = kb.store().chunk(key).unwrap().unwrap();
            engine.add_chunk(c);
            engine.vectors.insert(key, kb.store().vector(key).unwrap());
        }
        engine
    }

    fn add_chunk(&mut self, c: ChunkRecord) {
        let ws = words(&format!("{} {}", c.heading, c.text));
        self.lengths.insert(c.key, ws.len());
        let mut counts: HashMap<String, usize> = HashMap::new();
        for w in ws {
            *counts.entry(w).or_default() += 1;
        }
        for (w, n) in counts {
            self.postings.entry(w).or_default().push((c.key, n));
        }
        self.chunks.insert(c.key, c);
    }

    fn remove_chunks(&mut self, keys: &[u64]) {
        let gone: HashSet<u64> = keys.iter().copied().collect();
        for key in keys {
            self.chunks.remove(key);
            self.vectors.remove(key);
            self.lengths.remove(key);
        }
        for list in self.postings.values_mut() {
            list.retain(|(k, _)| !gone.contains(k));
        }
        self.postings.retain(|_, list| !list.is_empty());
    }

    fn keys_of(&self, path: &str) -> Vec<u64> {
        let mut keys: Vec<u64> = self
            .chunks
            .values()
            .filter(|c| c.file == path)
            .map(|c| c.key)
            .collect();
        keys.sort();
        keys
    }
}

impl ChunkIndex for OtherEngine {
    fn dense(&self, query: &[f32], k: usize) -> anyhow::Result<Vec<(u64, f32)>> {
        let mut all: Vec<(u64, f32)> = self
            .vectors
            .iter()
            .map(|(key, v)| (*key, cosine(query, v)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        Ok(all)
    }
    fn keywords(&self, query: &str, k: usize) -> anyhow::Result<Vec<(u64, f64)>> {
        let n = self.lengths.len() as f64;
        let mean = self.lengths.values().sum::<usize>() as f64 / n.max(1.0);
        let mut scores: HashMap<u64, f64> = HashMap::new();
        for w in words(query) {
            let Some(list) = self.postings.get(&w) else {
                continue;
            };
            let idf = ((n - list.len() as f64 + 0.5) / (list.len() as f64 + 0.5) + 1.0).ln();
            for (key, tf) in list {
                let len = self.lengths[key] as f64;
                let tf = *tf as f64;
                *scores.entry(*key).or_default() +=
                    idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / mean));
            }
        }
        let mut all: Vec<(u64, f64)> = scores.into_iter().collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        Ok(all)
    }
    fn chunk(&self, key: u64) -> anyhow::Result<Option<ChunkRecord>> {
        Ok(self.chunks.get(&key).cloned())
    }
    fn vector(&self, key: u64) -> Option<Vec<f32>> {
        self.vectors.get(&key).cloned()
    }
}

impl DocumentLedger for OtherEngine {
    fn document(&self, root: &str, path: &str) -> anyhow::Result<Option<DocRecord>> {
        Ok(self
            .documents
            .get(&(root.to_string(), path.to_string()))
            .map(|(d, _)| d.clone()))
    }
    fn documents_under(&self, root: &str) -> anyhow::Result<Vec<DocRecord>> {
        Ok(self
            .documents
            .values()
            .filter(|(d, _)| d.root == root)
            .map(|(d, _)| d.clone())
            .collect())
    }
    fn is_excluded(&self, _root: &str, _path: &str) -> anyhow::Result<bool> {
        Ok(false)
    }
    fn touch(&mut self, doc_id: i64, mtime_ns: i64) -> anyhow::Result<()> {
        for (d, _) in self.documents.values_mut() {
            if d.id == doc_id {
                d.mtime_ns = mtime_ns;
            }
        }
        Ok(())
    }
    fn record_folder(&mut self, root: &str) -> anyhow::Result<()> {
        self.folders.insert(root.to_string());
        Ok(())
    }
}

impl ChunkWrites for OtherEngine {
    fn replace_document(&mut self, doc: &NewDocument) -> anyhow::Result<Vec<u64>> {
        self.remove_document(doc.root, doc.path)?;
        self.next_key += 1;
        let record = DocRecord {
            id: self.next_key as i64,
            root: doc.root.to_string(),
            path: doc.path.to_string(),
            hash: doc.hash.to_string(),
            mtime_ns: doc.mtime_ns,
            size: doc.size,
        };
        let mut keys = Vec::new();
        for c in doc.chunks {
            self.next_key += 1;
            let section = &doc.sections[c.section];
            self.add_chunk(ChunkRecord {
                key: self.next_key,
                chunk_id: c.chunk_id.clone(),
                file: doc.path.to_string(),
                kind: doc.kind.as_str().to_string(),
                heading: section.heading.clone(),
                section_path: section.path.clone(),
                anchor: section.anchor.clone(),
                page: c.page,
                text: c.text.clone(),
            });
            keys.push(self.next_key);
        }
        self.documents.insert(
            (doc.root.to_string(), doc.path.to_string()),
            (record, keys.clone()),
        );
        Ok(keys)
    }
    fn add_vectors(&mut self, keys: &[u64], vectors: &[Vec<f32>]) -> anyhow::Result<()> {
        assert_eq!(keys.len(), vectors.len());
        for (k, v) in keys.iter().zip(vectors) {
            assert!(self.chunks.contains_key(k), "a vector for no chunk: {k}");
            self.vectors.insert(*k, v.clone());
        }
        Ok(())
    }
    fn remove_document(&mut self, root: &str, path: &str) -> anyhow::Result<()> {
        if let Some((_, keys)) = self.documents.remove(&(root.to_string(), path.to_string())) {
            self.remove_chunks(&keys);
        }
        Ok(())
    }
    fn checkpoint(&mut self, _close: bool) -> anyhow::Result<()> {
        self.checkpoints += 1;
        Ok(())
    }
}

fn ids(hits: Vec<Hit>) -> Vec<String> {
    hits.into_iter().map(|h| h.id).collect()
}

/// Search runs through `ChunkIndex`, so a KB copied into another engine answers as the
/// store does: the same dense hits, and hybrid hits that find the expected section as
/// often, within two questions (its BM25 is not tantivy's, so ranks may differ a little).
#[test]
fn search_through_another_engine_behind_the_index_trait_finds_the_same_sections() {
    let tmp = tempfile::tempdir().unwrap();
    let mut kb = KnowledgeBase::open(tmp.path(), embedder()).unwrap();
    ingest(
        &mut kb,
        &[sample_kb()],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let copied = OtherEngine::copy(&kb);
    assert_eq!(copied.chunks.len(), kb.store().vector_count());
    let questions = questions();
    let (mut store_hits, mut copied_hits) = (0, 0);
    for q in &questions {
        let question = q["question"].as_str().unwrap();
        let qv = kb.embedder.embed(&[question]).unwrap().pop().unwrap();
        assert_eq!(
            ids(search_index(kb.store(), question, &qv, 5, SearchMode::Dense).unwrap()),
            ids(search_index(&copied, question, &qv, 5, SearchMode::Dense).unwrap()),
            "dense hits differ for {question:?}"
        );
        let found = |index: &dyn ChunkIndex| {
            search_index(index, question, &qv, 5, SearchMode::Hybrid)
                .unwrap()
                .iter()
                .any(|h| {
                    h.file == q["file"].as_str().unwrap()
                        && h.section == q["section"].as_str().unwrap()
                })
        };
        store_hits += found(kb.store()) as usize;
        copied_hits += found(&copied) as usize;
    }
    println!(
        "hybrid hit@5 of {}: store {store_hits}, copied engine {copied_hits}",
        questions.len()
    );
    // Within two of 65: its BM25 reads the text alone, tantivy the heading path too.
    assert!(
        store_hits.abs_diff(copied_hits) <= 2,
        "store {store_hits}, copied {copied_hits}"
    );
    assert!(copied_hits * 10 >= questions.len() * 8);
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_folder(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

/// An ingest writes through `DocumentLedger` and `ChunkWrites`, so the same run fills
/// another engine with the chunks and vectors it gives the store; a second run finds every
/// file unchanged through the engine's ledger, and a third writes an edited file under new
/// keys and removes a deleted one.
#[test]
fn an_ingest_through_the_write_traits_fills_another_engine_as_it_fills_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_folder(&sample_kb(), &docs);
    let opts = IngestOptions::default();
    let mut kb = KnowledgeBase::open(&tmp.path().join("kb"), embedder()).unwrap();
    let into_store = ingest(&mut kb, std::slice::from_ref(&docs), &opts, &mut |_| {}).unwrap();

    let mut engine = OtherEngine::default();
    let engine_lock = tmp.path().join("engine");
    std::fs::create_dir(&engine_lock).unwrap();
    let run = |engine: &mut OtherEngine| -> IngestReport {
        let lock = WriterLock::try_acquire(&engine_lock).unwrap();
        let run = IngestRun::with_lock(lock, std::slice::from_ref(&docs), &opts).unwrap();
        ingest_into(engine, &embedder(), run, &opts, &mut |_| {}).unwrap()
    };
    let first = run(&mut engine);
    assert!(first.skipped.is_empty(), "{:?}", first.skipped);
    assert_eq!(first.added.len(), into_store.added.len());
    assert_eq!(first.chunks_embedded, into_store.chunks_embedded);
    assert!(engine.checkpoints >= 1);
    assert_eq!(engine.folders.len(), 1);

    // The same chunks, each with the store's vector (f16 there, so within rounding).
    let listing = kb.store().chunk_listing().unwrap();
    assert_eq!(listing.len(), engine.chunks.len());
    let by_place: HashMap<(&str, &str), &ChunkRecord> = engine
        .chunks
        .values()
        .map(|c| ((c.file.as_str(), c.chunk_id.as_str()), c))
        .collect();
    let mut worst = 1.0f32;
    for key in kb.store().chunk_keys().unwrap() {
        let stored = kb.store().chunk(key).unwrap().unwrap();
        let theirs = by_place
            .get(&(stored.file.as_str(), stored.chunk_id.as_str()))
            .unwrap_or_else(|| panic!("{} {} not in the engine", stored.file, stored.chunk_id));
        assert_eq!(theirs.text, stored.text);
        assert_eq!(theirs.section_path, stored.section_path);
        assert_eq!(theirs.page, stored.page);
        let c = cosine(
            &engine.vectors[&theirs.key],
            &kb.store().vector(key).unwrap(),
        );
        worst = worst.min(c);
    }
    assert!(worst > 0.999, "worst cosine {worst}");

    // Searched through the read trait, the engine filled by the write traits answers.
    let question = "How do I roll back a deployment?";
    let qv = embedder().embed(&[question]).unwrap().pop().unwrap();
    let hits = search_index(&engine, question, &qv, 5, SearchMode::Hybrid).unwrap();
    assert_eq!(hits[0].file, "operations/rollbacks.md", "{hits:#?}");

    let second = run(&mut engine);
    assert_eq!(second.unchanged, first.added.len(), "{second:?}");
    assert_eq!(second.chunks_embedded, 0);
    assert_eq!(engine.chunks.len(), listing.len());

    let edited = "operations/scaling.md";
    let deleted = "monitoring/logging.md";
    let before = engine.keys_of(edited);
    let most = *engine.chunks.keys().max().unwrap();
    let mut text = std::fs::read_to_string(docs.join(edited)).unwrap();
    text.push_str("\n\n## Scaling to zero\n\nSet the replica count to 0 to pause a service.\n");
    std::fs::write(docs.join(edited), text).unwrap();
    std::fs::remove_file(docs.join(deleted)).unwrap();
    let third = run(&mut engine);
    assert_eq!(third.changed, vec![edited.to_string()]);
    assert_eq!(third.removed, vec![deleted.to_string()]);
    assert!(engine.keys_of(deleted).is_empty());
    let after = engine.keys_of(edited);
    assert!(after.len() > before.len(), "{before:?} {after:?}");
    assert!(after.iter().all(|k| *k > most), "keys reused: {after:?}");
    assert!(engine
        .chunks
        .values()
        .any(|c| c.file == edited && c.text.contains("replica count to 0")));
}
