//! What a knowledge base is about: `kb.toml` in its folder (name, description, topics),
//! else derived from its documents' titles. Used to tell out-of-domain questions from
//! in-domain ones that the documents do not answer.

use anyhow::Result;
use serde::Serialize;

use super::KnowledgeBase;

/// What a KB is about (`kb.toml` in the KB folder, else derived from document titles).
#[derive(Debug, Clone, Serialize, serde::Deserialize, Default)]
pub struct Domain {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub topics: Vec<String>,
}

impl Domain {
    pub fn load(kb: &KnowledgeBase) -> Result<Domain> {
        let path = kb.store.dir().join("kb.toml");
        if let Ok(text) = std::fs::read_to_string(&path) {
            let d: Domain = toml::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{} is not valid: {e}", path.display()))?;
            return Ok(d);
        }
        let topics = kb.store.document_titles()?;
        let mut documents = kb.store.list_documents()?;
        // The largest documents stand for the KB better than the alphabet's first.
        documents.sort_by(|a, b| b.chunks.cmp(&a.chunks).then_with(|| a.title.cmp(&b.title)));
        let mut largest: Vec<&str> = Vec::new();
        for d in &documents {
            let title = without_numbering(&d.title);
            if !title.is_empty() && !largest.contains(&title) {
                largest.push(title);
            }
        }
        let name = kb
            .store
            .dir()
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "knowledge base".into());
        // The description is read in answers: name a few documents, count the rest.
        const NAMED: usize = 6;
        let listed = if largest.len() > NAMED {
            format!(
                "{} and {} more documents",
                largest[..NAMED].join(", "),
                documents.len() - NAMED
            )
        } else {
            largest.join(", ")
        };
        Ok(Domain {
            description: format!("documentation about {listed}"),
            name,
            topics,
        })
    }
}

/// The file in a KB's folder that keeps the vectors of its topics between runs.
pub const TOPIC_VECTORS: &str = "topic-vectors.bin";

/// The vectors of `texts` (a domain's topics and description) by the KB's embedder: read
/// from `TOPIC_VECTORS` when the same texts were embedded by the same model before, else
/// embedded and kept there. Embedding a title per document took 2.2 s of every
/// `sextant ask` on a KB of 2,340 documents (113k chunks), before its first search. A
/// folder that cannot be written to only loses the cache.
pub fn topic_vectors(kb: &KnowledgeBase, texts: &[String]) -> Result<Vec<Vec<f32>>> {
    let key = cache_key(kb, texts);
    let path = kb.store.dir().join(TOPIC_VECTORS);
    let dim = kb.embedder.dim;
    if let Some(vectors) = read_cached(&path, &key, texts.len(), dim) {
        return Ok(vectors);
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = kb.embedder.embed(&refs)?;
    let mut bytes = key.to_vec();
    bytes.extend((texts.len() as u32).to_le_bytes());
    bytes.extend((dim as u32).to_le_bytes());
    for v in &vectors {
        bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }
    // Written whole under a per-process name, then renamed (as the vector index is): a
    // reader never sees half a file, and a failed write leaves nothing behind.
    let tmp = kb
        .store
        .dir()
        .join(format!("{TOPIC_VECTORS}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, &bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .is_err()
    {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(vectors)
}

/// What the cached vectors must have been made from: the embedding model, its precision,
/// and the texts.
fn cache_key(kb: &KnowledgeBase, texts: &[String]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(kb.embedder.name.as_bytes());
    h.update(format!("\0{:?}\0", kb.embedder.precision()).as_bytes());
    for t in texts {
        h.update(t.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// The cached vectors, if the file holds `count` of width `dim` made under `key`.
fn read_cached(
    path: &std::path::Path,
    key: &[u8; 32],
    count: usize,
    dim: usize,
) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).ok()?;
    let (head, body) = bytes.split_at_checked(40)?;
    let word = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().unwrap()) as usize;
    if head[..32] != key[..]
        || word(32) != count
        || word(36) != dim
        || body.len() != count * dim * 4
    {
        return None;
    }
    let floats: Vec<f32> = body
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    Some(floats.chunks(dim.max(1)).map(<[f32]>::to_vec).collect())
}

/// A title without its section number ("19.10. Secure TCP/IP Connections…", "F.32.
/// pg_stat_statements…", "Chapter 21. Client Authentication"): the numbers place it in a
/// book the reader of a refusal does not have open.
fn without_numbering(title: &str) -> &str {
    let title = title.trim();
    let mut rest = title;
    for word in ["Chapter ", "Appendix ", "Part "] {
        if let Some(r) = rest.strip_prefix(word) {
            rest = r;
            break;
        }
    }
    let Some((number, after)) = rest.split_once(' ') else {
        return title;
    };
    let is_number = number.ends_with('.')
        && number
            .chars()
            .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        && number.split('.').all(|p| {
            p.chars().all(|c| c.is_ascii_digit())
                || (p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()))
                || p.chars().all(|c| matches!(c, 'I' | 'V' | 'X'))
        });
    if is_number && !after.trim().is_empty() {
        after.trim()
    } else {
        title
    }
}

#[cfg(test)]
mod tests {
    use super::without_numbering;

    #[test]
    fn section_numbers_are_left_out_of_titles() {
        assert_eq!(
            without_numbering("19.10. Secure TCP/IP Connections with GSSAPI Encryption"),
            "Secure TCP/IP Connections with GSSAPI Encryption"
        );
        assert_eq!(
            without_numbering("F.32. pg_stat_statements"),
            "pg_stat_statements"
        );
        assert_eq!(
            without_numbering("Chapter 21. Client Authentication"),
            "Client Authentication"
        );
        assert_eq!(
            without_numbering("Part III. Server Administration"),
            "Server Administration"
        );
        assert_eq!(without_numbering("git-add(1)"), "git-add(1)");
        assert_eq!(without_numbering("Git Tools"), "Git Tools");
        assert_eq!(without_numbering("A. Release Notes"), "Release Notes");
        assert_eq!(without_numbering("Mr. Smith's guide"), "Mr. Smith's guide");
        assert_eq!(without_numbering("3."), "3.");
    }
}
