//! The section tool, `navigate_to_section` (seeds/section-navigation-protocol.md): the
//! tool's enums are the KB's real heading tree ("dynamic enums"). Top-level sections are
//! each document's top headings (its H1 or title), subsections their children, deeper
//! headings a `path`.
//!
//! Routing, rules first: a request that names a heading which identifies one place goes
//! there (the seed's fast path, `fast_path`); otherwise the retrieved chunks are grouped by
//! section and the section with the most evidence wins (`places`). The model is asked only
//! when sections are nearly tied, under a decoder schema whose branches are exactly those
//! sections' tool arguments, so it cannot pick an invalid pairing or a place the evidence
//! does not support.

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

mod fast_path;
mod places;
mod tree;

pub use fast_path::named_target;
pub use places::Place;
pub use tree::{DocHeadings, HeadingTree, Node, TopSection};

/// Chunks retrieved to find the place.
const PLACE_CHUNKS: usize = 8;
/// Places whose evidence is within this share of the best one's are tied: the model
/// chooses among them. Zero: only places retrieval cannot order (equal fusion scores) go
/// to the model. 0.02 (about two ranks in one fused list) won on the tuning halves but
/// landed on the expected section less often than retrieval alone on every report half
/// (docs/AGENTS.md): a 0.5B model reading one passage per section is a worse judge than
/// the ranking.
pub const NEAR_TIE: f64 = 0.0;
/// At most this many nearly tied places go to the model.
const MOST_TIED: usize = 3;
/// A heading written in more than this share of the KB's chunks names no one place (a
/// product's name is a glossary heading and a word of most of the text).
pub const COMMON_HEADING_SHARE: f64 = 0.05;

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
    /// A request that names a heading as where to go.
    FastPath,
    /// The section with the most retrieved evidence.
    Retrieval,
    /// The model, between nearly tied sections.
    Llm,
}

/// The model's part of navigation: the nearly tied places it chooses among.
pub struct PendingNavigation {
    tree: HeadingTree,
    tied: Vec<(Place, String)>,
    question: String,
    report: Report,
}

/// Whether a heading is written in so much of the KB's text that it names no one place.
fn common_in(kb: &KnowledgeBase, heading: &str) -> bool {
    let chunks = kb.store().vector_count().max(1);
    let cap = (chunks as f64 * COMMON_HEADING_SHARE).ceil() as usize + 1;
    kb.store()
        .term_chunks(heading, cap)
        .map(|n| n >= cap)
        .unwrap_or(false)
}

/// Routes by rules where they decide (a request naming a heading that identifies one
/// place; a section the evidence clearly prefers); else leaves the nearly tied sections
/// to the model.
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
    if let Some((section, subsection)) = named_target(&tree, question, &|h| common_in(kb, h)) {
        report.decision = "fast path: the request names a heading that identifies one place".into();
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
    let hits = search(kb, question, PLACE_CHUNKS, SearchMode::Hybrid)?;
    let places = places::rank(&tree, &hits);
    let tied = places::near_ties(&places, NEAR_TIE, MOST_TIED);
    let Some(best) = tied.first() else {
        bail!("no retrieved section of the knowledge base can be navigated to; search for the question instead");
    };
    if tied.len() == 1 {
        let usage = best
            .instead_of
            .as_ref()
            .map(|h| format!("; its page's {h}, which only lists usage, matched first"))
            .unwrap_or_default();
        report.decision = format!(
            "retrieval: {} holds the most evidence ({:.4}, next {:.4}){usage}",
            best.label(),
            best.score,
            places.get(1).map_or(0.0, |p| p.score)
        );
        return land_on(&tree, best, NavigatedBy::Retrieval, report).map(Step::Done);
    }
    report.decision = format!("LLM between {} sections whose evidence ties", tied.len());
    let tied = tied
        .iter()
        .map(|p| {
            (
                p.clone(),
                crate::kb::parse::excerpt(&hits[p.best].text, 300),
            )
        })
        .collect();
    Ok(Step::NeedsLlm(PendingNavigation {
        tree,
        tied,
        question: question.to_string(),
        report,
    }))
}

/// The tool arguments that reach a place.
fn arguments_of(place: &Place) -> (String, Option<String>, Vec<String>) {
    (
        place.path[0].clone(),
        place.path.get(1).cloned(),
        place
            .path
            .get(2..)
            .map(<[String]>::to_vec)
            .unwrap_or_default(),
    )
}

fn land_on(
    tree: &HeadingTree,
    place: &Place,
    by: NavigatedBy,
    report: Report,
) -> Result<(Navigation, Report)> {
    let (section, subsection, path) = arguments_of(place);
    land(tree, &section, subsection, &path, by, report)
}

