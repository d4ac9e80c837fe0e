//! EPUB (2 and 3): the package (`META-INF/container.xml` → the OPF) names the chapters in
//! reading order (the spine); each chapter is XHTML, read by the HTML parser, and the
//! chapters' sections follow each other as one document's. Anchors are made unique across
//! chapters; the navigation document (EPUB 3 `nav`) is not content and is left out.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Result};
use quick_xml::events::Event;
use quick_xml::Reader;

use super::docx::{attr, part, MAX_PART_BYTES};
use super::{collapse_ws, html, Anchors, DocKind, ParsedDoc};

/// Most chapters read, and most XHTML read in all: a package can list or inflate to
/// anything.
const MAX_CHAPTERS: usize = 5000;
const MAX_TOTAL_BYTES: u64 = 4 * MAX_PART_BYTES;

/// What the OPF says: the title and the chapters' paths in reading order.
struct Package {
    title: Option<String>,
    chapters: Vec<String>,
}

pub fn parse(bytes: &[u8], stem: &str) -> Result<ParsedDoc> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| anyhow!("not an EPUB file (not a readable zip: {e})"))?;
    let container = part(&mut zip, "META-INF/container.xml")?
        .ok_or_else(|| anyhow!("not an EPUB file (no META-INF/container.xml)"))?;
    let opf_path = rootfile(&container)?;
    let opf = part(&mut zip, &opf_path)?
        .ok_or_else(|| anyhow!("the EPUB's package file {opf_path} is missing"))?;
    let base = opf_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let package = read_package(&opf, base)?;
    let mut anchors = Anchors::default();
    let mut sections = Vec::new();
    let mut notes = Vec::new();
    let mut total = 0u64;
    for chapter in &package.chapters {
        let Some(xhtml) = part(&mut zip, chapter)? else {
            notes.push(format!("chapter {chapter} is listed but missing"));
            continue;
        };
        total += xhtml.len() as u64;
        if total > MAX_TOTAL_BYTES {
            bail!(
                "the EPUB's chapters are larger than {} MiB in all",
                MAX_TOTAL_BYTES >> 20
            );
        }
        let chapter_stem = chapter
            .rsplit('/')
            .next()
            .and_then(|f| f.split('.').next())
            .unwrap_or(stem);
        for mut s in html::parse(&xhtml, chapter_stem).sections {
            // A chapter without headings or text adds nothing.
            if s.level == 0 && s.text.trim().is_empty() {
                continue;
            }
            s.anchor = anchors.unique(&s.heading);
            sections.push(s);
        }
    }
    let title = package
        .title
        .or_else(|| sections.first().map(|s| s.heading.clone()))
        .unwrap_or_else(|| stem.to_string());
    if sections.is_empty() {
        bail!("the EPUB has no readable chapters");
    }
    Ok(ParsedDoc {
        kind: DocKind::Epub,
        title,
        sections,
        notes,
    })
}

/// The package file's path, from the container's first `rootfile`.
fn rootfile(container: &str) -> Result<String> {
    let mut reader = Reader::from_str(container);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == "rootfile" => {
                if let Some(path) = attr(&e, "full-path") {
                    return Ok(path);
                }
            }
            Ok(Event::Eof) => bail!("META-INF/container.xml names no rootfile"),
            Err(e) => bail!("META-INF/container.xml is not XML: {e}"),
            _ => {}
        }
    }
}

/// The title, and the spine's XHTML chapters as paths in the zip (relative to `base`).
fn read_package(opf: &str, base: &str) -> Result<Package> {
    let mut reader = Reader::from_str(opf);
    // id → (href, is the navigation document)
    let mut manifest: HashMap<String, (String, bool)> = HashMap::new();
    let mut spine: Vec<String> = Vec::new();
    let mut title: Option<String> = None;
    let mut in_title = false;
    let mut title_text = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match e.local_name().as_ref() {
                "item" => {
                    let media = attr(&e, "media-type").unwrap_or_default();
                    if let (Some(id), Some(href)) = (attr(&e, "id"), attr(&e, "href")) {
                        if media.contains("html") {
                            let nav = attr(&e, "properties")
                                .is_some_and(|p| p.split_whitespace().any(|p| p == "nav"));
                            manifest.insert(id, (href, nav));
                        }
                    }
                }
                "itemref" => {
                    let linear = attr(&e, "linear").is_none_or(|l| l != "no");
                    if let (Some(idref), true) = (attr(&e, "idref"), linear) {
                        spine.push(idref);
                    }
                }
                "title" if title.is_none() => in_title = true,
                _ => {}
            },
            Ok(Event::Text(t)) if in_title => title_text.push_str(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) if in_title => {
                let c = r.resolve_char_ref().ok().flatten().or_else(|| {
                    quick_xml::escape::resolve_predefined_entity(r.as_ref())?
                        .chars()
                        .next()
                });
                title_text.extend(c);
            }
            Ok(Event::End(e)) if in_title && e.local_name().as_ref() == "title" => {
                in_title = false;
                title = Some(collapse_ws(&title_text)).filter(|t| !t.is_empty());
            }
            Ok(Event::Eof) => break,
            Err(e) => bail!("the EPUB's package file is not XML: {e}"),
            _ => {}
        }
    }
    let chapters: Vec<String> = spine
        .iter()
        .filter_map(|id| manifest.get(id))
        .filter(|(_, nav)| !nav)
        .map(|(href, _)| join(base, href))
        .take(MAX_CHAPTERS)
        .collect();
    if chapters.is_empty() {
        bail!("the EPUB's spine lists no XHTML chapters");
    }
    Ok(Package { title, chapters })
}

