//! Markdown with pulldown-cmark: H1–H6 become sections; front matter (YAML `---` or TOML
//! `+++`) is metadata, not content; each section's blocks are rewritten as the regular
//! Markdown of `blocks` (paragraphs on one line, fenced code, lists, tables, quotes).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::blocks::MarkdownWriter;
use super::{collapse_ws, heading_section, Anchors, DocKind, HeadingStack, ParsedDoc, Section};

/// Block-quote nesting kept; deeper `>` markers are dropped (their text stays). The
/// parser's time grows with the square of the nesting, so a hostile file of tens of
/// thousands of `>` would otherwise take minutes.
const MAX_QUOTE_DEPTH: usize = 32;

pub fn parse(source: &str, stem: &str) -> ParsedDoc {
    let flattened = flatten_deep_quotes(source);
    let source = flattened.as_deref().unwrap_or(source);
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut sections: Vec<Section> = Vec::new();
    let mut anchors = Anchors::default();
    let mut stack = HeadingStack::default();
    let mut front_title: Option<String> = None;
    let mut first_h1: Option<String> = None;
    // The open section's body (text before the first heading goes to `preamble`).
    let mut body = MarkdownWriter::default();
    let mut preamble: Option<String> = None;
    let mut in_heading: Option<(u8, String)> = None;
    let mut in_metadata = false;
    let mut metadata = String::new();
    // The open code block: its language and text.
    let mut code: Option<(String, String)> = None;
    // Open lists: the next item's number, None when unordered.
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut links: Vec<String> = Vec::new();

    for event in Parser::new_ext(source, opts) {
        match event {
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(kind)) => {
                in_metadata = false;
                front_title = front_matter_title(&metadata, kind);
            }
            Event::Text(t) if in_metadata => metadata.push_str(&t),
            Event::Start(Tag::Heading { level, .. }) => {
                in_heading = Some((heading_level(level), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, raw)) = in_heading.take() {
                    let heading = collapse_ws(&raw);
                    if level == 1 && first_h1.is_none() {
                        first_h1 = Some(heading.clone());
                    }
                    let text = std::mem::take(&mut body).finish();
                    match sections.last_mut() {
                        Some(s) => s.text = text,
                        None => preamble = Some(text),
                    }
                    sections.push(heading_section(&mut stack, &mut anchors, level, heading));
                }
            }
            Event::Text(t) | Event::Code(t) if in_heading.is_some() => {
                if let Some((_, h)) = in_heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak if in_heading.is_some() => {
                if let Some((_, h)) = in_heading.as_mut() {
                    h.push(' ');
                }
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, text)) = code.take() {
                    body.code_block(&lang, &text);
                }
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, text)) = code.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::Text(t) | Event::InlineHtml(t) | Event::Html(t) => body.text(&t),
            Event::Code(t) => body.inline_code(&t),
            // A soft break is a space in rendered Markdown: paragraphs stay on one line so
            // sentences are not cut at the source's line wrapping.
            Event::SoftBreak => body.space(),
            Event::HardBreak => body.line_break(),
            Event::Start(Tag::Link { dest_url, .. }) => {
                links.push(dest_url.to_string());
                body.link_start();
            }
            Event::End(TagEnd::Link) => body.link_end(&links.pop().unwrap_or_default()),
            Event::Start(Tag::List(first)) => {
                body.block_break();
                lists.push(first);
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
                body.block_break();
            }
            Event::Start(Tag::Item) => {
                let marker = match lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "- ".to_string(),
                };
                body.item_start(&marker);
            }
            Event::End(TagEnd::Item) => body.item_end(),
            Event::Start(Tag::BlockQuote(_)) => body.quote_start(),
            Event::End(TagEnd::BlockQuote(_)) => body.quote_end(),
            Event::Start(Tag::Table(_)) => body.table_start(),
            Event::Start(Tag::TableCell) => body.cell_start(),
            Event::End(TagEnd::TableCell) => body.cell_end(),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => body.row_end(),
            Event::End(TagEnd::Table) => body.table_end(),
            Event::End(TagEnd::Paragraph) | Event::Rule => body.block_break(),
            _ => {}
        }
    }
    let text = body.finish();
    match sections.last_mut() {
        Some(s) => s.text = text,
        None => preamble = Some(text),
    }
    let title = front_title
        .clone()
        .or(first_h1)
        .unwrap_or_else(|| stem.to_string());
    let heading = front_title.unwrap_or_else(|| stem.to_string());
    let preamble = preamble.unwrap_or_default();
    super::with_preamble(
        DocKind::Markdown,
        title,
        sections,
        preamble,
        heading,
        &mut anchors,
    )
}

