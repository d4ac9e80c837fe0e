//! The knowledge base on disk: one directory with `kb.sqlite` (documents, sections, chunks
//! and an FTS5 index for word lookups), `vectors.usearch` (one vector per chunk, keyed by
//! the chunk's SQLite rowid) and `keywords/` (tantivy: BM25 ranking, keyed the same).
//!
//! Crash safety: each document is written in one SQLite transaction; vectors are added in
//! memory and the index file is replaced atomically (temp file + rename) at checkpoints,
//! where the keyword index commits too. After a crash they may disagree; `Store::check`
//! finds chunks without vectors (to be re-embedded) and vectors without chunks (removed),
//! and the keyword index replays what it had not committed (keywords.rs). Chunk rowids
//! use AUTOINCREMENT so a stale vector can never be mistaken for a new chunk's.
//!
//! The KB's format is a number in `meta` (`FORMAT`): a KB of an older format is brought
//! up to date on open, one of a newer one is refused with the fix.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use usearch::Index;

pub const DB_FILE: &str = "kb.sqlite";
pub const INDEX_FILE: &str = "vectors.usearch";
pub use keywords::KEYWORDS_DIR;
pub use vectors::{search_expansion_for, ExactSearch, SEARCH_EXPANSION};

/// The on-disk format this build writes. 1: SQLite + FTS5 + usearch; 2: a tantivy keyword
/// index added (built from the chunks when a format-1 KB is opened).
pub const FORMAT: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    UNIQUE (root, path)
);
CREATE TABLE IF NOT EXISTS sections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    level INTEGER NOT NULL,
    heading TEXT NOT NULL,
    path TEXT NOT NULL,
    anchor TEXT NOT NULL,
    page INTEGER,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sections_doc ON sections(doc_id);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    section_id INTEGER NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
    chunk_id TEXT NOT NULL,
    page INTEGER,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (doc_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS chunks_section ON chunks(section_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, headings, tokenize = 'porter unicode61');
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.id;
END;
-- Chunks added (added = 1) or deleted since the keyword index last committed (keywords.rs).
CREATE TABLE IF NOT EXISTS keyword_pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key INTEGER NOT NULL,
    added INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS chunks_keywords_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO keyword_pending (key, added) VALUES (new.id, 1);
END;
CREATE TRIGGER IF NOT EXISTS chunks_keywords_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO keyword_pending (key, added) VALUES (old.id, 0);
END;
-- Documents a user removed: later ingests of their folder leave them out until restored.
CREATE TABLE IF NOT EXISTS excluded (
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (root, path)
);
";

/// What `check` found (and repaired, for orphan vectors).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Consistency {
    pub chunks: usize,
    pub vectors: usize,
    /// Chunks whose vector is missing (to be embedded again).
    pub missing_vectors: Vec<u64>,
    /// Vectors removed because their chunk no longer exists.
    pub orphan_vectors_removed: usize,
    /// Chunk changes the keyword index had not committed (replayed on repair).
    pub keywords_pending: usize,
}

pub struct Store {
    dir: PathBuf,
    conn: Connection,
    index: Index,
    keywords: keywords::Keywords,
    dim: usize,
    /// Vectors changed since the index file was last written.
    dirty: bool,
}

/// The text that is embedded for a chunk: its heading path, then its text as read (the
/// Markdown rendered: no link targets, fences or backticks). Headings carry
/// much of a chunk's topic ("Rollbacks > Quick Rollback") that the body leaves implicit.
pub fn embed_text(section_path: &[String], text: &str) -> String {
    format!(
        "{}\n{}",
        section_path.join(" > "),
        crate::kb::parse::visible_text(text)
    )
}

mod keywords;
mod queries;
mod records;
mod vectors;

use vectors::index_options;

pub(crate) use queries::contains_word;
pub use queries::{peek, query_words, HeadingRow, Peek};
pub use records::{
    ChunkListing, ChunkRecord, Counts, DocRecord, DocSummary, NewChunk, NewDocument, SectionRow,
};

