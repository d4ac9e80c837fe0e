//! The keyword side of the store: a tantivy index of every chunk's words and heading path,
//! ranked by BM25. Tantivy's block-max WAND makes a top-k query cost what its best hits
//! cost; FTS5, which ranks every matching row, took 415 ms (p99) at a million chunks.
//! FTS5 stays for the "does this word occur" lookups (`term_chunks`, `term_known`), which
//! stop at a few rows and need no ranking.
//!
//! SQLite is the source of truth and the index is derived from it. Triggers on `chunks`
//! write every added or deleted chunk's key into `keyword_pending`, in the same
//! transaction as the chunk; a writer applies those rows to the index in order and
//! commits it with the last row's number as the commit's payload, then clears the rows.
//! On open, rows up to the committed number are known to be in the index (a crash
//! between the commit and the clearing), the rest are replayed by the next open that
//! may write. A deleted or unreadable index folder, or a KB from before the index existed
//! (format 1), starts an empty index with every chunk queued.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use rusqlite::{params, OptionalExtension};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::Store;

/// The keyword index's folder inside the KB.
pub const KEYWORDS_DIR: &str = "keywords";
const TOKENIZER: &str = "sextant";
/// A chunk's heading path is indexed this many times before its text: heading words count
/// twice a body word's within one BM25 (as FTS5's `bm25(chunks_fts, 1.0, 2.0)` weighed its
/// columns), since a heading names a chunk's topic. Two fields, each with its own BM25,
/// retrieved worse on both tuning halves (git-doc hit@8 0.82 against FTS5's 0.90).
const HEADING_REPEATS: usize = 2;
/// Chunks applied per SQLite read when replaying pending rows.
const APPLY_BATCH: usize = 2000;
/// The writer's indexing memory (one thread: the embedder has the cores).
const WRITER_MEMORY: usize = 64 << 20;

/// A segment is merged (its deleted documents purged) once this share of it is deleted.
/// BM25 counts a deleted document's words until then, and tantivy's default waits for a
/// segment to be wholly deleted: after every file of the postgresql KB was read again, a
/// quarter of the index was old copies, and its report half ranked differently from the
/// KB built fresh from the same chunks (extractive hit@8 0.92 against 0.90).
const DELETED_SHARE_BEFORE_MERGE: f32 = 0.1;

pub(super) struct Keywords {
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    analyzer: TextAnalyzer,
    key: Field,
    words: Field,
    /// The last `keyword_pending` row applied to the writer (or committed).
    applied_seq: i64,
    /// The last row the committed index holds (its commit payload).
    committed_seq: i64,
}

fn analyzer() -> TextAnalyzer {
    // Words as FTS5's `unicode61` splits them (letters and digits), lowercased, accents
    // folded, stemmed (Snowball English; FTS5 used Porter).
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_u64_field("key", NumericOptions::default().set_indexed().set_fast());
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field("words", words);
    b.build()
}

impl Keywords {
    /// Opens the index in `kb_dir/keywords`, creating it when absent (or anew, with
    /// `empty`). An index that cannot be opened is set aside and a new one made. Returns
    /// whether the index is new, to be filled from SQLite.
    pub(super) fn open(kb_dir: &Path, empty: bool) -> Result<(Self, bool)> {
        let dir = kb_dir.join(KEYWORDS_DIR);
        if empty && dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove {}", dir.display()))?;
        }
        let existed = dir.join("meta.json").is_file();
        let mut fresh = !existed;
        let index = match Self::open_index(&dir) {
            Ok(index) => index,
            Err(e) if existed => {
                let aside = kb_dir.join(format!("{KEYWORDS_DIR}.unreadable"));
                tracing::warn!(
                    "{} is unreadable ({e:#}); rebuilding it from {} (the old one is kept as {})",
                    dir.display(),
                    super::DB_FILE,
                    aside.display()
                );
                let _ = std::fs::remove_dir_all(&aside);
                std::fs::rename(&dir, &aside)
                    .with_context(|| format!("cannot move {} aside", dir.display()))?;
                fresh = true;
                Self::open_index(&dir)?
            }
            // Another process made it between the look and the creation.
            Err(_) if dir.join("meta.json").is_file() => Self::open_index(&dir)?,
            Err(e) => return Err(e),
        };
        index.tokenizers().register(TOKENIZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()
            .with_context(|| format!("cannot read {}", dir.display()))?;
        let s = index.schema();
        let field = |name: &str| s.get_field(name).map_err(|e| anyhow!("{e}"));
        let committed_seq = index
            .load_metas()?
            .payload
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        Ok((
            Keywords {
                key: field("key")?,
                words: field("words")?,
                index,
                reader,
                writer: None,
                analyzer: analyzer(),
                applied_seq: committed_seq,
                committed_seq,
            },
            fresh,
        ))
    }

