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
        let name = kb
            .store
            .dir()
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "knowledge base".into());
        // The description is read in answers: name a few documents, count the rest.
        const NAMED: usize = 6;
        let listed = if topics.len() > NAMED {
            format!(
                "{} and {} more documents",
                topics[..NAMED].join(", "),
                topics.len() - NAMED
            )
        } else {
            topics.join(", ")
        };
        Ok(Domain {
            description: format!("documentation about {listed}"),
            name,
            topics,
        })
    }
}
