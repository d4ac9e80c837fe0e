//! The heading tree: the KB's headings as the tool's sections, subsections and paths,
//! the tool definition built from it, and where a call lands.

use std::collections::HashMap;

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use crate::kb::KnowledgeBase;

/// One heading of the tree with where it lives.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub file: String,
    pub anchor: String,
    pub section_path: Vec<String>,
}

/// A top-level section: its name, where it is, and its subsections.
pub type TopSection = (String, Node, Vec<(String, Node)>);

#[derive(Debug, Clone, Default)]
pub struct HeadingTree {
    /// Top-level sections in KB order, each with its subsections (and their nodes).
    pub sections: Vec<TopSection>,
    /// Every heading of depth ≥ 3, for the `path` argument.
    pub deeper: Vec<Node>,
    /// Documents headed by their title: file → the title, the top section above the
    /// document's own headings.
    pub titled: HashMap<String, String>,
}

/// One document's headings, in order: (heading path, anchor).
pub struct DocHeadings {
    pub file: String,
    pub title: String,
    pub headings: Vec<(Vec<String>, String)>,
}

impl HeadingTree {
    pub fn load(kb: &KnowledgeBase) -> Result<HeadingTree> {
        let mut docs: Vec<DocHeadings> = Vec::new();
        for row in kb.store().heading_paths()? {
            match docs.last_mut().filter(|d| d.file == row.file) {
                Some(d) => d.headings.push((row.path, row.anchor)),
                None => docs.push(DocHeadings {
                    file: row.file,
                    title: row.title,
                    headings: vec![(row.path, row.anchor)],
                }),
            }
        }
        Ok(HeadingTree::of(docs))
    }

    /// The tree of the documents' headings. A document whose one top heading is its own
    /// name (a page's H1) is a top section under that name; a document with several top
    /// headings (a reference page's Synopsis, Options, Examples), or whose top heading
    /// another document holds already, is a top section under its title, its headings
    /// one level down — else its sections could not be named in an enum of unique names.
    pub fn of(docs: Vec<DocHeadings>) -> HeadingTree {
        let mut tree = HeadingTree::default();
        for doc in docs {
            let tops: Vec<&String> = doc
                .headings
                .iter()
                .filter(|(p, _)| p.len() == 1)
                .map(|(p, _)| &p[0])
                .collect();
            let taken =
                |name: &str, tree: &HeadingTree| tree.sections.iter().any(|(n, _, _)| n == name);
            let prefix = if tops.len() == 1 && !taken(tops[0], &tree) {
                None
            } else {
                let title = if doc.title.trim().is_empty() {
                    &doc.file
                } else {
                    &doc.title
                };
                let name = if taken(title, &tree) {
                    format!("{title} ({})", doc.file)
                } else {
                    title.clone()
                };
                let node = Node {
                    file: doc.file.clone(),
                    anchor: String::new(),
                    section_path: vec![name.clone()],
                };
                tree.sections.push((name.clone(), node, Vec::new()));
                tree.titled.insert(doc.file.clone(), name.clone());
                Some(name)
            };
            for (path, anchor) in doc.headings {
                let path: Vec<String> = prefix.iter().cloned().chain(path).collect();
                tree.add(&doc.file, path, anchor);
            }
        }
        tree
    }

    fn add(&mut self, file: &str, path: Vec<String>, anchor: String) {
        let node = Node {
            file: file.to_string(),
            anchor,
            section_path: path.clone(),
        };
        match path.len() {
            // Names must be unique in an enum: the first document keeps a name.
            1 if !self.sections.iter().any(|(n, _, _)| *n == path[0]) => {
                self.sections.push((path[0].clone(), node, Vec::new()));
            }
            2 => {
                if let Some((_, top, subs)) =
                    self.sections.iter_mut().find(|(n, _, _)| *n == path[0])
                {
                    if top.file == file && !subs.iter().any(|(s, _)| *s == path[1]) {
                        subs.push((path[1].clone(), node));
                    }
                }
            }
            n if n >= 3 => self.deeper.push(node),
            _ => {}
        }
    }