    fn open_index(dir: &Path) -> Result<Index> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mmap = tantivy::directory::MmapDirectory::open(dir)
            .with_context(|| format!("cannot open {}", dir.display()))?;
        Index::open_or_create(mmap, schema())
            .with_context(|| format!("{} is not a Sextant keyword index", dir.display()))
    }

    fn writer(&mut self) -> Result<&mut IndexWriter> {
        if self.writer.is_none() {
            let w = self
                .index
                .writer_with_num_threads(1, WRITER_MEMORY)
                .context("cannot write the keyword index")?;
            let mut policy = tantivy::merge_policy::LogMergePolicy::default();
            policy.set_del_docs_ratio_before_merge(DELETED_SHARE_BEFORE_MERGE);
            w.set_merge_policy(Box::new(policy));
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().unwrap())
    }

    /// The query's terms as the index has them: each word analysed, repeats dropped.
    fn terms(&self, words: &[String]) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut terms: Vec<String> = Vec::new();
        for w in words {
            let mut stream = analyzer.token_stream(w);
            while stream.advance() {
                let t = &stream.token().text;
                if !terms.contains(t) {
                    terms.push(t.clone());
                }
            }
        }
        terms
    }

    /// The `k` best chunks for `words` (any of them), best first: (key, BM25 score).
    pub(super) fn search(&self, words: &[String], k: usize) -> Result<Vec<(u64, f64)>> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in self.terms(words) {
            let q = TermQuery::new(
                Term::from_field_text(self.words, &t),
                IndexRecordOption::WithFreqs,
            );
            clauses.push((Occur::Should, Box::new(q)));
        }
        if clauses.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let top = searcher.search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(k).order_by_score(),
        )?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let keys = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("key")?;
            if let Some(key) = keys.first(addr.doc_id) {
                out.push((key, score as f64));
            }
        }
        Ok(out)
    }

    /// Documents in the committed index.
    pub(super) fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

impl Store {
    /// Applies pending chunk changes to the keyword index's writer (not yet committed).
    pub(super) fn apply_keywords(&mut self) -> Result<()> {
        loop {
            let rows: Vec<(i64, i64, bool)> = {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT seq, key, added FROM keyword_pending WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )?;
                let rows = stmt.query_map(
                    params![self.keywords.applied_seq, APPLY_BATCH as i64],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let Some(&(last, _, _)) = rows.last() else {
                return Ok(());
            };
            let mut docs = Vec::new();
            {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT c.text, s.path FROM chunks c JOIN sections s ON s.id = c.section_id
                     WHERE c.id = ?1",
                )?;
                for &(_, key, added) in &rows {
                    // An added chunk deleted since is added and deleted: skip both.
                    let row = if added {
                        stmt.query_row(params![key], |r| {
                            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                        })
                        .optional()?
                    } else {
                        None
                    };
                    docs.push((key as u64, added, row));
                }
            }
            let kw = &mut self.keywords;
            let (key_field, words_field) = (kw.key, kw.words);
            let writer = kw.writer()?;
            for (key, added, row) in docs {
                // Keys are never reused (AUTOINCREMENT): an added chunk is new to the
                // index, so only a deletion needs a delete operation (tantivy keeps each
                // until a commit, so one per added chunk would grow with the ingest).
                if !added {
                    writer.delete_term(Term::from_field_u64(key_field, key));
                }
                let Some((text, path)) = row else { continue };
                let path: Vec<String> = serde_json::from_str(&path).unwrap_or_default();
                let headings = path.join(" > ");
                let mut words = String::new();
                for _ in 0..HEADING_REPEATS {
                    words.push_str(&headings);
                    words.push('\n');
                }
                // Indexed as read: link targets, fences and backticks are not words of it.
                words.push_str(&crate::kb::parse::visible_text(&text));
                let mut doc = TantivyDocument::default();
                doc.add_u64(key_field, key);
                doc.add_text(words_field, words);
                writer.add_document(doc)?;
            }
            kw.applied_seq = last;
        }
    }

    /// Commits what was applied and clears those pending rows; with `close`, also lets
    /// merges finish and gives up tantivy's writer (so another process may write next).
    pub(super) fn commit_keywords(&mut self, close: bool) -> Result<()> {
        self.apply_keywords()?;
        let kw = &mut self.keywords;
        if let Some(w) = kw.writer.as_mut() {
            if kw.applied_seq > kw.committed_seq {
                let mut commit = w
                    .prepare_commit()
                    .context("cannot commit the keyword index")?;
                commit.set_payload(&kw.applied_seq.to_string());
                commit.commit().context("cannot commit the keyword index")?;
                kw.committed_seq = kw.applied_seq;
                kw.reader.reload()?;
            }
        }
        if kw.committed_seq > 0 {
            self.conn.execute(
                "DELETE FROM keyword_pending WHERE seq <= ?1",
                params![kw.committed_seq],
            )?;
        }
        if close {
            if let Some(w) = kw.writer.take() {
                w.wait_merging_threads()
                    .context("merging the keyword index")?;
            }
        }
        Ok(())
    }

    /// Chunk changes not yet in the committed keyword index (a crash, a migration).
    pub(in crate::kb) fn pending_keywords(&self) -> Result<usize> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM keyword_pending WHERE seq > ?1",
            params![self.keywords.committed_seq],
            |r| r.get::<_, i64>(0),
        )? as usize)
    }

    /// BM25 over chunk text and heading path; best first: (key, score), higher is better.
    pub fn bm25(&self, query: &str, k: usize) -> Result<Vec<(u64, f64)>> {
        self.keywords.search(&super::queries::query_words(query), k)
    }

    /// Chunks in the committed keyword index.
    pub fn keyword_count(&self) -> u64 {
        self.keywords.len()
    }
}