impl Store {
    /// Opens (creating if needed) the store in `dir` for vectors of `dim` dimensions.
    pub fn open(dir: &Path, dim: usize, embedder_name: &str) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create knowledge base folder {}", dir.display()))?;
        let db = dir.join(DB_FILE);
        let conn =
            Connection::open(&db).with_context(|| format!("cannot open {}", db.display()))?;
        // Another process's write transaction (an ingest, a settings row) holds the
        // database for moments: wait for it rather than fail as "database is locked".
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
        )?;
        conn.execute_batch(SCHEMA)
            .with_context(|| format!("{} is not a Sextant knowledge base", db.display()))?;
        // A KB's vectors only make sense with the model that made them.
        let stored: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'embedder'", [], |r| {
                r.get(0)
            })
            .optional()?;
        match stored {
            Some(name) if name != embedder_name => bail!(
                "{} was built with the embedding model '{name}', not '{embedder_name}'; \
                 use that model (--embedder {name}) or ingest into a new knowledge base",
                dir.display()
            ),
            Some(_) => {}
            None => {
                // A new KB is of the current format from its first row. OR IGNORE: another
                // process creating the same KB at this moment wrote the same rows.
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('embedder', ?1), ('dim', ?2), \
                     ('format', ?3)",
                    params![embedder_name, dim.to_string(), FORMAT.to_string()],
                )?;
            }
        }
        let keywords = open_keywords(dir, &conn)?;
        let index = Index::new(&index_options(dim)).map_err(|e| anyhow!("usearch: {e}"))?;
        let path = dir.join(INDEX_FILE);
        if path.exists() {
            index
                .load(path.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?)
                .map_err(|e| {
                    anyhow!(
                        "{} is unreadable ({e}); delete it and run `sextant ingest` again to \
                         rebuild the vectors",
                        path.display()
                    )
                })?;
            if index.dimensions() != dim {
                bail!(
                    "{} holds {}-dimensional vectors, the embedder makes {dim}",
                    path.display(),
                    index.dimensions()
                );
            }
        }
        // Not kept in the file.
        index.change_expansion_search(search_expansion_for(index.size()));
        // Per-thread search/add contexts for every core (adds run in parallel).
        index
            .reserve_capacity_and_threads(index.size().max(1024), rayon::current_num_threads())
            .map_err(|e| anyhow!("usearch reserve: {e}"))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            conn,
            index,
            keywords,
            dim,
            dirty: false,
        })
    }

    /// Writes what changed: the vector index saved, the keyword index committed. With
    /// `close` (the end of a writer's work), the keyword index's merges are waited for.
    pub(in crate::kb) fn checkpoint(&mut self, close: bool) -> Result<()> {
        self.save_index()?;
        self.commit_keywords(close)
    }

    pub(in crate::kb) fn touch(&self, doc_id: i64, mtime_ns: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE documents SET mtime_ns = ?2 WHERE id = ?1",
            params![doc_id, mtime_ns],
        )?;
        Ok(())
    }

    /// Replaces a document (its sections, chunks and their FTS rows) in one transaction.
    /// Returns the new chunks' keys, in the order given. The caller adds their vectors.
    pub(in crate::kb) fn replace_document(&mut self, doc: &NewDocument) -> Result<Vec<u64>> {
        let NewDocument {
            root,
            path,
            kind,
            title,
            hash,
            mtime_ns,
            size,
            sections,
            chunks,
        } = *doc;
        let old_keys = self.keys_of_document(root, path)?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM documents WHERE root = ?1 AND path = ?2",
            params![root, path],
        )?;
        tx.execute(
            "INSERT INTO documents (root, path, kind, title, hash, mtime_ns, size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![root, path, kind.as_str(), title, hash, mtime_ns, size],
        )?;
        let doc_id = tx.last_insert_rowid();
        let mut section_ids = Vec::with_capacity(sections.len());
        {
            let mut ins = tx.prepare(
                "INSERT INTO sections (doc_id, ord, level, heading, path, anchor, page, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for (ord, s) in sections.iter().enumerate() {
                ins.execute(params![
                    doc_id,
                    ord as i64,
                    s.level as i64,
                    s.heading,
                    serde_json::to_string(&s.path)?,
                    s.anchor,
                    s.page.map(|p| p as i64),
                    s.text,
                ])?;
                section_ids.push(tx.last_insert_rowid());
            }
        }
        let mut keys = Vec::with_capacity(chunks.len());
        {
            let mut ins = tx.prepare(
                "INSERT INTO chunks (doc_id, section_id, chunk_id, page, start, end, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            let mut fts =
                tx.prepare("INSERT INTO chunks_fts (rowid, text, headings) VALUES (?1, ?2, ?3)")?;
            for c in chunks {
                ins.execute(params![
                    doc_id,
                    section_ids[c.section],
                    c.chunk_id,
                    c.page.map(|p| p as i64),
                    c.start as i64,
                    c.end as i64,
                    c.text,
                ])?;
                let key = tx.last_insert_rowid();
                // Indexed as read: link targets, fences and backticks are not words of it.
                let words = crate::kb::parse::visible_text(&c.text);
                fts.execute(params![key, words, sections[c.section].path.join(" > ")])?;
                keys.push(key as u64);
            }
        }
        tx.commit()?;
        for k in old_keys {
            self.remove_vector(k)?;
        }
        self.apply_keywords()?;
        Ok(keys)
    }

    /// Records that `root` was ingested as a folder (so it can be followed for changes;
    /// a single file's root is its parent folder, which must not be).
    pub(in crate::kb) fn record_folder(&mut self, root: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, '1')",
            params![format!("folder:{root}")],
        )?;
        Ok(())
    }

    /// Keeps a setting with the KB (`Store::setting` reads it back).
    pub(in crate::kb) fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![format!("setting.{key}"), value],
        )?;
        Ok(())
    }

    /// Removes a document and its vectors.
    pub(in crate::kb) fn remove_document(&mut self, root: &str, path: &str) -> Result<()> {
        let keys = self.keys_of_document(root, path)?;
        self.conn.execute(
            "DELETE FROM documents WHERE root = ?1 AND path = ?2",
            params![root, path],
        )?;
        for k in keys {
            self.remove_vector(k)?;
        }
        self.apply_keywords()
    }

    /// Removes a document and keeps later ingests of its folder from adding it back.
    pub(in crate::kb) fn exclude_document(&mut self, root: &str, path: &str) -> Result<()> {
        self.remove_document(root, path)?;
        self.conn.execute(
            "INSERT OR IGNORE INTO excluded (root, path) VALUES (?1, ?2)",
            params![root, path],
        )?;
        Ok(())
    }

    /// Lets ingests add an excluded document again; whether it was excluded.
    pub(in crate::kb) fn include_document(&mut self, root: &str, path: &str) -> Result<bool> {
        Ok(self.conn.execute(
            "DELETE FROM excluded WHERE root = ?1 AND path = ?2",
            params![root, path],
        )? > 0)
    }

    fn keys_of_document(&self, root: &str, path: &str) -> Result<Vec<u64>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.root = ?1 AND d.path = ?2",
        )?;
        let rows = stmt.query_map(params![root, path], |r| r.get::<_, i64>(0))?;
        Ok(rows
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .map(|k| k as u64)
            .collect())
    }
}

