//! The conversations held over a knowledge base, kept in its folder
//! (`conversations.sqlite`, apart from the index so that a turn is saved while an ingest
//! holds the writer lock). A turn is written whole, in one transaction, once its answer is
//! done: a crash mid-answer loses that answer and nothing before it. Deleting a
//! conversation marks it deleted; `restore` brings it back.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::Value;

pub const CONVERSATIONS_FILE: &str = "conversations.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    deleted TEXT
);
CREATE TABLE IF NOT EXISTS turns (
    conversation TEXT NOT NULL REFERENCES conversations(id),
    n INTEGER NOT NULL,
    question TEXT NOT NULL,
    standalone TEXT NOT NULL,
    format TEXT NOT NULL,
    response TEXT NOT NULL,
    citations TEXT NOT NULL,
    decision TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (conversation, n)
);
";

/// Longest title kept (a first question can be long).
const TITLE_CHARS: usize = 80;

/// One conversation as a list shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created: String,
    pub updated: String,
    pub turns: usize,
}

/// One question and its answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Turn {
    pub n: usize,
    /// As the person asked it.
    pub question: String,
    /// What was searched and answered (the question with its conversation's context).
    pub standalone: String,
    /// The response format ("rag" or "navigator") and the response object in it.
    pub format: String,
    pub response: Value,
    /// The citations as links (file, anchor, …), as the answer carried them.
    pub citations: Value,
    pub decision: String,
    pub created: String,
}

/// No conversation of that id (or it is deleted).
#[derive(Debug, Clone, thiserror::Error)]
#[error("no conversation {0:?} in this knowledge base; GET /api/conversations lists them")]
pub struct NoSuchConversation(pub String);

pub struct Conversations {
    conn: Connection,
    path: PathBuf,
}

impl Conversations {
    /// Opens (creating if needed) the conversations of the KB in `kb_dir`.
    pub fn open(kb_dir: &Path) -> Result<Conversations> {
        let path = kb_dir.join(CONVERSATIONS_FILE);
        let conn =
            Connection::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
        conn.execute_batch(SCHEMA).with_context(|| {
            format!(
                "{} is not a Sextant conversations file; move it aside and try again",
                path.display()
            )
        })?;
        Ok(Conversations { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a conversation titled after its first question.
    pub fn create(&mut self, first_question: &str) -> Result<String> {
        let now = crate::jsonl::now_rfc3339();
        let id = new_id();
        self.conn.execute(
            "INSERT INTO conversations (id, title, created, updated) VALUES (?1, ?2, ?3, ?3)",
            params![id, title_of(first_question), now],
        )?;
        Ok(id)
    }

    /// The conversations not deleted, the last updated first.
    pub fn list(&self) -> Result<Vec<ConversationSummary>> {
        self.summaries("", "")
    }

    /// Summaries of the conversations not deleted (`and`: a further condition on `c`,
    /// with `?1` bound to `arg`), the last updated first.
    fn summaries(&self, and: &str, arg: &str) -> Result<Vec<ConversationSummary>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT c.id, c.title, c.created, c.updated,
                    (SELECT COUNT(*) FROM turns t WHERE t.conversation = c.id)
             FROM conversations c WHERE c.deleted IS NULL {and}
             ORDER BY c.updated DESC, c.id"
        ))?;
        let map = |r: &rusqlite::Row| {
            Ok(ConversationSummary {
                id: r.get(0)?,
                title: r.get(1)?,
                created: r.get(2)?,
                updated: r.get(3)?,
                turns: r.get::<_, i64>(4)? as usize,
            })
        };
        let rows = if and.is_empty() {
            stmt.query_map([], map)?.collect::<rusqlite::Result<_>>()?
        } else {
            stmt.query_map([arg], map)?
                .collect::<rusqlite::Result<_>>()?
        };
        Ok(rows)
    }

    /// One conversation's summary, if it exists and is not deleted.
    pub fn summary(&self, id: &str) -> Result<ConversationSummary> {
        self.summaries("AND c.id = ?1", id)?
            .pop()
            .ok_or_else(|| NoSuchConversation(id.to_string()).into())
    }