    /// A chunk's heading path as the tree holds it (under its document's title when the
    /// document is headed so).
    pub fn path_of(&self, file: &str, path: &[String]) -> Vec<String> {
        self.titled
            .get(file)
            .into_iter()
            .cloned()
            .chain(path.iter().cloned())
            .collect()
    }

    /// The seed's tool definition (OpenAI function format): section enum, combined
    /// subsection enum, the valid pairs listed in the description, optional path.
    pub fn tool_definition(&self) -> Value {
        let listing: Vec<String> = self
            .sections
            .iter()
            .map(|(n, _, subs)| {
                if subs.is_empty() {
                    n.clone()
                } else {
                    let s: Vec<&str> = subs.iter().map(|(s, _)| s.as_str()).collect();
                    format!("{n} (subsections: {})", s.join(", "))
                }
            })
            .collect();
        let mut all_subs: Vec<String> = Vec::new();
        for (_, _, subs) in &self.sections {
            for (s, _) in subs {
                if !all_subs.contains(s) {
                    all_subs.push(s.clone());
                }
            }
        }
        json!({
            "type": "function",
            "function": {
                "name": "navigate_to_section",
                "description": format!(
                    "When user asks about content related to these sections, navigate there instead of describing it. Available sections: {}",
                    listing.join("; ")
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "section": {"type": "string", "description": "The main section name",
                                    "enum": self.sections.iter().map(|(n, _, _)| n.clone()).collect::<Vec<_>>()},
                        "subsection": {"type": "string", "description": "The subsection name within the main section (optional). Only provide if user asks about specific subsection content. Must be a valid subsection under the chosen section.", "enum": all_subs},
                        "path": {"type": "array", "items": {"type": "string"}, "description": "Headings below the subsection, for deeper nesting (optional)"}
                    },
                    "required": ["section"]
                }
            }
        })
    }

    /// The same tool in Gemini's `functionDeclarations` format.
    pub fn gemini_declaration(&self) -> Value {
        let f = &self.tool_definition()["function"];
        json!({"functionDeclarations": [f]})
    }

    /// Decoder schema over `sections` (names): one branch per section, its own
    /// subsections only.
    pub fn decoder_schema(&self, sections: &[String]) -> Value {
        let branches: Vec<Value> = self
            .sections
            .iter()
            .filter(|(n, _, _)| sections.contains(n))
            .map(|(n, _, subs)| {
                let mut props = serde_json::Map::new();
                props.insert("section".into(), json!({"const": n}));
                if !subs.is_empty() {
                    let names: Vec<&str> = subs.iter().map(|(s, _)| s.as_str()).collect();
                    props.insert("subsection".into(), json!({"enum": names}));
                }
                json!({"type": "object", "additionalProperties": false, "required": ["section"], "properties": props})
            })
            .collect();
        json!({"anyOf": branches})
    }

    /// Where a call lands: the subsection if it exists under the section, else the
    /// section itself (the seed's fallback); a `path` descends further when it matches.
    pub fn resolve(
        &self,
        section: &str,
        subsection: Option<&str>,
        path: &[String],
    ) -> Option<(Node, bool)> {
        let (_, top, subs) = self.sections.iter().find(|(n, _, _)| n == section)?;
        let Some(sub) = subsection else {
            return Some((top.clone(), false));
        };
        let Some((_, node)) = subs.iter().find(|(s, _)| s == sub) else {
            return Some((top.clone(), true));
        };
        if !path.is_empty() {
            let mut want = node.section_path.clone();
            want.extend(path.iter().cloned());
            if let Some(deep) = self
                .deeper
                .iter()
                .find(|d| d.file == node.file && d.section_path == want)
            {
                return Some((deep.clone(), false));
            }
        }
        Some((node.clone(), false))
    }
}