/// Checks the KB's format and opens its keyword index; a KB of format 1, or one whose
/// keyword index is missing or was unreadable, has every chunk queued for indexing (the
/// next open that may write builds it: `KnowledgeBase::open`).
fn open_keywords(dir: &Path, conn: &Connection) -> Result<keywords::Keywords> {
    let format: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()?
        .and_then(|v| v.parse().ok());
    if let Some(f) = format.filter(|f| *f > FORMAT) {
        bail!(
            "{} was written by a newer Sextant (knowledge base format {f}; this one reads up \
             to {FORMAT}); upgrade Sextant to open it",
            dir.display()
        );
    }
    // No format row: a KB from before formats (1) if it holds chunks; one that holds none
    // is new, and its keyword index may be another process's, just made (an ingest
    // starting while `sextant kb stats` opens the folder): never emptied.
    let migrate = match format {
        Some(f) => f < FORMAT,
        None => conn.query_row("SELECT EXISTS (SELECT 1 FROM chunks)", [], |r| r.get(0))?,
    };
    let (keywords, fresh) = keywords::Keywords::open(dir, migrate)?;
    if fresh {
        let chunks: i64 = conn.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get(0))?;
        if chunks > 0 {
            tracing::warn!(
                "{}: building its keyword index from {chunks} chunks (a knowledge base of an \
                 older format, or its keywords/ folder was missing); this runs once",
                dir.display()
            );
        }
        // Every chunk to add to the empty index; earlier rows are moot.
        conn.execute_batch(&format!(
            "BEGIN;
             DELETE FROM keyword_pending;
             INSERT INTO keyword_pending (key, added) SELECT id, 1 FROM chunks;
             INSERT INTO meta (key, value) VALUES ('format', '{FORMAT}')
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value;
             COMMIT;"
        ))?;
    }
    Ok(keywords)
}

pub(super) fn doc_record(r: &rusqlite::Row) -> rusqlite::Result<DocRecord> {
    Ok(DocRecord {
        id: r.get(0)?,
        root: r.get(1)?,
        path: r.get(2)?,
        hash: r.get(3)?,
        mtime_ns: r.get(4)?,
        size: r.get(5)?,
    })
}
