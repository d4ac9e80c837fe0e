//! The Reader's view of a document, and the links from an answer's citations into it.

use serde_json::{json, Value};

use super::ServiceError;
use crate::kb::search::Hit;
use crate::kb::KnowledgeBase;
use crate::protocols::AnswerFormat;

/// A document as HTML built from its stored sections (plain text, escaped), so every
/// heading carries the anchor that citations and navigation point at.
pub fn render(kb: &KnowledgeBase, path: &str) -> Result<Value, ServiceError> {
    let (doc, sections) = kb.store.document_sections(path)?.ok_or_else(|| {
        ServiceError::NotFound(format!("no document {path:?} in the knowledge base"))
    })?;
    let mut html = String::new();
    let mut outline = Vec::new();
    let mut ids = std::collections::HashSet::new();
    let mut page = None;
    for s in &sections {
        if s.page.is_some() && s.page != page {
            page = s.page;
            let id = format!("pdfpage_{}", s.page.unwrap_or(1));
            if ids.insert(id.clone()) {
                html.push_str(&format!(
                    "<div class=\"pdfpage\" id=\"{id}\">Page {}</div>\n",
                    s.page.unwrap_or(1)
                ));
            }
        }
        let level = s.level.clamp(1, 6);
        if !s.heading.is_empty() && ids.insert(s.anchor.clone()) {
            html.push_str(&format!(
                "<h{level} id=\"{}\">{}</h{level}>\n",
                escape(&s.anchor),
                escape(&s.heading)
            ));
            outline.push(
                json!({"anchor": s.anchor, "text": s.heading, "level": level, "page": s.page}),
            );
        }
        for para in s
            .text
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            html.push_str(&format!("<p>{}</p>\n", escape(para)));
        }
    }
    Ok(json!({
        "path": doc.path, "title": doc.title, "format": doc.kind,
        "outline": outline, "html": html,
    }))
}

/// One link per cited chunk (rag) or source (navigator): the file, the anchor to scroll
/// to, the page for PDFs.
pub fn citations(
    kb: &KnowledgeBase,
    format: AnswerFormat,
    response: &Value,
    hits: &[Hit],
) -> Vec<Value> {
    let link = |label: String, h: &Hit| json!({"label": label, "file": h.file, "anchor": h.anchor, "page": h.page, "id": h.id});
    let mut out = Vec::new();
    if format == AnswerFormat::Rag {
        for c in response["retrieved_chunks"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let id = c["id"].as_str().unwrap_or_default();
            if let Some(h) = hits.iter().find(|h| h.id == id) {
                out.push(link(format!("{} › {}", h.file, h.section), h));
            }
        }
    } else {
        for s in response["sources"].as_array().into_iter().flatten() {
            let (file, section) = (
                s["file"].as_str().unwrap_or_default(),
                s["section"].as_str().unwrap_or_default(),
            );
            let label = format!("{file} › {section}");
            if let Some(h) = hits.iter().find(|h| h.file == file && h.section == section) {
                out.push(link(label, h));
            } else if let Ok(Some((_, sections))) = kb.store.document_sections(file) {
                let anchor = sections
                    .iter()
                    .find(|x| x.heading == section)
                    .map(|x| x.anchor.clone());
                out.push(json!({"label": label, "file": file, "anchor": anchor, "page": null}));
            }
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