/// `href` (relative to the package file's folder, percent-encoded, maybe with a
/// fragment) as a path in the zip.
fn join(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or_default();
    let mut parts: Vec<String> = base
        .split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    for p in percent_decode(href).split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p.to_string()),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A small EPUB 3: two chapters (spine order differs from manifest order), a nav
    /// document, a chapter path that needs percent-decoding.
    pub(crate) fn sample_epub() -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        let mut add = |name: &str, body: &str| {
            zip.start_file(name, opts).unwrap();
            zip.write_all(body.as_bytes()).unwrap();
        };
        add("mimetype", "application/epub+zip");
        add(
            "META-INF/container.xml",
            r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#,
        );
        add(
            "OEBPS/content.opf",
            r#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Pump Station Manual</dc:title></metadata>
<manifest><item id="c2" href="text/ch%202.xhtml" media-type="application/xhtml+xml"/><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/><item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/><item id="css" href="style.css" media-type="text/css"/></manifest>
<spine><itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>"#,
        );
        add(
            "OEBPS/nav.xhtml",
            r#"<html xmlns="http://www.w3.org/1999/xhtml"><body><nav><ol><li><a href="text/ch1.xhtml">Contents entry</a></li></ol></nav></body></html>"#,
        );
        add(
            "OEBPS/text/ch1.xhtml",
            r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 1</title></head><body><h1>Introduction</h1><p>Read this before starting a pump.</p><h2>Priming</h2><p>Prime the pump with:</p><pre><code class="language-sh">pumpctl prime --station 3</code></pre><table><tr><th>Pump</th><th>Pressure</th></tr><tr><td>P3</td><td>4 bar</td></tr></table></body></html>"#,
        );
        add(
            "OEBPS/text/ch 2.xhtml",
            r#"<html xmlns="http://www.w3.org/1999/xhtml"><body><h1>Introduction</h1><p>The second part covers valves.</p><ul><li>Close V12</li><li>Drain the line</li></ul></body></html>"#,
        );
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn chapters_follow_the_spine_with_their_structure_and_unique_anchors() {
        let doc = parse(&sample_epub(), "manual").unwrap();
        assert_eq!(doc.kind, DocKind::Epub);
        assert_eq!(doc.title, "Pump Station Manual");
        let heads: Vec<(&str, &str)> = doc
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.anchor.as_str()))
            .collect();
        assert_eq!(
            heads,
            [
                ("Introduction", "introduction"),
                ("Priming", "priming"),
                ("Introduction", "introduction-1"),
            ],
            "{:#?}",
            doc.sections
        );
        let priming = &doc.sections[1].text;
        assert!(
            priming.contains("```sh\npumpctl prime --station 3\n```"),
            "{priming}"
        );
        assert!(priming.contains("| P3 | 4 bar |"), "{priming}");
        assert!(
            doc.sections[2].text.contains("- Close V12"),
            "{:?}",
            doc.sections[2]
        );
        assert!(
            doc.sections
                .iter()
                .all(|s| !s.text.contains("Contents entry")),
            "the nav document is not content"
        );
    }

    #[test]
    fn a_broken_package_names_what_is_missing() {
        let e = parse(b"not a zip", "x").unwrap_err();
        assert!(e.to_string().contains("not an EPUB"), "{e}");
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file("mimetype", zip::write::SimpleFileOptions::default())
            .unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let e = parse(&bytes, "x").unwrap_err();
        assert!(e.to_string().contains("META-INF/container.xml"), "{e}");
        assert_eq!(
            join("OEBPS", "../images/../text/a%20b.xhtml#p1"),
            "text/a b.xhtml"
        );
    }
}
