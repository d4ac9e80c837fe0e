//! Word documents (DOCX: a zip of OOXML parts, read with `zip` and `quick-xml`). Headings
//! come from paragraph styles: a style whose built-in name is "heading N" (the name is
//! English in every locale; the style id is not) or that carries an outline level, or an
//! outline level on the paragraph itself; "Title" is the document's title. The body
//! becomes the Markdown of `blocks`: list paragraphs (numbered, or in a list style) are
//! "- " items, tables are pipe tables (the first row the header), consecutive paragraphs
//! in a code style ("Code", "HTML Preformatted", "Source…", "Macro Text") one code
//! block; tabs and line breaks are kept.

use std::collections::HashMap;
use std::io::Read;

use anyhow::{anyhow, bail, Context, Result};
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::blocks::MarkdownWriter;
use super::{collapse_ws, heading_section, Anchors, DocKind, HeadingStack, ParsedDoc, Section};

/// Largest XML part read (a zip can claim or inflate to anything).
pub(super) const MAX_PART_BYTES: u64 = 64 * 1024 * 1024;

/// One part of the package as text; `None` when the package does not have it.
pub(super) fn part(
    zip: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    name: &str,
) -> Result<Option<String>> {
    let file = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(anyhow!("{name}: {e}")),
    };
    let mut text = String::new();
    file.take(MAX_PART_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("{name} is not readable UTF-8 XML"))?;
    if text.len() as u64 > MAX_PART_BYTES {
        bail!("{name} is larger than {} MiB", MAX_PART_BYTES >> 20);
    }
    Ok(Some(text))
}

pub(super) fn attr(e: &BytesStart, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// What the document's paragraph styles mean here.
#[derive(Default)]
struct Styles {
    /// Heading level (1–6) by style id.
    levels: HashMap<String, u8>,
    /// Styles that are the document's title.
    titles: Vec<String>,
    /// List styles (numbered in the style, or named "List …").
    lists: Vec<String>,
    /// Code styles, by name.
    code: Vec<String>,
}

fn read_styles(styles_xml: &str) -> Styles {
    let mut levels = HashMap::new();
    let mut titles = Vec::new();
    let mut lists = Vec::new();
    let mut code = Vec::new();
    let mut reader = Reader::from_str(styles_xml);
    let mut current: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "style" => current = attr(&e, "styleId"),
                "name" => {
                    if let (Some(id), Some(name)) = (&current, attr(&e, "val")) {
                        let name = name.to_ascii_lowercase();
                        if let Some(n) = name.strip_prefix("heading ") {
                            if let Ok(n) = n.trim().parse::<u8>() {
                                levels.insert(id.clone(), n.clamp(1, 6));
                            }
                        } else if name == "title" {
                            titles.push(id.clone());
                        } else if name.starts_with("list") {
                            lists.push(id.clone());
                        } else if ["code", "preformatted", "source", "macro"]
                            .iter()
                            .any(|w| name.contains(w))
                        {
                            code.push(id.clone());
                        }
                    }
                }
                "numPr" => {
                    if let Some(id) = &current {
                        lists.push(id.clone());
                    }
                }
                "outlineLvl" => {
                    if let (Some(id), Some(v)) = (&current, attr(&e, "val")) {
                        if let Ok(n) = v.parse::<u8>() {
                            if n < 9 {
                                levels.entry(id.clone()).or_insert((n + 1).min(6));
                            }
                        }
                    }
                }
                _ => {}
            },
            Ok(Event::End(e)) if e.local_name().as_ref() == "style" => current = None,
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    Styles {
        levels,
        titles,
        lists,
        code,
    }
}

/// One paragraph as read: its text, heading level or title, list marker.
#[derive(Default)]
struct Paragraph {
    text: String,
    style: Option<String>,
    outline: Option<u8>,
    listed: bool,
    /// A table row's cells.
    cells: Option<Vec<String>>,
}

