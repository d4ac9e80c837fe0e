//! The Reader's view of a document, and the links from an answer's citations into it.

use serde_json::{json, Value};

use super::ServiceError;
use crate::kb::parse::followable;
use crate::kb::search::Hit;
use crate::kb::KnowledgeBase;
use crate::protocols::AnswerFormat;

/// A document as HTML built from its stored sections, so every heading carries the anchor
/// that citations and navigation point at. A section's Markdown (Markdown, HTML and DOCX
/// sources) is rendered as a document (`markdown_html`); PDF and plain text are their
/// extracted paragraphs, escaped.
pub fn render(kb: &KnowledgeBase, path: &str) -> Result<Value, ServiceError> {
    let (doc, sections) = kb.store().document_sections(path)?.ok_or_else(|| {
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
        let as_written = match doc.kind.as_str() {
            "pdf" | "image" => true,
            // A `.txt` file's sections are Markdown (`parse::is_prose_text`).
            "text" => !crate::kb::parse::is_prose_text(std::path::Path::new(&doc.path)),
            _ => false,
        };
        if as_written {
            for para in s
                .text
                .split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
            {
                html.push_str(&format!("<p>{}</p>\n", escape(para)));
            }
        } else {
            html.push_str(&markdown_html(&s.text));
        }
    }
    Ok(json!({
        "path": doc.path, "title": doc.title, "format": doc.kind,
        "outline": outline, "html": html,
    }))
}

/// The largest PDF the Reader is sent (base64 in JSON, so both shells share the op).
const MAX_PDF_BYTES: u64 = 64 << 20;

/// A PDF's bytes for the Reader's page view. Only a document of the knowledge base, only
/// a PDF, and only while its bytes are those ingested (else the cited pages could be
/// others): a changed file is refused with the fix.
pub fn pdf_file(kb: &KnowledgeBase, path: &str) -> Result<Value, ServiceError> {
    use base64::Engine;
    let doc = kb.store().document_source(path)?.ok_or_else(|| {
        ServiceError::NotFound(format!("no document {path:?} in the knowledge base"))
    })?;
    let file = std::path::Path::new(&doc.root).join(&doc.path);
    let is_pdf = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pdf"));
    if !is_pdf {
        return Err(ServiceError::BadRequest(format!(
            "{path} is not a PDF; its text is at /api/document"
        )));
    }
    let gone = |e: std::io::Error| {
        ServiceError::NotFound(format!(
            "{} cannot be read ({e}); it was moved or deleted since it was ingested. Run \
             `sextant ingest` on its folder again.",
            file.display()
        ))
    };
    let size = std::fs::metadata(&file).map_err(gone)?.len();
    if size > MAX_PDF_BYTES {
        return Err(ServiceError::BadRequest(format!(
            "{} is {} MB, more than the Reader's {} MB; its text is at /api/document",
            file.display(),
            size >> 20,
            MAX_PDF_BYTES >> 20
        )));
    }
    let bytes = std::fs::read(&file).map_err(gone)?;
    let stored = doc.hash.trim_end_matches("-incomplete");
    if crate::kb::ingest::content_hash(&doc.path, &bytes) != stored {
        return Err(ServiceError::Stale(format!(
            "{} changed since it was ingested, so its pages may not be the cited ones. Run \
             `sextant ingest` on its folder again (or add the folder in the Library).",
            file.display()
        )));
    }
    Ok(json!({
        "path": doc.path,
        "bytes": bytes.len(),
        "base64": base64::engine::general_purpose::STANDARD.encode(&bytes),
    }))
}

/// A section's Markdown as HTML. Nothing of the source reaches the page as markup: raw
/// HTML is shown as text, a link whose target is not `followable` (a `javascript:` or
/// `data:` URL) keeps only its text, and an image is its alt text (the Reader loads
/// nothing, local or remote, that the CSP would have to refuse).
pub fn markdown_html(md: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(
        md,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_DEFINITION_LIST,
    )
    .filter_map(|event| match event {
        Event::Html(t) | Event::InlineHtml(t) => Some(Event::Text(t)),
        Event::Start(Tag::Link { ref dest_url, .. }) => {
            let keep = followable(dest_url);
            links.push(keep);
            keep.then_some(event)
        }
        Event::End(TagEnd::Link) => links.pop().unwrap_or(false).then_some(event),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        other => Some(other),
    });
    let mut html = String::with_capacity(md.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// One link per cited chunk (rag) or source (navigator): the file, the anchor to scroll
/// to, the page for PDFs.
pub fn citations(
    kb: &KnowledgeBase,
    format: AnswerFormat,
    response: &Value,
    hits: &[Hit],
) -> Vec<Value> {
    // A PDF citation also carries the cited chunk's text, which the Reader highlights on
    // the page.
    let link = |label: String, h: &Hit| {
        json!({"label": label, "file": h.file, "anchor": h.anchor, "page": h.page, "id": h.id,
               "quote": h.page.map(|_| h.text.as_str())})
    };
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
            } else if let Ok(Some((_, sections))) = kb.store().document_sections(file) {
                let anchor = sections
                    .iter()
                    .find(|x| x.heading == section)
                    .map(|x| x.anchor.clone());
                out.push(json!({"label": label, "file": file, "anchor": anchor, "page": null}));
            }
        }
    }
    distinct_links(out)
}

