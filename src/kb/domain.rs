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