impl Pending for PendingNavigation {
    type Output = (Navigation, Report);

    fn finish(self, llm: &mut Llm) -> Result<(Navigation, Report)> {
        let PendingNavigation {
            tree,
            tied,
            question,
            mut report,
        } = self;
        // One branch per tied place: its exact tool arguments.
        let arguments: Vec<Value> = tied
            .iter()
            .map(|(p, _)| {
                let (section, sub, path) = arguments_of(p);
                tool_call(&section, sub.as_deref(), &path)["arguments"].clone()
            })
            .collect();
        let branches: Vec<Value> = arguments
            .iter()
            .map(|args| {
                let props: serde_json::Map<String, Value> = args
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), json!({"const": v})))
                    .collect();
                let required: Vec<&String> = props.keys().collect();
                json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
            })
            .collect();
        let listing: Vec<String> = tied
            .iter()
            .map(|(p, text)| {
                let (section, sub, path) = arguments_of(p);
                let mut args = format!("section {section:?}");
                if let Some(sub) = sub {
                    args.push_str(&format!(", subsection {sub:?}"));
                }
                if !path.is_empty() {
                    args.push_str(&format!(", path {path:?}"));
                }
                format!("- {args} ({}):\n  {text}", p.file)
            })
            .collect();
        let user = format!(
            "Sections that may hold the answer, each with a passage from it:\n{}\n\nUser: {question}\n\
             Choose the section whose passage answers the user.",
            listing.join("\n")
        );
        let v = llm_object(llm, SYSTEM, &user, json!({"anyOf": branches}), &mut report)?;
        // The schema admits only these objects; the first is the evidence's own choice.
        let chosen = arguments
            .iter()
            .position(|a| *a == v)
            .map_or(&tied[0].0, |i| &tied[i].0);
        report
            .decision
            .push_str(&format!("; chose {}", chosen.label()));
        land_on(&tree, chosen, NavigatedBy::Llm, report)
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
    the one section whose passage answers what the user asks.";

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::*;

    fn node(file: &str, path: &[&str]) -> Node {
        Node {
            file: file.into(),
            anchor: crate::kb::parse::slugify(path.last().unwrap()),
            section_path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The seed's example tree.
    pub(super) fn seed_tree() -> HeadingTree {
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
            titled: HashMap::new(),
        }
    }

    fn doc(file: &str, title: &str, paths: &[&[&str]]) -> DocHeadings {
        DocHeadings {
            file: file.into(),
            title: title.into(),
            headings: paths
                .iter()
                .map(|p| (p.iter().map(|s| s.to_string()).collect(), String::new()))
                .collect(),
        }
    }

    #[test]
    fn documents_with_several_or_taken_top_headings_sit_under_their_titles() {
        let t = HeadingTree::of(vec![
            doc(
                "a.html",
                "pg_dump",
                &[&["Synopsis"], &["Options"], &["Options", "-a"]],
            ),
            doc("b.html", "pg_restore", &[&["Synopsis"], &["Options"]]),
            doc(
                "c.html",
                "Intro",
                &[&["Introduction"], &["Introduction", "Scope"]],
            ),
            doc("d.html", "Intro", &[&["Introduction"]]),
        ]);
        let names: Vec<&str> = t.sections.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["pg_dump", "pg_restore", "Introduction", "Intro"]);
        // Both reference pages keep their Options, one level down.
        let (node, fell) = t.resolve("pg_restore", Some("Options"), &[]).unwrap();
        assert_eq!((node.file.as_str(), fell), ("b.html", false));
        let (deep, _) = t
            .resolve("pg_dump", Some("Options"), &["-a".into()])
            .unwrap();
        assert_eq!(deep.section_path, ["pg_dump", "Options", "-a"]);
        assert_eq!(
            t.path_of("b.html", &["Options".into()]),
            ["pg_restore", "Options"]
        );
        // A page whose H1 is taken goes under its title; a second such title is told apart
        // by its file.
        assert_eq!(
            t.path_of("c.html", &["Introduction".into()]),
            ["Introduction"]
        );
        assert_eq!(t.titled["d.html"], "Intro");
        let e = HeadingTree::of(vec![
            doc("x.html", "Intro", &[&["A"], &["B"]]),
            doc("y.html", "Intro", &[&["A"], &["B"]]),
        ]);
        assert_eq!(e.titled["y.html"], "Intro (y.html)");
    }

    #[test]
    fn the_tool_definition_lists_the_tree() {
        let t = seed_tree();
        let (n, fell) = t.resolve("Deployment Guide", None, &[]).unwrap();
        assert_eq!((n.file.as_str(), fell), ("deploy.md", false));
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