/// Citations that open the same place (two chunks of one section), the first kept: a
/// person reads "Sources" as the places to look, not as the retrieval's chunks. A PDF
/// page's citations differ by the passage they mark and all stay.
fn distinct_links(links: Vec<Value>) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    links
        .into_iter()
        .filter(|c| {
            seen.insert((
                c["file"].to_string(),
                c["anchor"].to_string(),
                c["page"].to_string(),
                c["quote"].to_string(),
            ))
        })
        .collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_of_one_place_are_listed_once() {
        let link = |file: &str, anchor: &str, page: Option<u32>, quote: Option<&str>| {
            json!({"label": format!("{file} › {anchor}"), "file": file, "anchor": anchor,
                   "page": page, "quote": quote})
        };
        let links = vec![
            link("ops.md", "rollback", None, None),
            link("ops.md", "rollback", None, None),
            link("ops.md", "when", None, None),
            link("guide.pdf", "", Some(3), Some("first passage")),
            link("guide.pdf", "", Some(3), Some("second passage")),
            link("guide.pdf", "", Some(3), Some("first passage")),
            link("ops.md", "rollback", None, None),
        ];
        let kept: Vec<String> = distinct_links(links)
            .iter()
            .map(|c| format!("{} {} {}", c["file"], c["anchor"], c["quote"]))
            .collect();
        assert_eq!(
            kept,
            [
                r#""ops.md" "rollback" null"#,
                r#""ops.md" "when" null"#,
                r#""guide.pdf" "" "first passage""#,
                r#""guide.pdf" "" "second passage""#,
            ]
        );
    }

    #[test]
    fn markdown_renders_as_a_document_and_nothing_of_the_source_runs() {
        let md = "Roll back with `kubectl rollout undo`:\n\n```sh\nkubectl rollout undo deploy/web\n```\n\n\
                  - one\n- two\n\n| Flag | Meaning |\n| --- | --- |\n| -f | force |\n\n\
                  Text <script>alert(1)</script> [bad](javascript:alert(1)) [ok](other.md#x) \
                  ![logo](https://example.org/logo.png)";
        let html = markdown_html(md);
        for expected in [
            "<code>kubectl rollout undo</code>",
            "<pre><code class=\"language-sh\">kubectl rollout undo deploy/web\n</code></pre>",
            "<li>one</li>",
            "<th>Flag</th>",
            "<td>-f</td>",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
            "<a href=\"other.md#x\">ok</a>",
        ] {
            assert!(html.contains(expected), "{expected} not in {html}");
        }
        assert!(
            !html.contains("<script") && !html.contains("javascript:"),
            "{html}"
        );
        assert!(!html.contains("<img") && html.contains("logo"), "{html}");
    }
}
