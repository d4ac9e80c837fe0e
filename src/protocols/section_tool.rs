//! The section tool, `navigate_to_section` (seeds/section-navigation-protocol.md): the
//! tool's enums are the KB's real heading tree ("dynamic enums"). Top-level sections are
//! each document's top headings (its H1 or title), subsections their children, deeper
//! headings a `path`.
//!
//! Routing: a fuzzy match of the question to a heading routes directly (the seed's fast
//! path); so does a retrieved passage that matches the question closely (score ≥ 0.80);
//! otherwise the LLM chooses under a decoder schema with one `anyOf` branch per
//! candidate section whose `subsection` is an enum of that section's own subsections, so
//! an invalid pairing cannot be generated. A subsection that does not exist falls back to
//! its parent section.

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::constrain::validate::SchemaValidator;
use crate::kb::search::{search, SearchMode};
use crate::kb::KnowledgeBase;
use crate::llm::Llm;
use crate::schemas::{self, SchemaId};

use super::shared::llm_object;
use super::{Pending, Report, Step};

/// Normalised score of the best retrieved passage above which navigation follows it
/// without the LLM (measured with `sextant bench agents`, docs/PERFORMANCE.md).
pub const RETRIEVAL_ROUTE_MIN: f64 = 0.80;

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
}