/// The source with block-quote markers beyond `MAX_QUOTE_DEPTH` removed, or None when no
/// line nests that deep.
fn flatten_deep_quotes(source: &str) -> Option<String> {
    let depth = |line: &str| {
        line.chars()
            .take_while(|c| *c == '>' || *c == ' ')
            .filter(|c| *c == '>')
            .count()
    };
    if !source.lines().any(|l| depth(l) > MAX_QUOTE_DEPTH) {
        return None;
    }
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        let mut seen = 0;
        let mut cut = 0;
        for (i, c) in line.char_indices() {
            match c {
                '>' if seen < MAX_QUOTE_DEPTH => seen += 1,
                '>' | ' ' => {}
                _ => {
                    cut = i;
                    break;
                }
            }
            cut = i + c.len_utf8();
        }
        if depth(line) > MAX_QUOTE_DEPTH {
            out.push_str(&">".repeat(MAX_QUOTE_DEPTH));
            out.push(' ');
            out.push_str(line[cut..].trim_start());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Some(out)
}

fn heading_level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// `title` from YAML (`title: X`) or TOML (`title = "X"`) front matter. Only the title is
/// used, so a full YAML parser is not needed; quotes are stripped.
fn front_matter_title(meta: &str, kind: pulldown_cmark::MetadataBlockKind) -> Option<String> {
    use pulldown_cmark::MetadataBlockKind;
    match kind {
        MetadataBlockKind::PlusesStyle => toml::from_str::<toml::Table>(meta)
            .ok()?
            .get("title")?
            .as_str()
            .map(str::to_string),
        MetadataBlockKind::YamlStyle => meta.lines().find_map(|line| {
            let rest = line.strip_prefix("title:")?.trim();
            let unquoted = rest
                .strip_prefix('"')
                .and_then(|r| r.strip_suffix('"'))
                .or_else(|| rest.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
                .unwrap_or(rest);
            (!unquoted.is_empty()).then(|| unquoted.to_string())
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "---\ntitle: \"Deploying Lighthouse\"\ntags: [a, b]\n---\n\
Intro before headings.\n\n\
# Deployment Guide\n\nOverview text.\n\n\
## Security\n\nUse TLS 1.3.\n\n\
### Certificates `certbot`\n\nRun `certbot renew`.\n\n\
```sh\nkubectl apply -f x.yaml\n```\n\n\
## Security\n\nDuplicate heading.\n\n\
# Appendix\n\n| key | value |\n|---|---|\n| port | 8443 |\n";

    #[test]
    fn headings_paths_anchors_and_front_matter() {
        let d = parse(DOC, "deploy");
        assert_eq!(d.title, "Deploying Lighthouse");
        let heads: Vec<_> = d.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            heads,
            [
                "Deploying Lighthouse",
                "Deployment Guide",
                "Security",
                "Certificates certbot",
                "Security",
                "Appendix"
            ]
        );
        let certs = &d.sections[3];
        assert_eq!(
            certs.path,
            ["Deployment Guide", "Security", "Certificates certbot"]
        );
        assert_eq!(certs.level, 3);
        assert_eq!(certs.anchor, "certificates-certbot");
        assert!(certs.text.contains("certbot renew") && certs.text.contains("kubectl apply"));
        assert_eq!(d.sections[4].anchor, "security-1");
        assert_eq!(d.sections[5].path, ["Appendix"]);
        assert_eq!(
            d.sections[5].text,
            "| key | value |\n| --- | --- |\n| port | 8443 |"
        );
        assert_eq!(
            certs.text,
            "Run `certbot renew`.\n\n```sh\nkubectl apply -f x.yaml\n```"
        );
        // Front matter is metadata, not content.
        assert!(d.sections.iter().all(|s| !s.text.contains("tags:")));
        assert_eq!(d.sections[0].text, "Intro before headings.");
    }

    #[test]
    fn toml_front_matter_and_no_headings() {
        let d = parse("+++\ntitle = \"Notes\"\n+++\nJust text.\n", "notes");
        assert_eq!(d.title, "Notes");
        assert_eq!(d.sections.len(), 1);
        assert_eq!(d.sections[0].heading, "Notes");
        assert_eq!(d.sections[0].text, "Just text.");
    }

    #[test]
    fn deep_block_quotes_are_flattened_and_keep_their_text() {
        let deep = format!("# Deep\n\n{} the bottom line\n", ">".repeat(50_000));
        let t = std::time::Instant::now();
        let d = parse(&deep, "deep");
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert!(
            d.sections[0].text.contains("the bottom line"),
            "{:?}",
            d.sections
        );
        assert!(flatten_deep_quotes("> a\n>> b\n").is_none());
    }

    #[test]
    fn title_falls_back_to_first_h1_then_file_stem() {
        assert_eq!(parse("# Hello\n\nx", "f").title, "Hello");
        assert_eq!(parse("## Only h2\n\nx", "file-stem").title, "file-stem");
    }
}