    /// A conversation's turns, in order.
    pub fn turns(&self, id: &str) -> Result<Vec<Turn>> {
        self.summary(id)?;
        let mut stmt = self.conn.prepare(
            "SELECT n, question, standalone, format, response, citations, decision, created
             FROM turns WHERE conversation = ?1 ORDER BY n",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
            ))
        })?;
        let mut turns = Vec::new();
        for row in rows {
            let (n, question, standalone, format, response, citations, decision, created) = row?;
            turns.push(Turn {
                n: n as usize,
                question,
                standalone,
                format,
                response: serde_json::from_str(&response)
                    .with_context(|| format!("turn {n} of {id}: unreadable response"))?,
                citations: serde_json::from_str(&citations)
                    .with_context(|| format!("turn {n} of {id}: unreadable citations"))?,
                decision,
                created,
            });
        }
        Ok(turns)
    }

    /// Appends a turn (its `n` and `created` are set here) and returns its number.
    pub fn add_turn(&mut self, id: &str, turn: &Turn) -> Result<usize> {
        self.summary(id)?;
        let now = crate::jsonl::now_rfc3339();
        let tx = self.conn.transaction()?;
        let n: i64 = tx.query_row(
            "SELECT COALESCE(MAX(n), 0) + 1 FROM turns WHERE conversation = ?1",
            [id],
            |r| r.get(0),
        )?;
        tx.execute(
            "INSERT INTO turns (conversation, n, question, standalone, format, response,
                                citations, decision, created)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                id,
                n,
                turn.question,
                turn.standalone,
                turn.format,
                turn.response.to_string(),
                turn.citations.to_string(),
                turn.decision,
                now
            ],
        )?;
        tx.execute(
            "UPDATE conversations SET updated = ?2 WHERE id = ?1",
            params![id, now],
        )?;
        tx.commit()?;
        Ok(n as usize)
    }

    pub fn rename(&mut self, id: &str, title: &str) -> Result<()> {
        self.summary(id)?;
        let title = title_of(title);
        anyhow::ensure!(!title.is_empty(), "a conversation's title cannot be empty");
        self.conn.execute(
            "UPDATE conversations SET title = ?2 WHERE id = ?1",
            params![id, title],
        )?;
        Ok(())
    }

    /// Marks a conversation deleted (its turns are kept: `restore` brings it back).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        self.summary(id)?;
        self.conn.execute(
            "UPDATE conversations SET deleted = ?2 WHERE id = ?1",
            params![id, crate::jsonl::now_rfc3339()],
        )?;
        Ok(())
    }

    pub fn restore(&mut self, id: &str) -> Result<()> {
        let found: Option<String> = self
            .conn
            .query_row("SELECT id FROM conversations WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        if found.is_none() {
            return Err(NoSuchConversation(id.to_string()).into());
        }
        self.conn.execute(
            "UPDATE conversations SET deleted = NULL WHERE id = ?1",
            [id],
        )?;
        Ok(())
    }
}

/// A conversation as Markdown: each question, its answer, and its citations as links to
/// the cited files (relative to the KB's source folder), with the anchor and page.
pub fn export_markdown(summary: &ConversationSummary, turns: &[Turn]) -> String {
    let mut md = format!("# {}\n\n", summary.title);
    for t in turns {
        md.push_str(&format!("## {}\n\n", t.question.trim()));
        if t.standalone != t.question {
            md.push_str(&format!("*Read as: {}*\n\n", t.standalone.trim()));
        }
        let answer = t.response["final_answer"]
            .as_str()
            .or(t.response["answer"].as_str())
            .unwrap_or_default();
        md.push_str(answer.trim());
        md.push_str("\n\n");
        let links: Vec<String> = t
            .citations
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let file = c["file"].as_str()?;
                let label = c["label"].as_str().unwrap_or(file);
                let mut target = file.replace(' ', "%20");
                if let Some(page) = c["page"].as_u64() {
                    target.push_str(&format!("#page={page}"));
                } else if let Some(anchor) = c["anchor"].as_str().filter(|a| !a.is_empty()) {
                    target.push_str(&format!("#{anchor}"));
                }
                Some(format!("- [{}]({target})", label.replace(['[', ']'], "")))
            })
            .collect();
        if !links.is_empty() {
            md.push_str("Sources:\n\n");
            md.push_str(&links.join("\n"));
            md.push_str("\n\n");
        }
    }
    md
}

/// A conversation id: `c-` and 16 hex digits (random).
fn new_id() -> String {
    format!("c-{:016x}", rand::random::<u64>())
}

/// Whether `id` has the form of a conversation id.
pub fn is_conversation_id(id: &str) -> bool {
    id.len() == 18 && id.starts_with("c-") && id[2..].chars().all(|c| c.is_ascii_hexdigit())
}

fn title_of(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(TITLE_CHARS) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(q: &str) -> Turn {
        Turn {
            n: 0,
            question: q.into(),
            standalone: q.into(),
            format: "rag".into(),
            response: json!({"final_answer": "a"}),
            citations: json!([{"file": "a.md", "anchor": "x"}]),
            decision: "d".into(),
            created: String::new(),
        }
    }

    #[test]
    fn turns_are_kept_in_order_across_reopening_and_deletion_is_recoverable() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Conversations::open(dir.path()).unwrap();
        let id = c.create("How do I roll back?\nPlease").unwrap();
        assert!(is_conversation_id(&id), "{id}");
        assert_eq!(c.add_turn(&id, &turn("How do I roll back?")).unwrap(), 1);
        assert_eq!(c.add_turn(&id, &turn("and if it fails?")).unwrap(), 2);
        drop(c);
        let mut c = Conversations::open(dir.path()).unwrap();
        let turns = c.turns(&id).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[1].question, "and if it fails?");
        assert_eq!(turns[1].citations[0]["file"], "a.md");
        assert_eq!(c.list().unwrap()[0].title, "How do I roll back? Please");
        c.rename(&id, "Rollbacks").unwrap();
        assert_eq!(c.summary(&id).unwrap().title, "Rollbacks");
        c.delete(&id).unwrap();
        assert!(c.list().unwrap().is_empty());
        let e = c.turns(&id).unwrap_err();
        assert!(e.downcast_ref::<NoSuchConversation>().is_some(), "{e}");
        c.restore(&id).unwrap();
        assert_eq!(c.turns(&id).unwrap().len(), 2);
        assert!(c.restore("c-0000000000000000").is_err());
        let md = export_markdown(&c.summary(&id).unwrap(), &c.turns(&id).unwrap());
        assert!(md.starts_with("# Rollbacks\n"), "{md}");
        assert!(md.contains("## and if it fails?\n\na\n"), "{md}");
        assert!(md.contains("- [a.md](a.md#x)"), "{md}");
    }
}
