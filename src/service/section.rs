//! One section of a document as text with its structure (headings as markdown, the
//! outline with anchors and pages), and following a `navigate_to_section` call to the
//! section it names. The MCP server's `read_section` and `navigate_to_section` tools and
//! `GET /api/section` are these.

use serde_json::{json, Value};

use super::ServiceError;
use crate::constrain::validate::SchemaValidator;
use crate::kb::store::SectionRow;
use crate::kb::KnowledgeBase;
use crate::protocols::section_tool::HeadingTree;

/// A document's sections: all of them, the one at `anchor` with its subsections, or those
/// on `page` (PDF).
pub fn read(
    kb: &KnowledgeBase,
    path: &str,
    anchor: Option<&str>,
    page: Option<u32>,
) -> Result<Value, ServiceError> {
    let (doc, sections) = kb.store().document_sections(path)?.ok_or_else(|| {
        ServiceError::NotFound(format!(
            "no document {path:?} in the knowledge base; the documents are listed by GET /api/kb (MCP: resources/list)"
        ))
    })?;
    let paths = heading_paths(&sections);
    let range = match (anchor.filter(|a| !a.is_empty()), page) {
        (Some(_), Some(_)) => {
            return Err(ServiceError::BadRequest(
                "give an anchor or a page, not both".into(),
            ))
        }
        (Some(anchor), None) => {
            let start = sections
                .iter()
                .position(|s| s.anchor == anchor)
                .ok_or_else(|| {
                    let known: Vec<&str> = sections
                        .iter()
                        .filter(|s| !s.anchor.is_empty())
                        .take(12)
                        .map(|s| s.anchor.as_str())
                        .collect();
                    ServiceError::NotFound(format!(
                        "no section with anchor {anchor:?} in {path:?}; its anchors include: {}",
                        known.join(", ")
                    ))
                })?;
            // A section runs to the next heading of its level or above; the preamble
            // (level 0) is only itself.
            let level = sections[start].level;
            let end = match level {
                0 => start + 1,
                _ => sections[start + 1..]
                    .iter()
                    .position(|s| s.level <= level && !s.heading.is_empty())
                    .map_or(sections.len(), |n| start + 1 + n),
            };
            start..end
        }
        (None, Some(page)) => {
            let on_page: Vec<usize> = (0..sections.len())
                .filter(|&i| sections[i].page == Some(page))
                .collect();
            match (on_page.first(), on_page.last()) {
                (Some(&a), Some(&b)) => a..b + 1,
                _ => {
                    let last = sections.iter().filter_map(|s| s.page).max();
                    return Err(ServiceError::NotFound(match last {
                        Some(n) => format!("{path:?} has no page {page}; its pages are 1–{n}"),
                        None => format!(
                            "{path:?} has no pages (it is not a PDF); name a section by its anchor"
                        ),
                    }));
                }
            }
        }
        (None, None) => 0..sections.len(),
    };
    let first = &sections[range.start.min(sections.len().saturating_sub(1))];
    let mut text = String::new();
    let mut outline = Vec::new();
    for s in &sections[range.clone()] {
        if !s.heading.is_empty() {
            let level = s.level.clamp(1, 6) as usize;
            text.push_str(&format!("{} {}\n\n", "#".repeat(level), s.heading));
            outline.push(
                json!({"heading": s.heading, "anchor": s.anchor, "level": s.level, "page": s.page}),
            );
        }
        let body = s.text.trim();
        if !body.is_empty() {
            text.push_str(body);
            text.push_str("\n\n");
        }
    }
    let whole = range == (0..sections.len());
    Ok(json!({
        "file": doc.path,
        "title": doc.title,
        "format": doc.kind,
        "heading": if whole { doc.title.clone() } else { first.heading.clone() },
        "section_path": if whole { Vec::new() } else { paths[range.start].clone() },
        "anchor": if whole { None } else { Some(&first.anchor) },
        "page": page.or(if whole { None } else { first.page }),
        "outline": outline,
        "text": text.trim_end(),
    }))
}

/// Each section's heading path (its own heading last), from the levels in reading order.
/// The preamble (level 0, text before the first heading) has an empty path.
fn heading_paths(sections: &[SectionRow]) -> Vec<Vec<String>> {
    let mut stack: Vec<(u32, String)> = Vec::new();
    sections
        .iter()
        .map(|s| {
            if s.level > 0 && !s.heading.is_empty() {
                stack.retain(|(level, _)| *level < s.level);
                stack.push((s.level, s.heading.clone()));
            }
            stack.iter().map(|(_, h)| h.clone()).collect()
        })
        .collect()
}

/// Follows a `navigate_to_section` call: arguments checked against the tool's schema
/// (only real headings), then the section it lands on, read.
pub fn follow(kb: &KnowledgeBase, arguments: &Value) -> Result<Value, ServiceError> {
    let tree = HeadingTree::load(kb)?;
    if tree.sections.is_empty() {
        kb.require_chunks()?;
        return Err(ServiceError::NotFound(
            "the knowledge base has no headings to navigate to".into(),
        ));
    }
    let schema = &tree.tool_definition()["function"]["parameters"];
    SchemaValidator::new(schema)?
        .validate(arguments)
        .map_err(|e| {
            ServiceError::BadRequest(format!(
                "navigate_to_section arguments: {} (the tool's schema lists the real headings)",
                e.errors.join("; ")
            ))
        })?;
    let section = arguments["section"].as_str().unwrap_or_default();
    let subsection = arguments["subsection"].as_str();
    let path: Vec<String> = arguments["path"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect();
    let (node, fell_back) = tree
        .resolve(section, subsection, &path)
        .ok_or_else(|| ServiceError::NotFound(format!("no section {section:?}")))?;
    let mut out = read(kb, &node.file, Some(&node.anchor), None)?;
    out["call"] = arguments.clone();
    // The seed's fallback: a subsection that is not under the section lands on the section.
    out["fell_back_to_section"] = json!(fell_back);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(level: u32, heading: &str) -> SectionRow {
        SectionRow {
            level,
            heading: heading.into(),
            anchor: String::new(),
            page: None,
            text: String::new(),
        }
    }

    #[test]
    fn heading_paths_follow_levels_and_leave_out_the_preamble() {
        let rows = [
            row(0, "Title"),
            row(1, "A"),
            row(2, "A1"),
            row(3, "A1x"),
            row(2, "A2"),
            row(1, "B"),
        ];
        let paths = heading_paths(&rows);
        let want: [&[&str]; 6] = [
            &[],
            &["A"],
            &["A", "A1"],
            &["A", "A1", "A1x"],
            &["A", "A2"],
            &["B"],
        ];
        for (got, want) in paths.iter().zip(want) {
            assert_eq!(got, &want.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        }
    }
}
