//! Every parser on generated hostile input: whatever the bytes, `parse` returns a
//! document or an error and never panics or hangs, and a document keeps the structure it
//! promises (a section's path ends in its heading; anchors are unique).
//!
//! Inputs are random bytes and random strings of markup pieces, from a fixed seed per
//! case. Brief in `make test`; longer on demand:
//! `SEXTANT_FUZZ_CASES=20000 cargo test --release --test parse_fuzz`.
//! (Not proptest: it switches on num-traits' `libm` feature, which rebuilds candle for the
//! test build, minutes on CI's two cores.)

use std::collections::HashSet;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sextant::kb::parse::{parse, ParsedDoc};

/// Pieces of markup that parsers treat specially, to be strung together at random.
const TOKENS: &[&str] = &[
    "<div>",
    "</div>",
    "<h1>",
    "</h1>",
    "<h2>",
    "<p>",
    "<script>",
    "</script>",
    "<!--",
    "-->",
    "<table><tr><td>",
    "&amp;",
    "&#0;",
    "&#x10FFFF;",
    "<![CDATA[",
    "]]>",
    "# ",
    "## ",
    "###### ",
    "> ",
    ">>>>>",
    "```",
    "~~~",
    "    ",
    "- ",
    "1. ",
    "|",
    "---",
    "+++",
    "[",
    "](",
    ")",
    "*",
    "_",
    "\\",
    "\n",
    "\r\n",
    "\t",
    " ",
    "word",
    "é",
    "\u{200b}",
    "\u{202e}",
    "%PDF-1.4\n",
    "1 0 obj",
    "<<",
    ">>",
    "stream\n",
    "endstream",
    "endobj",
    "xref",
    "trailer",
    "startxref",
    "%%EOF",
    "/Type /Pages",
    "/Kids [1 0 R]",
    "/Length 99999999",
    "/Filter /FlateDecode",
];

fn input(rng: &mut StdRng) -> Vec<u8> {
    if rng.random_bool(0.5) {
        let n = rng.random_range(0..4096);
        (0..n).map(|_| rng.random::<u8>()).collect()
    } else {
        let n = rng.random_range(0..400);
        (0..n)
            .map(|_| TOKENS[rng.random_range(0..TOKENS.len())])
            .collect::<String>()
            .into_bytes()
    }
}

fn well_formed(doc: &ParsedDoc) {
    let mut anchors = HashSet::new();
    for s in &doc.sections {
        assert!(
            anchors.insert(s.anchor.clone()),
            "duplicate anchor {}",
            s.anchor
        );
        if s.level > 0 {
            assert_eq!(s.path.last(), Some(&s.heading));
        }
    }
}

/// Seeded cases per parser: 256, or `SEXTANT_FUZZ_CASES`.
fn cases() -> u64 {
    std::env::var("SEXTANT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn fuzz(name: &str) {
    for seed in 0..cases() {
        let mut rng = StdRng::seed_from_u64(seed);
        let bytes = input(&mut rng);
        let outcome = std::panic::catch_unwind(|| parse(Path::new(name), &bytes));
        match outcome {
            Ok(Ok(doc)) => well_formed(&doc),
            Ok(Err(_)) => {}
            Err(_) => panic!(
                "{name}: seed {seed} panicked on {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
}

#[test]
fn markdown_never_panics() {
    fuzz("fuzz.md");
}

#[test]
fn html_never_panics() {
    fuzz("fuzz.html");
}

#[test]
fn pdf_never_panics() {
    fuzz("fuzz.pdf");
}

#[test]
fn text_never_panics() {
    fuzz("fuzz.txt");
}

/// XML-ish pieces for the DOCX body: the elements the parser acts on, entities and
/// character references (some invalid), unbalanced nesting.
const DOCX_TOKENS: &[&str] = &[
    "<w:p>",
    "</w:p>",
    "<w:r>",
    "</w:r>",
    "<w:t>",
    "</w:t>",
    "<w:t/>",
    "<w:tbl>",
    "</w:tbl>",
    "<w:tr>",
    "</w:tr>",
    "<w:tc>",
    "</w:tc>",
    "<w:tab/>",
    "<w:br/>",
    "<w:pPr>",
    "</w:pPr>",
    "<w:pStyle w:val=\"Heading1\"/>",
    "<w:outlineLvl w:val=\"99\"/>",
    "<w:numPr/>",
    "text ",
    "&amp;",
    "&#0;",
    "&#xFFFFFF;",
    "&unknown;",
    "<",
    ">",
    "\"",
    "é",
    "<![CDATA[x]]>",
];

#[test]
fn docx_never_panics() {
    use std::io::Write;
    for seed in 0..cases() {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = rng.random_range(0..300);
        let body: String = (0..n)
            .map(|_| DOCX_TOKENS[rng.random_range(0..DOCX_TOKENS.len())])
            .collect();
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("word/document.xml", stored).unwrap();
        zip.write_all(format!("<w:document><w:body>{body}</w:body></w:document>").as_bytes())
            .unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        match std::panic::catch_unwind(|| parse(Path::new("fuzz.docx"), &bytes)) {
            Ok(Ok(doc)) => well_formed(&doc),
            Ok(Err(_)) => {}
            Err(_) => panic!("fuzz.docx: seed {seed} panicked on {body:?}"),
        }
    }
}
