//! Every read of the store, by name: the only `Store` methods callable outside `kb`
//! (writes are `pub(in crate::kb)`, made under the writer lock). Nothing outside the store
//! writes SQL.

use std::path::Path;

use anyhow::{anyhow, Result};
use rusqlite::{params, OptionalExtension};

use super::{
    doc_record, embed_text, ChunkListing, ChunkRecord, Counts, DocRecord, DocSummary, SectionRow,
    Store,
};

impl Store {
    /// Whether the query (`SELECT 1 …`) finds a row.
    fn exists(&self, sql: &str, params: impl rusqlite::Params) -> Result<bool> {
        Ok(self
            .conn
            .query_row(sql, params, |_| Ok(()))
            .optional()?
            .is_some())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn document(&self, root: &str, path: &str) -> Result<Option<DocRecord>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, root, path, hash, mtime_ns, size FROM documents WHERE root = ?1 AND path = ?2",
                params![root, path],
                doc_record,
            )
            .optional()?)
    }

    pub fn documents_under(&self, root: &str) -> Result<Vec<DocRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, root, path, hash, mtime_ns, size FROM documents WHERE root = ?1",
        )?;
        let rows = stmt.query_map(params![root], doc_record)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn is_excluded(&self, root: &str, path: &str) -> Result<bool> {
        self.exists(
            "SELECT 1 FROM excluded WHERE root = ?1 AND path = ?2",
            params![root, path],
        )
    }

    /// The removed documents, as (root, path).
    pub fn excluded(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT root, path FROM excluded ORDER BY path, root")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Vectors in the index: one per chunk once an ingest has committed.
    pub fn vector_count(&self) -> usize {
        self.index.size()
    }

    /// The stored vector of a chunk (f16 in the index, widened).
    pub fn vector(&self, key: u64) -> Option<Vec<f32>> {
        let mut buf = vec![0f32; self.dim];
        match self.index.get(key, &mut buf) {
            Ok(n) if n > 0 => Some(buf),
            _ => None,
        }
    }

    /// The full text of the section a chunk belongs to.
    pub fn section_text_of(&self, key: u64) -> Result<String> {
        Ok(self.conn.query_row(
            "SELECT s.text FROM chunks c JOIN sections s ON s.id = c.section_id WHERE c.id = ?1",
            params![key as i64],
            |r| r.get(0),
        )?)
    }

    /// How many chunks hold `word` (by its stem, as FTS5 matches), counted up to `cap`:
    /// how common a question's word is in this KB.
    pub fn term_chunks(&self, word: &str, cap: usize) -> Result<usize> {
        let Some(phrase) = fts_phrase(word) else {
            return Ok(0);
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2)",
        )?;
        Ok(stmt.query_row(params![phrase, cap as i64], |r| r.get::<_, i64>(0))? as usize)
    }

    /// The share of documents whose top heading holds `word` (case aside): 1.0 for
    /// "manual" in git's "git-add(1) Manual Page" titles, which name no one page. A
    /// document's first section has its lowest id (sections are written in order), found
    /// in the `doc_id` index: one row read per document, not a scan of every section.
    pub fn top_heading_share(&self, word: &str) -> Result<f64> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT COUNT(*), COALESCE(SUM(instr(lower(heading), ?1) > 0), 0) FROM sections \
             WHERE id IN (SELECT MIN(id) FROM sections GROUP BY doc_id) AND ord = 0",
        )?;
        let (all, holding): (i64, i64) =
            stmt.query_row(params![word.to_lowercase()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(if all == 0 {
            0.0
        } else {
            holding as f64 / all as f64
        })
    }

    /// Whether any chunk or its headings contain `word` as written (case aside): FTS5 finds the chunks
    /// with its stem, then each is checked for the word itself, since a stem is not a
    /// mention (Porter makes "LFS" the "LF" of line endings).
    pub fn term_known(&self, word: &str) -> Result<bool> {
        let Some(phrase) = fts_phrase(word) else {
            return Ok(true);
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT text || '\n' || headings FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2",
        )?;
        let texts = stmt.query_map(params![phrase, TERM_CHECK_ROWS as i64], |r| {
            r.get::<_, String>(0)
        })?;
        let mut rows = 0;
        for text in texts {
            rows += 1;
            if contains_word(&text?, word) {
                return Ok(true);
            }
        }
        // So many stem matches that the word itself is likely among those not read.
        Ok(rows >= TERM_CHECK_ROWS)
    }

    /// Whether `file` has a section headed `heading` (exactly as written).
    pub fn section_exists(&self, file: &str, heading: &str) -> Result<bool> {
        self.exists("SELECT 1 FROM sections s JOIN documents d ON d.id = s.doc_id WHERE d.path = ?1 AND s.heading = ?2 LIMIT 1", params![file, heading])
    }

    /// Headings of the sections around `heading` in `file`: its siblings (same parent),
    /// its children, and its parent, in document order.
    pub fn neighbour_headings(&self, file: &str, path: &[String]) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.path FROM sections s JOIN documents d ON d.id = s.doc_id WHERE d.path = ?1 ORDER BY s.ord",
        )?;
        let paths: Vec<Vec<String>> = stmt
            .query_map(params![file], |r| r.get::<_, String>(0))?
            .filter_map(|p| p.ok().and_then(|p| serde_json::from_str(&p).ok()))
            .collect();
        let parent = &path[..path.len().saturating_sub(1)];
        let mut out: Vec<String> = Vec::new();
        for p in paths {
            let Some(last) = p.last() else { continue };
            let sibling = p.len() == path.len() && p[..p.len() - 1] == *parent;
            let child = p.len() == path.len() + 1 && p[..path.len()] == *path;
            let is_parent = !parent.is_empty() && p == parent;
            if (sibling || child || is_parent) && p != path && !out.contains(last) {
                out.push(last.clone());
            }
        }
        Ok(out)
    }

    /// Every document, ordered by path: (path, kind, title, chunks).
    pub fn list_documents(&self) -> Result<Vec<DocSummary>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.path, d.kind, d.title, (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d ORDER BY d.path, d.root",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(DocSummary {
                path: r.get(0)?,
                kind: r.get(1)?,
                title: r.get(2)?,
                chunks: r.get::<_, i64>(3)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A document's sections in reading order, by its path (the first root that has it).
    /// Where a listed document's source is (the first root holding that path, as
    /// `document_sections` reads), with its stored hash.
    pub fn document_source(&self, path: &str) -> Result<Option<DocRecord>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, root, path, hash, mtime_ns, size FROM documents WHERE path = ?1
                 ORDER BY root LIMIT 1",
                params![path],
                doc_record,
            )
            .optional()?)
    }

    pub fn document_sections(&self, path: &str) -> Result<Option<(DocSummary, Vec<SectionRow>)>> {
        let Some(doc) = self.list_documents()?.into_iter().find(|d| d.path == path) else {
            return Ok(None);
        };
        let mut stmt = self.conn.prepare(
            "SELECT s.level, s.heading, s.anchor, s.page, s.text FROM sections s
             WHERE s.doc_id = (SELECT id FROM documents WHERE path = ?1 ORDER BY root LIMIT 1)
             ORDER BY s.ord",
        )?;
        let rows = stmt.query_map(params![path], |r| {
            Ok(SectionRow {
                level: r.get::<_, i64>(0)? as u32,
                heading: r.get(1)?,
                anchor: r.get(2)?,
                page: r.get::<_, Option<i64>>(3)?.map(|p| p as u32),
                text: r.get(4)?,
            })
        })?;
        Ok(Some((doc, rows.collect::<rusqlite::Result<_>>()?)))
    }

    /// How many documents, sections and chunks the store holds.
    pub fn counts(&self) -> Result<Counts> {
        let count = |sql: &str| -> Result<usize> {
            Ok(self.conn.query_row(sql, [], |r| r.get::<_, i64>(0))? as usize)
        };
        Ok(Counts {
            documents: count("SELECT COUNT(*) FROM documents")?,
            sections: count("SELECT COUNT(*) FROM sections")?,
            chunks: count("SELECT COUNT(*) FROM chunks")?,
        })
    }

    /// The folders documents were ingested from (each document's root), sorted.
    pub fn roots(&self) -> Result<Vec<String>> {
        roots_of(&self.conn)
    }

    /// Whether `root` was ingested as a folder (`Store::record_folder`).
    pub fn is_folder_root(&self, root: &str) -> bool {
        self.conn
            .query_row(
                "SELECT 1 FROM meta WHERE key = ?1",
                params![format!("folder:{root}")],
                |_| Ok(()),
            )
            .optional()
            .is_ok_and(|r| r.is_some())
    }

    /// Whether any root was recorded as a folder (KBs ingested before these records have
    /// none).
    pub fn has_folder_records(&self) -> bool {
        self.conn
            .query_row(
                "SELECT 1 FROM meta WHERE key LIKE 'folder:%' LIMIT 1",
                [],
                |_| Ok(()),
            )
            .optional()
            .is_ok_and(|r| r.is_some())
    }

    /// A setting kept with the KB (`meta` table), if set.
    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                params![format!("setting.{key}")],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every heading with its document and anchor, in document order.
    pub fn heading_paths(&self) -> Result<Vec<HeadingRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.path, d.title, s.path, s.anchor FROM sections s JOIN documents d ON d.id = s.doc_id
             ORDER BY d.path, s.ord",
        )?;
        let rows = stmt.query_map([], |r| {
            let path: String = r.get(2)?;
            Ok(HeadingRow {
                file: r.get(0)?,
                title: r.get(1)?,
                path: serde_json::from_str(&path).unwrap_or_default(),
                anchor: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The distinct document titles, sorted.
    pub fn document_titles(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT title FROM documents ORDER BY title")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The text of every section of `file` headed `heading`, joined.
    pub fn section_text(&self, file: &str, heading: &str) -> Result<String> {
        Ok(self
            .conn
            .query_row(
                "SELECT group_concat(s.text, '\n') FROM sections s JOIN documents d ON d.id = s.doc_id
                 WHERE d.path = ?1 AND s.heading = ?2",
                params![file, heading],
                |r| r.get::<_, Option<String>>(0),
            )?
            .unwrap_or_default())
    }

    /// Every chunk in storage order, with its document and section.
    pub fn chunk_listing(&self) -> Result<Vec<ChunkListing>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.path, d.kind, c.chunk_id, c.page, s.heading, c.text FROM chunks c
             JOIN documents d ON d.id = c.doc_id JOIN sections s ON s.id = c.section_id
             ORDER BY c.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ChunkListing {
                file: r.get(0)?,
                kind: r.get(1)?,
                chunk_id: r.get(2)?,
                page: r.get::<_, Option<i64>>(3)?.map(|p| p as u32),
                heading: r.get(4)?,
                text: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The text to embed for each of `keys` (used to repair missing vectors).
    pub fn embed_texts(&self, keys: &[u64]) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.path, c.text FROM chunks c JOIN sections s ON s.id = c.section_id WHERE c.id = ?1",
        )?;
        keys.iter()
            .map(|k| {
                let (path, text): (String, String) =
                    stmt.query_row(params![*k as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
                let path: Vec<String> = serde_json::from_str(&path)?;
                Ok(embed_text(&path, &text))
            })
            .collect()
    }

    /// Every chunk's key, in key order (to copy the KB into another engine's index).
    pub fn chunk_keys(&self) -> Result<Vec<u64>> {
        let mut stmt = self.conn.prepare("SELECT id FROM chunks ORDER BY id")?;
        let keys = stmt
            .query_map([], |r| r.get::<_, i64>(0))?
            .map(|k| k.map(|k| k as u64))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(keys)
    }

    pub fn chunk(&self, key: u64) -> Result<Option<ChunkRecord>> {
        Ok(self
            .conn
            .query_row(
                "SELECT c.id, c.chunk_id, d.path, d.kind, s.heading, s.path, s.anchor, c.page, c.text
                 FROM chunks c JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = c.doc_id
                 WHERE c.id = ?1",
                params![key as i64],
                |r| {
                    let path: String = r.get(5)?;
                    Ok(ChunkRecord {
                        key: r.get::<_, i64>(0)? as u64,
                        chunk_id: r.get(1)?,
                        file: r.get(2)?,
                        kind: r.get(3)?,
                        heading: r.get(4)?,
                        section_path: serde_json::from_str(&path).unwrap_or_default(),
                        anchor: r.get(6)?,
                        page: r.get::<_, Option<i64>>(7)?.map(|p| p as u32),
                        text: r.get(8)?,
                    })
                },
            )
            .optional()?)
    }

    /// Sets how many candidates the vector index's search explores (usearch's
    /// `expansion_search`; `search_expansion_for` its size by default, set again when
    /// vectors are added): recall against time.
    pub fn set_search_expansion(&self, expansion: usize) {
        self.index.change_expansion_search(expansion);
    }

    /// Nearest chunks by cosine; (key, cosine), best first.
    pub fn dense(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        if self.index.size() == 0 {
            return Ok(Vec::new());
        }
        let m = self
            .index
            .search(query, k)
            .map_err(|e| anyhow!("usearch search: {e}"))?;
        Ok(m.keys
            .into_iter()
            .zip(m.distances)
            .map(|(key, d)| (key, 1.0 - d))
            .collect())
    }
}

/// Chunks read when checking that a term occurs as written.
const TERM_CHECK_ROWS: usize = 500;

/// Whether `text` holds `word` (case-insensitively) with no letter, digit, `_` or `-`
/// joined on either side.
pub(crate) fn contains_word(text: &str, word: &str) -> bool {
    let text = text.to_lowercase();
    let word = word.to_lowercase();
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    text.match_indices(&word).any(|(i, _)| {
        !joins(text[..i].chars().next_back()) && !joins(text[i + word.len()..].chars().next())
    })
}

/// One heading of a document, as `heading_paths` lists them.
pub struct HeadingRow {
    /// The document's path.
    pub file: String,
    /// The document's title.
    pub title: String,
    /// The heading path, top heading first.
    pub path: Vec<String>,
    pub anchor: String,
}

/// A query's meaningful words, lowercased: what keyword search looks for.
pub fn query_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .map(|w| w.to_lowercase())
        .filter(|w| !w.is_empty() && !crate::kb::stopwords::is_query_stopword(w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_as_written() {
        assert!(contains_word("Track it with Git LFS.", "lfs"));
        assert!(contains_word("see git-crypt(1)", "git-crypt"));
        assert!(!contains_word("Convert CRLF to LF.", "lfs"));
        assert!(!contains_word("git-cryptography", "git-crypt"));
        assert!(!contains_word("pre-git-crypt", "git-crypt"));
    }

    #[test]
    fn query_words_split_and_drop_stopwords() {
        assert_eq!(
            query_words("How do I roll back a \"deployment\"?"),
            ["roll", "back", "deployment"]
        );
        assert!(query_words("the of ???").is_empty());
        assert_eq!(query_words("NEAR(x y) AND -z"), ["near", "x", "y", "z"]);
    }
}

fn roots_of(conn: &rusqlite::Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT DISTINCT root FROM documents ORDER BY root")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// What a KB folder holds, read without opening its vectors or taking any lock: for
/// listing knowledge bases that are not open.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Peek {
    pub documents: usize,
    pub chunks: usize,
    /// The folders its documents came from.
    pub folders: Vec<String>,
}

/// Reads a KB folder's counts and folders read-only; an error when it holds no store.
pub fn peek(dir: &std::path::Path) -> Result<Peek> {
    use rusqlite::{Connection, OpenFlags};
    let db = dir.join(super::DB_FILE);
    if !db.is_file() {
        return Err(anyhow!("{} holds no {}", dir.display(), super::DB_FILE));
    }
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| anyhow!("cannot read {}: {e}", db.display()))?;
    let count = |sql: &str| -> Result<usize> {
        Ok(conn.query_row(sql, [], |r| r.get::<_, i64>(0))? as usize)
    };
    Ok(Peek {
        documents: count("SELECT COUNT(*) FROM documents")?,
        chunks: count("SELECT COUNT(*) FROM chunks")?,
        folders: roots_of(&conn)?,
    })
}

/// A word as one FTS5 phrase: its parts in order, as FTS5 tokenizes a hyphenated name;
/// None when it has no letters or digits.
fn fts_phrase(word: &str) -> Option<String> {
    let parts: Vec<String> = word
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| w.replace('"', ""))
        .collect();
    (!parts.is_empty()).then(|| format!("\"{}\"", parts.join(" ")))
}