/// The body's paragraphs in order; a table row becomes one paragraph (nested tables
/// write into the outer row's cell).
fn paragraphs(document_xml: &str) -> Result<Vec<Paragraph>> {
    let mut out = Vec::new();
    let mut reader = Reader::from_str(document_xml);
    let mut para: Option<Paragraph> = None;
    let mut row: Option<Vec<String>> = None;
    let mut row_depth = 0usize;
    let mut in_text = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| anyhow!("word/document.xml is not well-formed XML: {e}"))?;
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e), false),
            Event::Empty(e) => (Some(e), true),
            _ => (None, false),
        };
        if let Some(e) = start {
            match e.local_name().as_ref() {
                "tr" if !empty => {
                    row_depth += 1;
                    if row_depth == 1 {
                        row = Some(Vec::new());
                    }
                }
                "tc" if row_depth == 1 => {
                    if let Some(cells) = row.as_mut() {
                        cells.push(String::new());
                    }
                }
                "p" if !empty => para = Some(Paragraph::default()),
                "pStyle" => {
                    if let Some(p) = para.as_mut() {
                        p.style = attr(e, "val");
                    }
                }
                "outlineLvl" => {
                    if let (Some(p), Some(v)) = (para.as_mut(), attr(e, "val")) {
                        p.outline = v.parse::<u8>().ok().filter(|n| *n < 9);
                    }
                }
                "numPr" => {
                    if let Some(p) = para.as_mut() {
                        p.listed = true;
                    }
                }
                "t" => in_text = !empty,
                "tab" => push_text(&mut para, "\t"),
                "br" | "cr" => push_text(&mut para, "\n"),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Text(t) if in_text => push_text(&mut para, &t.xml10_content()),
            Event::GeneralRef(r) if in_text => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match r.as_ref() {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                };
                if let Some(c) = c {
                    push_text(&mut para, c.encode_utf8(&mut [0; 4]));
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => match (para.take(), row.as_mut()) {
                    // A cell's paragraphs join into the cell.
                    (Some(p), Some(cells)) => {
                        let text = collapse_ws(&p.text);
                        if let Some(cell) = cells.last_mut().filter(|_| !text.is_empty()) {
                            if !cell.is_empty() {
                                cell.push(' ');
                            }
                            cell.push_str(&text);
                        }
                    }
                    (Some(p), None) => out.push(p),
                    (None, _) => {}
                },
                "tr" => {
                    row_depth = row_depth.saturating_sub(1);
                    if row_depth == 0 {
                        let cells: Vec<String> = row
                            .take()
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|c| !c.is_empty())
                            .collect();
                        if !cells.is_empty() {
                            out.push(Paragraph {
                                text: cells.join(" | "),
                                cells: Some(cells),
                                ..Paragraph::default()
                            });
                        }
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

fn push_text(para: &mut Option<Paragraph>, s: &str) {
    if let Some(p) = para.as_mut() {
        p.text.push_str(s);
    }
}

pub fn parse(bytes: &[u8], stem: &str) -> Result<ParsedDoc> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| anyhow!("not a DOCX file (not a readable zip: {e})"))?;
    let document = part(&mut zip, "word/document.xml")?
        .ok_or_else(|| anyhow!("not a DOCX file (no word/document.xml)"))?;
    let styles = part(&mut zip, "word/styles.xml")?
        .map(|s| read_styles(&s))
        .unwrap_or_default();
    let core_title = part(&mut zip, "docProps/core.xml")?.and_then(|core| {
        let start = core.find("<dc:title>")? + "<dc:title>".len();
        let end = core[start..].find("</dc:title>")? + start;
        Some(collapse_ws(&core[start..end])).filter(|t| !t.is_empty())
    });
    let mut sections: Vec<Section> = Vec::new();
    let mut preamble = String::new();
    let mut body = Body::default();
    let mut stack = HeadingStack::default();
    let mut anchors = Anchors::default();
    let mut title_para: Option<String> = None;
    for p in paragraphs(&document)? {
        let style = p.style.as_deref().unwrap_or_default();
        let level = p
            .outline
            .map(|n| (n + 1).min(6))
            .or_else(|| styles.levels.get(style).copied());
        let text = p.text.trim();
        if text.is_empty() {
            continue;
        }
        if styles.titles.iter().any(|t| t == style) && title_para.is_none() {
            title_para = Some(collapse_ws(text));
            continue;
        }
        let text_of_heading = text;
        match level {
            Some(level) => {
                let text = std::mem::take(&mut body).finish();
                match sections.last_mut() {
                    Some(s) => s.text = text,
                    None => preamble = text,
                }
                sections.push(heading_section(
                    &mut stack,
                    &mut anchors,
                    level,
                    collapse_ws(text_of_heading),
                ));
            }
            None => {
                let block = if let Some(cells) = &p.cells {
                    Block::Row(cells)
                } else if styles.code.iter().any(|c| c == style) {
                    Block::Code(&p.text)
                } else if p.listed || styles.lists.iter().any(|l| l == style) {
                    Block::Item(text)
                } else {
                    Block::Paragraph(text)
                };
                body.push(block);
            }
        }
    }
    let text = body.finish();
    match sections.last_mut() {
        Some(s) => s.text = text,
        None => preamble = text,
    }
    let title = core_title
        .or(title_para)
        .or_else(|| sections.first().map(|s| s.heading.clone()))
        .unwrap_or_else(|| stem.to_string());
    let preamble = preamble.trim().to_string();
    let heading = title.clone();
    Ok(super::with_preamble(
        DocKind::Docx,
        title,
        sections,
        preamble,
        heading,
        &mut anchors,
    ))
}

enum Block<'a> {
    Paragraph(&'a str),
    Item(&'a str),
    Row(&'a [String]),
    /// One line of a code block (consecutive code paragraphs are one block).
    Code(&'a str),
}

/// A section's body as it is read, paragraph by paragraph.
#[derive(Default)]
struct Body {
    md: MarkdownWriter,
    code: Option<String>,
    in_table: bool,
    in_list: bool,
}

impl Body {
    fn push(&mut self, block: Block) {
        if !matches!(block, Block::Code(_)) {
            if let Some(code) = self.code.take() {
                self.md.code_block("", &code);
            }
        }
        if self.in_table && !matches!(block, Block::Row(_)) {
            self.md.table_end();
            self.in_table = false;
        }
        if self.in_list && !matches!(block, Block::Item(_)) {
            self.md.block_break();
            self.in_list = false;
        }
        match block {
            Block::Paragraph(text) => {
                self.md.text(text);
                self.md.block_break();
            }
            Block::Item(text) => {
                if !self.in_list {
                    self.md.block_break();
                    self.in_list = true;
                }
                self.md.item_start("- ");
                self.md.text(text);
                self.md.item_end();
            }
            Block::Row(cells) => {
                if !self.in_table {
                    self.md.table_start();
                    self.in_table = true;
                }
                for cell in cells {
                    self.md.cell_start();
                    self.md.text(cell);
                    self.md.cell_end();
                }
                self.md.row_end();
            }
            Block::Code(line) => {
                let code = self.code.get_or_insert_with(String::new);
                code.push_str(line);
                code.push('\n');
            }
        }
    }

    fn finish(mut self) -> String {
        self.push(Block::Paragraph(""));
        self.md.finish()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A DOCX package with these parts (stored, uncompressed).
    pub(crate) fn package(parts: &[(&str, &str)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, text) in parts {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    fn para(style: Option<&str>, text: &str) -> String {
        let ppr = style
            .map(|s| format!(r#"<w:pPr><w:pStyle w:val="{s}"/></w:pPr>"#))
            .unwrap_or_default();
        format!(r#"<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
    }

    pub(crate) fn runbook() -> Vec<u8> {
        let body = [
            para(Some("Title"), "Restarting the gateway"),
            para(None, "Read this first."),
            para(Some("Heading1"), "Before you start"),
            para(None, "Check the queue &amp; the &lt;gateway&gt; logs."),
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Drain traffic</w:t></w:r></w:p>"#.to_string(),
            para(Some("berschrift2"), "Commands"),
            r#"<w:p><w:r><w:t>Run</w:t></w:r><w:r><w:tab/><w:t>gatewayctl restart --grace 30s</w:t></w:r></w:p>"#.to_string(),
            r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Setting</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Value</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>grace</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>30s</w:t></w:r></w:p><w:p><w:r><w:t>(default)</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.to_string(),
            para(Some("Heading1"), "After"),
            para(None, "Close the ticket."),
        ]
        .concat();
        let document = format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
        );
        let styles = r#"<?xml version="1.0"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style><w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style></w:styles>"#;
        package(&[
            ("[Content_Types].xml", "<Types/>"),
            ("word/document.xml", &document),
            ("word/styles.xml", styles),
        ])
    }

    #[test]
    fn headings_come_from_styles_and_text_keeps_lists_tabs_and_tables() {
        let doc = parse(&runbook(), "restart").unwrap();
        assert_eq!(doc.kind, DocKind::Docx);
        assert_eq!(doc.title, "Restarting the gateway");
        let heads: Vec<(&str, u8, Vec<String>)> = doc
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.level, s.path.clone()))
            .collect();
        assert_eq!(
            heads,
            [
                (
                    "Restarting the gateway",
                    0,
                    vec!["Restarting the gateway".to_string()]
                ),
                ("Before you start", 1, vec!["Before you start".to_string()]),
                (
                    "Commands",
                    2,
                    vec!["Before you start".to_string(), "Commands".to_string()]
                ),
                ("After", 1, vec!["After".to_string()]),
            ]
        );
        assert_eq!(doc.sections[0].text, "Read this first.");
        assert_eq!(
            doc.sections[1].text,
            "Check the queue & the <gateway> logs.\n\n- Drain traffic"
        );
        assert_eq!(
            doc.sections[2].text,
            "Run\tgatewayctl restart --grace 30s\n\n| Setting | Value |\n| --- | --- |\n| grace | 30s (default) |"
        );
        assert_eq!(doc.sections[2].anchor, "commands");
    }

    #[test]
    fn what_is_not_a_docx_is_refused_with_the_reason() {
        let err = parse(b"PK\x03\x04 not really", "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a DOCX file"), "{err}");
        let empty = package(&[("[Content_Types].xml", "<Types/>")]);
        let err = parse(&empty, "x").unwrap_err().to_string();
        assert!(err.contains("word/document.xml"), "{err}");
        let broken = package(&[("word/document.xml", "<w:document><w:body><w:p>")]);
        // Unclosed elements at the end: the text read so far is kept, nothing panics.
        assert!(parse(&broken, "x").is_ok());
    }
}
