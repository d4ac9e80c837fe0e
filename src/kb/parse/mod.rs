//! Turning files into sections: heading text exactly as written, the heading path from
//! the top, a stable anchor, the PDF page, and the section's body with its blocks kept.
//!
//! One module per format; each returns a `ParsedDoc`. Parsers never fail on content they
//! merely do not understand (a heading-less file is one section); they fail only when the
//! file cannot be read as its format at all (corrupt or encrypted PDF, binary data), and
//! the ingest then skips it with that reason.

mod blocks;
mod docx;
mod epub;
mod html;
mod markdown;
mod ocr;
mod pdf;
pub mod worker;

pub(crate) use blocks::fence_of;
pub use blocks::{code_fences, followable, is_table_rule, visible_text};
pub(crate) use html::is_admonition_title;

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    Markdown,
    Html,
    Pdf,
    Docx,
    Epub,
    Text,
    /// An image file, read with OCR (`ocr::parse_image`) when an ingest asks for images.
    Image,
}

impl DocKind {
    pub fn from_path(path: &Path) -> Option<DocKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdown" | "mkd" => DocKind::Markdown,
            "html" | "htm" | "xhtml" => DocKind::Html,
            "pdf" => DocKind::Pdf,
            "docx" => DocKind::Docx,
            "epub" => DocKind::Epub,
            "txt" | "text" | "rst" | "log" | "adoc" => DocKind::Text,
            "png" | "jpg" | "jpeg" | "tif" | "tiff" | "bmp" | "gif" | "webp" | "pnm" | "pgm"
            | "ppm" => DocKind::Image,
            _ => return None,
        })
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            DocKind::Markdown => "markdown",
            DocKind::Html => "html",
            DocKind::Pdf => "pdf",
            DocKind::Docx => "docx",
            DocKind::Epub => "epub",
            DocKind::Text => "text",
            DocKind::Image => "image",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Section {
    /// The most specific heading, exactly as written.
    pub heading: String,
    /// Heading texts from the top of the document down to this one.
    pub path: Vec<String>,
    /// 1–6 for headings; 0 for text before the first heading.
    pub level: u8,
    /// Slug for jumping to the section, unique within the document.
    pub anchor: String,
    /// 1-indexed PDF page; None for other formats.
    pub page: Option<u32>,
    /// The section's body without its heading: the regular Markdown of `blocks` for
    /// Markdown, HTML and DOCX; the extracted text for PDF and plain text.
    pub text: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ParsedDoc {
    pub kind: DocKind,
    /// Front-matter `title`, HTML `<title>`, PDF metadata title, or the first H1.
    pub title: String,
    pub sections: Vec<Section>,
    /// What of the file was not read, and why (scanned pages without OCR, …): the file
    /// is ingested, and the ingest summary lists these.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Largest file parsed, by default: beyond it a file is skipped with a warning.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

pub fn parse(path: &Path, bytes: &[u8]) -> Result<ParsedDoc> {
    let kind =
        DocKind::from_path(path).ok_or_else(|| anyhow::anyhow!("not a supported document type"))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    match kind {
        DocKind::Pdf => pdf::parse(bytes, &stem),
        DocKind::Docx => docx::parse(bytes, &stem),
        DocKind::Epub => epub::parse(bytes, &stem),
        DocKind::Image => {
            let text = ocr::parse_image(bytes)?;
            Ok(one_section(&text, path, DocKind::Image))
        }
        _ => {
            let text = decode_text(bytes)?;
            Ok(match kind {
                DocKind::Markdown => markdown::parse(&text, &stem),
                DocKind::Html => html::parse(&text, &stem),
                // Plain prose wrapped at a fixed width follows Markdown's own conventions
                // (blank lines between paragraphs, `===` / `---` under headings, `*`
                // items, indented literal blocks): read as Markdown, its paragraphs are
                // whole and its headings sections, where one section of printed lines
                // cut every wrapped sentence in two. reST, AsciiDoc and logs have
                // other conventions and stay one section as written.
                _ if is_prose_text(path) => ParsedDoc {
                    kind: DocKind::Text,
                    ..markdown::parse(&text, &file_name(path))
                },
                _ => one_section(&text, path, DocKind::Text),
            })
        }
    }
}

/// A `.txt` or `.text` file: prose, read (and shown in the Reader) as Markdown.
pub fn is_prose_text(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("txt") || e.eq_ignore_ascii_case("text"))
}

/// UTF-8 text (a BOM is dropped). Binary data is refused; invalid UTF-8 sequences in
/// otherwise textual data are replaced, so one bad byte does not lose a document.
fn decode_text(bytes: &[u8]) -> Result<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.contains(&0) {
        bail!("binary data (NUL bytes), not text");
    }
    Ok(match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let s = String::from_utf8_lossy(bytes).to_string();
            let bad = s.chars().filter(|c| *c == '\u{FFFD}').count();
            if bad * 20 > s.chars().count().max(1) {
                bail!("not UTF-8 text ({bad} invalid sequences)");
            }
            tracing::warn!("invalid UTF-8 replaced ({bad} sequences)");
            s
        }
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// Plain text (and an image's OCR text): one section named after the file.
fn one_section(text: &str, path: &Path, kind: DocKind) -> ParsedDoc {
    let name = file_name(path);
    ParsedDoc {
        kind,
        notes: Vec::new(),
        title: name.clone(),
        sections: vec![Section {
            heading: name.clone(),
            path: vec![name.clone()],
            level: 1,
            anchor: slugify(&name),
            page: None,
            text: text.trim().to_string(),
        }],
    }
}

/// GitHub-style heading slug: lowercase, letters/digits/spaces/hyphens kept, spaces to
/// hyphens.
pub fn slugify(heading: &str) -> String {
    let mut out = String::with_capacity(heading.len());
    for c in heading.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if c == ' ' || c == '-' || c == '_' {
            out.push(if c == '_' { '_' } else { '-' });
        }
    }
    if out.is_empty() {
        "section".into()
    } else {
        out
    }
}

