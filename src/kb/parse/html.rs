//! HTML with a real parser (scraper / html5ever): h1–h6 start sections; script, style,
//! navigation and other non-content elements are dropped.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node, Selector};

use super::{collapse_ws, heading_section, Anchors, DocKind, HeadingStack, ParsedDoc, Section};

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "head", "svg", "iframe", "object", "button",
    "form",
];
/// Elements that break the text into blocks.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "pre",
    "blockquote",
    "br",
    "dd",
    "dt",
    "dl",
    "header",
    "footer",
    "aside",
    "figure",
    "hr",
];

/// Element nesting beyond which only text is kept (real pages nest a few dozen deep).
const MAX_DEPTH: usize = 256;

struct Walk {
    sections: Vec<Section>,
    preamble: String,
    stack: HeadingStack,
    anchors: Anchors,
}

impl Walk {
    fn text(&mut self) -> &mut String {
        match self.sections.last_mut() {
            Some(s) => &mut s.text,
            None => &mut self.preamble,
        }
    }

    fn newline(&mut self) {
        let t = self.text();
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n');
        }
    }

    fn visit(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        if depth > MAX_DEPTH {
            // Deeper than any real document: keep the text, not the structure, so a hostile
            // file cannot overflow the stack.
            let text: Vec<String> = node
                .descendants()
                .filter_map(|n| n.value().as_text().map(|t| collapse_ws(t)))
                .filter(|t| !t.is_empty())
                .collect();
            if !text.is_empty() {
                self.newline();
                self.text().push_str(&text.join(" "));
            }
            return;
        }
        match node.value() {
            Node::Text(t) => {
                let s = collapse_ws(t);
                if !s.is_empty() {
                    let out = self.text();
                    if !out.is_empty() && !out.ends_with(['\n', ' ']) {
                        out.push(' ');
                    }
                    out.push_str(&s);
                }
            }
            Node::Element(e) => {
                let name = e.name();
                if SKIP.contains(&name) {
                    return;
                }
                if let Some(level) = heading_level(name) {
                    let heading = ElementRef::wrap(node)
                        .map(|el| collapse_ws(&el.text().collect::<String>()))
                        .unwrap_or_default();
                    if !heading.is_empty() {
                        let section =
                            heading_section(&mut self.stack, &mut self.anchors, level, heading);
                        self.sections.push(section);
                    }
                    return;
                }
                let block = BLOCK.contains(&name);
                if block {
                    self.newline();
                }
                for child in node.children() {
                    self.visit(child, depth + 1);
                }
                if block {
                    self.newline();
                }
            }
            _ => {
                for child in node.children() {
                    self.visit(child, depth + 1);
                }
            }
        }
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

pub fn parse(source: &str, stem: &str) -> ParsedDoc {
    let doc = Html::parse_document(source);
    let title_sel = Selector::parse("title").expect("static selector");
    let page_title = doc
        .select(&title_sel)
        .next()
        .map(|t| collapse_ws(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty());
    let mut walk = Walk {
        sections: Vec::new(),
        preamble: String::new(),
        stack: HeadingStack::default(),
        anchors: Anchors::default(),
    };
    walk.visit(doc.tree.root(), 0);
    let first_h1 = walk
        .sections
        .iter()
        .find(|s| s.level == 1)
        .map(|s| s.heading.clone());
    let title = page_title
        .clone()
        .or(first_h1)
        .unwrap_or_else(|| stem.to_string());
    let preamble = walk.preamble.trim().to_string();
    let mut sections = walk.sections;
    if !preamble.is_empty() || sections.is_empty() {
        let heading = page_title.unwrap_or_else(|| stem.to_string());
        sections.insert(
            0,
            Section {
                anchor: walk.anchors.unique(&heading),
                path: vec![heading.clone()],
                heading,
                level: 0,
                page: None,
                text: preamble,
            },
        );
    }
    for s in &mut sections {
        s.text = s
            .text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
    }
    ParsedDoc {
        kind: DocKind::Html,
        title,
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_deeper_than_any_page_keeps_its_text_without_recursing() {
        let n = 20_000;
        let html = format!(
            "<h1>Deep</h1>{}the bottom line{}<p>after</p>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        // The default test thread has a 2 MiB stack: recursion per element would overflow.
        let d = parse(&html, "deep");
        let text: String = d.sections.iter().map(|s| s.text.clone()).collect();
        assert!(
            text.contains("the bottom line") && text.contains("after"),
            "{text:.200}"
        );
    }

    #[test]
    fn headings_become_sections_and_scripts_are_dropped() {
        let html = r#"<!doctype html><html><head><title>Incident  Response</title>
            <style>body { color: red }</style></head>
            <body><nav><a href="/">Home</a> <a href="/x">Menu item</a></nav>
            <h1>Incident Response</h1><p>Stay   calm.</p>
            <script>var secret = "do not index";</script>
            <h2>Paging</h2><ul><li>Page the on-call</li><li>Open a <b>ticket</b></li></ul>
            <h3>Escalation &amp; Severity</h3><p>SEV1 within 5 minutes.</p></body></html>"#;
        let d = parse(html, "ir");
        assert_eq!(d.title, "Incident Response");
        let heads: Vec<_> = d.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            heads,
            ["Incident Response", "Paging", "Escalation & Severity"]
        );
        assert_eq!(
            d.sections[2].path,
            ["Incident Response", "Paging", "Escalation & Severity"]
        );
        assert_eq!(d.sections[0].text, "Stay calm.");
        assert_eq!(d.sections[1].text, "Page the on-call\nOpen a ticket");
        let all: String = d.sections.iter().map(|s| s.text.clone()).collect();
        assert!(!all.contains("secret") && !all.contains("color") && !all.contains("Menu"));
    }
}