impl HeadingTree {
    pub fn load(kb: &KnowledgeBase) -> Result<HeadingTree> {
        let mut tree = HeadingTree::default();
        for (file, path, anchor) in kb.store().heading_paths()? {
            let node = Node {
                file: file.clone(),
                anchor,
                section_path: path.clone(),
            };
            match path.len() {
                // Names must be unique in an enum: the first document keeps a name.
                1 if !tree.sections.iter().any(|(n, _, _)| *n == path[0]) => {
                    tree.sections.push((path[0].clone(), node, Vec::new()));
                }
                2 => {
                    if let Some((_, top, subs)) =
                        tree.sections.iter_mut().find(|(n, _, _)| *n == path[0])
                    {
                        if top.file == file && !subs.iter().any(|(s, _)| *s == path[1]) {
                            subs.push((path[1].clone(), node));
                        }
                    }
                }
                n if n >= 3 => tree.deeper.push(node),
                _ => {}
            }
        }
        Ok(tree)
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

#[derive(Debug, Clone, Serialize)]
pub struct Navigation {
    pub call: Value,
    pub target: Node,
    pub decided_by: NavigatedBy,
}

/// Which step chose the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NavigatedBy {
    /// A heading named in the question.
    FastPath,
    /// A retrieved passage that clearly matches.
    Retrieval,
    Llm,
}

/// Normalises for fuzzy matching: lowercase letters and digits, single spaces.
fn normalise(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The fast path: a heading named in the question (exactly, normalised, or within a small
/// edit distance of a same-length window of the question's words). Longest match wins;
/// a subsection match implies its section.
pub fn fuzzy_match(tree: &HeadingTree, question: &str) -> Option<(String, Option<String>)> {
    let q = normalise(question);
    let words: Vec<&str> = q.split(' ').collect();
    let matches = |heading: &str| -> bool {
        let h = normalise(heading);
        if h.len() < 4 {
            return false;
        }
        if format!(" {q} ").contains(&format!(" {h} ")) {
            return true;
        }
        let n = h.split(' ').count();
        let tolerance = (h.len() / 8).min(3);
        tolerance > 0
            && words
                .windows(n)
                .any(|w| levenshtein(&w.join(" "), &h) <= tolerance)
    };
    let mut best: Option<(usize, String, Option<String>)> = None;
    for (name, _, subs) in &tree.sections {
        for (sub, _) in subs {
            if matches(sub) && best.as_ref().is_none_or(|b| sub.len() > b.0) {
                best = Some((sub.len(), name.clone(), Some(sub.clone())));
            }
        }
        if matches(name) && best.as_ref().is_none_or(|b| name.len() > b.0) {
            best = Some((name.len(), name.clone(), None));
        }
    }
    best.map(|(_, s, sub)| (s, sub))
}

/// The model's part of navigation: the tree and the candidate sections it may choose.
pub struct PendingNavigation {
    tree: HeadingTree,
    candidates: Vec<String>,
    question: String,
    report: Report,
}

/// Routes by rules where they decide (a heading named in the question; a retrieved
/// passage that clearly matches); else leaves the choice among the retrieved documents'
/// sections to the model.
pub fn prepare(
    kb: &KnowledgeBase,
    question: &str,
) -> Result<Step<(Navigation, Report), PendingNavigation>> {
    let tree = HeadingTree::load(kb)?;
    if tree.sections.is_empty() {
        bail!("the knowledge base has no headings to navigate to; add documents with `sextant ingest`");
    }
    let mut report = Report {
        mode: "navigate".into(),
        ..Default::default()
    };
    if let Some((section, subsection)) = fuzzy_match(&tree, question) {
        report.decision = "fast path: a heading is named in the question".into();
        return land(
            &tree,
            &section,
            subsection,
            &[],
            NavigatedBy::FastPath,
            report,
        )
        .map(Step::Done);
    }
    let hits = search(kb, question, 5, SearchMode::Hybrid)?;
    // A retrieved passage that matches closely names its own section: route there
    // without the LLM (it chooses less well than retrieval on a clear match).
    let direct = hits.first().filter(|h| {
        h.score >= RETRIEVAL_ROUTE_MIN
            && tree
                .sections
                .iter()
                .any(|(n, node, _)| Some(n) == h.section_path.first() && node.file == h.file)
    });
    if let Some(h) = direct {
        report.decision = format!(
            "retrieval: the best passage ({} § {}, score {:.2}) is a clear match",
            h.file, h.section, h.score
        );
        let deeper = &h.section_path[2.min(h.section_path.len())..];
        let sub = h.section_path.get(1).cloned();
        return land(
            &tree,
            &h.section_path[0],
            sub,
            deeper,
            NavigatedBy::Retrieval,
            report,
        )
        .map(Step::Done);
    }
    // Candidates: the top-level sections of the documents retrieval finds.
    let mut candidates: Vec<String> = Vec::new();
    for h in &hits {
        if let Some(top) = h.section_path.first() {
            if tree.sections.iter().any(|(n, _, _)| n == top) && !candidates.contains(top) {
                candidates.push(top.clone());
            }
        }
    }
    if candidates.is_empty() {
        candidates = tree.sections.iter().map(|(n, _, _)| n.clone()).collect();
    }
    report.decision = format!("LLM over {} candidate sections", candidates.len());
    Ok(Step::NeedsLlm(PendingNavigation {
        tree,
        candidates,
        question: question.to_string(),
        report,
    }))
}

impl Pending for PendingNavigation {
    type Output = (Navigation, Report);

    fn finish(self, llm: &mut Llm) -> Result<(Navigation, Report)> {
        let PendingNavigation {
            tree,
            candidates,
            question,
            mut report,
        } = self;
        let schema = tree.decoder_schema(&candidates);
        let desc = tree.tool_definition()["function"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let user =
            format!("{desc}\n\nUser: {question}\nChoose the section (and subsection) to open.");
        let v = llm_object(llm, SYSTEM, &user, schema, &mut report)?;
        let section = v["section"].as_str().unwrap_or_default();
        let subsection = v["subsection"].as_str().map(str::to_string);
        land(&tree, section, subsection, &[], NavigatedBy::Llm, report)
    }
}

/// Both steps at once, for callers that hold the model already (tests, benchmarks).
pub fn navigate(
    kb: &KnowledgeBase,
    llm: Option<&mut Llm>,
    question: &str,
) -> Result<(Navigation, Report)> {
    prepare(kb, question)?.complete(llm)
}

/// Where a chosen section lands (the parent when the subsection does not exist), and the
/// tool call, validated against the seed's schema and this KB's tool definition.
fn land(
    tree: &HeadingTree,
    section: &str,
    subsection: Option<String>,
    path: &[String],
    decided_by: NavigatedBy,
    mut report: Report,
) -> Result<(Navigation, Report)> {
    let (target, fell_back) = tree
        .resolve(section, subsection.as_deref(), path)
        .ok_or_else(|| anyhow::anyhow!("section {section:?} is not in the knowledge base"))?;
    if fell_back {
        report.notes.push(format!(
            "subsection {subsection:?} not found under {section:?}: opened the section"
        ));
    }
    let subsection = subsection.filter(|_| !fell_back);
    let call = tool_call(section, subsection.as_deref(), path);
    schemas::validate(SchemaId::NavigateToSection, &call["arguments"])?;
    let parameters = tree.tool_definition()["function"]["parameters"].clone();
    SchemaValidator::new(&parameters)?.validate(&call["arguments"])?;
    Ok((
        Navigation {
            call,
            target,
            decided_by,
        },
        report,
    ))
}

/// The `navigate_to_section` call object; optional arguments only when present.
fn tool_call(section: &str, subsection: Option<&str>, path: &[String]) -> Value {
    let mut arguments = json!({"section": section});
    if let Some(sub) = subsection {
        arguments["subsection"] = json!(sub);
    }
    if !path.is_empty() {
        arguments["path"] = json!(path);
    }
    json!({"name": "navigate_to_section", "arguments": arguments})
}

const SYSTEM: &str = "You route a user to the right section of the documentation. Choose \
    the section, and a subsection when the user asks about something specific.";

#[cfg(test)]
mod tests {
    use super::*;

    fn node(file: &str, path: &[&str]) -> Node {
        Node {
            file: file.into(),
            anchor: crate::kb::parse::slugify(path.last().unwrap()),
            section_path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The seed's example tree.
    fn seed_tree() -> HeadingTree {
        let sub = |f: &str, top: &str, s: &str| (s.to_string(), node(f, &[top, s]));
        HeadingTree {
            sections: vec![
                (
                    "Agno".into(),
                    node("agno.md", &["Agno"]),
                    vec![
                        sub("agno.md", "Agno", "Architecture"),
                        sub("agno.md", "Agno", "Tools"),
                        sub("agno.md", "Agno", "Performance"),
                    ],
                ),
                (
                    "Autogen".into(),
                    node("autogen.md", &["Autogen"]),
                    vec![
                        sub("autogen.md", "Autogen", "Getting Started"),
                        sub("autogen.md", "Autogen", "Advanced Features"),
                        sub("autogen.md", "Autogen", "Examples"),
                    ],
                ),
                (
                    "Deployment Guide".into(),
                    node("deploy.md", &["Deployment Guide"]),
                    vec![
                        sub("deploy.md", "Deployment Guide", "Cloud Deployment"),
                        sub("deploy.md", "Deployment Guide", "Security"),
                    ],
                ),
            ],
            deeper: vec![node("agno.md", &["Agno", "Tools", "Debugging"])],
        }
    }

    #[test]
    fn single_section_navigation() {
        let t = seed_tree();
        assert_eq!(
            fuzzy_match(&t, "open the deployment guide please"),
            Some(("Deployment Guide".into(), None))
        );
        let (n, fell) = t.resolve("Deployment Guide", None, &[]).unwrap();
        assert_eq!((n.file.as_str(), fell), ("deploy.md", false));
    }

    #[test]
    fn hierarchical_navigation_with_enum_validation() {
        let t = seed_tree();
        assert_eq!(
            fuzzy_match(&t, "show me autogen's advanced featurs"),
            Some(("Autogen".into(), Some("Advanced Features".into())))
        );
        let tool = t.tool_definition();
        let params = &tool["function"]["parameters"];
        assert_eq!(
            params["properties"]["section"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            params["properties"]["subsection"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            8
        );
        assert!(tool["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Agno (subsections: Architecture, Tools, Performance)"));
        let v = jsonschema::validator_for(params).unwrap();
        assert!(v.is_valid(&json!({"section": "Agno", "subsection": "Tools"})));
        assert!(!v.is_valid(&json!({"section": "Nope"})));
    }

    #[test]
    fn invalid_combinations_are_impossible_in_the_decoder_schema() {
        let t = seed_tree();
        let names: Vec<String> = t.sections.iter().map(|s| s.0.clone()).collect();
        let schema = t.decoder_schema(&names);
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&json!({"section": "Agno", "subsection": "Tools"})));
        assert!(v.is_valid(&json!({"section": "Autogen"})));
        // The seed's combined enum would accept this pairing; the anyOf does not.
        assert!(!v.is_valid(&json!({"section": "Agno", "subsection": "Security"})));
        assert!(!v.is_valid(&json!({"section": "Deployment Guide", "subsection": "Tools"})));
    }

    #[test]
    fn subsection_not_found_falls_back_to_the_section() {
        let t = seed_tree();
        let (n, fell) = t.resolve("Agno", Some("Pricing"), &[]).unwrap();
        assert!(fell);
        assert_eq!(n.section_path, vec!["Agno"]);
        assert!(t.resolve("Missing", None, &[]).is_none());
    }

    #[test]
    fn deeper_nesting_follows_the_path() {
        let t = seed_tree();
        let (n, _) = t
            .resolve("Agno", Some("Tools"), &["Debugging".into()])
            .unwrap();
        assert_eq!(n.section_path, vec!["Agno", "Tools", "Debugging"]);
        let (n, _) = t.resolve("Agno", Some("Tools"), &["Nope".into()]).unwrap();
        assert_eq!(n.section_path, vec!["Agno", "Tools"]);
    }
}