/// Hands out unique anchors within one document: "setup", "setup-1", "setup-2", …; a
/// heading whose own slug is one of those ("Setup 1" after two "Setup"s) gets the next
/// free one, so no two sections (and no two chunk ids) of a document share an anchor.
#[derive(Default)]
pub(crate) struct Anchors {
    seen: HashMap<String, usize>,
    used: std::collections::HashSet<String>,
}

/// At most `n` characters of `s`, marked with "…" when cut (quotes in messages).
pub fn excerpt(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The document, its text before the first heading (all of it, when it has no headings)
/// made the first section, under `heading`: the text belongs to the document's title. A
/// paragraph there that only repeats the title is left out (SQLite's pages show theirs in
/// a box before the first heading: "VACUUM"): as a chunk of one word it matched its word in
/// every question and pushed the page's description out of the hits, and as a sentence
/// it was quoted as an answer.
pub(crate) fn with_preamble(
    kind: DocKind,
    title: String,
    mut sections: Vec<Section>,
    preamble: String,
    heading: String,
    anchors: &mut Anchors,
) -> ParsedDoc {
    let preamble = without_title(&preamble, &heading);
    if sections.is_empty() || !preamble.is_empty() {
        sections.insert(
            0,
            Section {
                anchor: anchors.unique(&heading),
                path: vec![heading.clone()],
                heading,
                level: 0,
                page: None,
                text: preamble,
            },
        );
    }
    ParsedDoc {
        kind,
        notes: Vec::new(),
        title,
        sections,
    }
}

/// A preamble without its paragraphs that only repeat its heading (the page title).
pub fn without_title(text: &str, heading: &str) -> String {
    let title = collapse_ws(heading).to_lowercase();
    let is_title = |block: &str| collapse_ws(block).to_lowercase() == title;
    if !text.split("\n\n").any(is_title) {
        return text.to_string();
    }
    let kept: Vec<&str> = text.split("\n\n").filter(|b| !is_title(b)).collect();
    kept.join("\n\n").trim().to_string()
}

impl Anchors {
    pub(crate) fn unique(&mut self, heading: &str) -> String {
        let base = slugify(heading);
        let n = self.seen.entry(base.clone()).or_insert(0);
        loop {
            let anchor = if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            *n += 1;
            if self.used.insert(anchor.clone()) {
                return anchor;
            }
        }
    }
}

/// Tracks the heading path while walking a document: a heading of level L replaces
/// everything at L and below.
#[derive(Default)]
pub(crate) struct HeadingStack {
    stack: Vec<(u8, String)>,
}

impl HeadingStack {
    pub(crate) fn push(&mut self, level: u8, heading: &str) -> Vec<String> {
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        self.stack.push((level, heading.to_string()));
        self.path()
    }
    pub(crate) fn path(&self) -> Vec<String> {
        self.stack.iter().map(|(_, h)| h.clone()).collect()
    }
}

/// The section a heading opens: its path from `stack`, a unique anchor, no text yet.
pub(crate) fn heading_section(
    stack: &mut HeadingStack,
    anchors: &mut Anchors,
    level: u8,
    heading: String,
) -> Section {
    Section {
        path: stack.push(level, &heading),
        anchor: anchors.unique(&heading),
        heading,
        level,
        page: None,
        text: String::new(),
    }
}

/// Collapses runs of whitespace in inline text (headings, HTML text) to single spaces.
pub(crate) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_github_style_and_unique_per_document() {
        assert_eq!(
            slugify("TLS Certificates & Rotation"),
            "tls-certificates--rotation"
        );
        assert_eq!(slugify("Step 3: Verify"), "step-3-verify");
        let mut a = Anchors::default();
        assert_eq!(a.unique("Setup"), "setup");
        assert_eq!(a.unique("Setup"), "setup-1");
        assert_eq!(a.unique("setup"), "setup-2");
        // A heading whose own slug was handed out already (apache's manual has such).
        assert_eq!(a.unique("Setup 1"), "setup-1-1");
        assert_eq!(a.unique("Setup-3"), "setup-3");
        assert_eq!(a.unique("Setup"), "setup-4");
    }

    #[test]
    fn heading_stack_replaces_same_and_deeper_levels() {
        let mut s = HeadingStack::default();
        s.push(1, "Guide");
        s.push(2, "Install");
        assert_eq!(s.push(3, "Linux"), vec!["Guide", "Install", "Linux"]);
        assert_eq!(s.push(2, "Configure"), vec!["Guide", "Configure"]);
        assert_eq!(s.push(1, "Other"), vec!["Other"]);
    }

    #[test]
    fn binary_data_is_refused_and_bad_utf8_is_replaced() {
        assert!(decode_text(b"abc\0def").is_err());
        let t = decode_text(b"caf\xe9 is fine otherwise, a long enough line of text").unwrap();
        assert!(t.contains('\u{FFFD}'));
        assert!(decode_text(&[0xff; 100]).is_err());
    }

    #[test]
    fn text_without_headings_is_one_section_named_after_the_file() {
        let d = parse(Path::new("dir/notes.txt"), b"hello\nworld").unwrap();
        assert_eq!(d.sections.len(), 1);
        assert_eq!(d.sections[0].heading, "notes.txt");
        assert_eq!(d.sections[0].text, "hello world");
        let log = parse(Path::new("dir/run.log"), b"12:00 started\n12:01 stopped").unwrap();
        assert_eq!(log.sections[0].text, "12:00 started\n12:01 stopped");
    }

    #[test]
    fn prose_text_keeps_whole_paragraphs_and_its_underlined_headings() {
        let text = "TRIGGERS\n========\n\nIntroduction\n------------\n\n\
            A dpkg trigger is a facility that allows events caused by one package\n\
            but of interest to another package to be recorded.\n\n\
            We currently envisage three kinds of triggers:\n \
            * Explicit triggers.  These can be activated by any program\n   \
            by running dpkg-trigger.\n \
            * File triggers.\n\n\
            A trigger is activated with:\n\n    \
            dpkg-trigger --no-await <name>\n";
        let d = parse(Path::new("spec/triggers.txt"), text.as_bytes()).unwrap();
        assert_eq!(d.kind, DocKind::Text);
        assert_eq!(d.title, "TRIGGERS");
        let intro = d
            .sections
            .iter()
            .find(|s| s.heading == "Introduction")
            .unwrap();
        assert_eq!(intro.path, ["TRIGGERS", "Introduction"]);
        assert!(intro.text.contains(
            "A dpkg trigger is a facility that allows events caused by one package but of \
             interest to another package to be recorded."
        ));
        let flat = collapse_ws(&intro.text);
        assert!(
            flat.contains(
                "- Explicit triggers. These can be activated by any program by running dpkg-trigger."
            ),
            "{}",
            intro.text
        );
        assert!(
            intro
                .text
                .contains("```\ndpkg-trigger --no-await <name>\n```"),
            "{}",
            intro.text
        );
    }
}
