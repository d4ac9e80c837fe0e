//! HTML with a real parser (scraper / html5ever): h1–h6 start sections; script, style,
//! navigation and other non-content elements are dropped; blocks (paragraphs, `<pre>`
//! code with its language, lists, tables, quotes, links) become the Markdown of `blocks`.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node, Selector};

mod furniture;
mod layout;
mod manpage;

use furniture::{is_furniture, is_menu};

use super::blocks::MarkdownWriter;
use super::{collapse_ws, heading_section, Anchors, DocKind, HeadingStack, ParsedDoc, Section};

/// Elements that break the text into blocks (paragraphs of the section's Markdown).
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "dd",
    "dt",
    "dl",
    "header",
    "footer",
    "aside",
    "figure",
    "figcaption",
    "hr",
    "details",
    "summary",
];

/// Whether the page has a heading that starts a section (outside furniture).
fn has_heading(root: NodeRef<'_, Node>) -> bool {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if is_furniture(n) {
            continue;
        }
        if n.value()
            .as_element()
            .is_some_and(|e| heading_level(e.name()).is_some())
        {
            return true;
        }
        stack.extend(n.children());
    }
    false
}

/// A heading's text without its permalink ("Why are default values shared?¶").
fn heading_text(node: NodeRef<'_, Node>) -> String {
    collapse_ws(&text_without_furniture(node))
}

/// An element's text as it stands (line breaks kept), without the furniture inside it:
/// a heading's permalink, a dropdown menu inside preformatted text.
fn text_without_furniture(node: NodeRef<'_, Node>) -> String {
    let mut out = String::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if is_furniture(n) {
            continue;
        }
        if let Some(t) = n.value().as_text() {
            out.push_str(t);
        }
        // Children in document order: pushed last to first.
        let children: Vec<_> = n.children().collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// Classes of admonition boxes (DocBook's `note`, `tip`, …; Sphinx's `admonition`). Their
/// title is a heading element, but the box belongs to the section around it: the title
/// stays a line of that section, so the text after the box is not filed under "Note".
const ADMONITION_CLASSES: &[&str] = &[
    "note",
    "tip",
    "warning",
    "caution",
    "important",
    "admonition",
    "admonitionblock",
    "attention",
    "danger",
    "hint",
];

/// What an admonition's title says, in the generators that lay the box out as a table.
const ADMONITION_TITLES: &[&str] = &[
    "note",
    "tip",
    "warning",
    "caution",
    "important",
    "attention",
    "danger",
    "hint",
];

/// Whether `title` (lower case) is what an admonition box's title says.
pub(crate) fn is_admonition_title(title: &str) -> bool {
    ADMONITION_TITLES.contains(&title)
}

/// Whether `table`, inside an admonition, only lays it out: AsciiDoc's icon cell beside a
/// content cell, DocBook's icon image with a "Warning" heading cell above the text. Its
/// text is the admonition's title and paragraphs, not a data table: read as cells, a
/// quote began "| Warning | Do not play with boot loaders …".
fn is_layout_table(table: NodeRef<'_, Node>) -> bool {
    let Some(e) = table.value().as_element() else {
        return false;
    };
    let titled = e
        .attr("summary")
        .is_some_and(|s| ADMONITION_TITLES.contains(&s.trim().to_lowercase().as_str()));
    titled
        || table.descendants().any(|n| {
            n.value().as_element().is_some_and(|c| {
                c.name() == "img" || (c.name() == "td" && c.classes().any(|k| k == "icon"))
            })
        })
}

/// Inline elements whose text is code.
const INLINE_CODE: &[&str] = &["code", "kbd", "samp", "tt"];

/// Element nesting beyond which only text is kept (real pages nest a few dozen deep).
const MAX_DEPTH: usize = 256;

struct Walk {
    sections: Vec<Section>,
    /// The open section's body; text before the first heading goes to `preamble`.
    body: MarkdownWriter,
    preamble: Option<String>,
    stack: HeadingStack,
    anchors: Anchors,
    /// Inside a definition list, blocks are lines, not paragraphs: a manual page's option
    /// (`<dt>--keep-index</dt><dd><p>…</p></dd>`) stays flag line + description lines.
    in_dl: usize,
    /// Open lists: the next item's number, None when unordered.
    lists: Vec<Option<u64>>,
    /// Open admonition boxes: their headings are lines, not sections.
    in_admonition: usize,
    /// Open layout tables of admonitions (`is_layout_table`): cells are blocks.
    in_layout_table: usize,
    /// Whether the page has a heading: only then is a menu before it navigation.
    headed: bool,
    /// The level of a reference entry's name set in bold (`layout::term_heading`): one
    /// below the last heading.
    term_level: u8,
}

impl Walk {
    fn close_section(&mut self) {
        let text = std::mem::take(&mut self.body).finish();
        match self.sections.last_mut() {
            Some(s) => s.text = text,
            None => self.preamble = Some(text),
        }
    }

    /// A terminal-formatted manual page's blocks: its headings start sections.
    fn man_page(&mut self, blocks: Vec<manpage::ManBlock>) {
        use manpage::ManBlock;
        for block in blocks {
            match block {
                ManBlock::Heading(heading) => {
                    self.close_section();
                    let section = heading_section(&mut self.stack, &mut self.anchors, 2, heading);
                    self.sections.push(section);
                }
                ManBlock::Paragraph(text) => self.body.text(&text),
                ManBlock::Entry(term, description) => {
                    self.body.text(&term);
                    self.body.definition_start();
                    self.body.text(&description);
                }
                ManBlock::Code(code) => self.body.code_block("", &code),
            }
            self.body.block_break();
        }
    }

    fn block_break(&mut self) {
        if self.in_dl > 0 {
            self.body.line_break();
        } else {
            self.body.block_break();
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
                self.body.line_break();
                self.body.text(&text.join(" "));
            }
            return;
        }
        match node.value() {
            Node::Text(t) => {
                let s = collapse_ws(t);
                if t.starts_with(char::is_whitespace) {
                    self.body.space();
                }
                if !s.is_empty() {
                    self.body.text(&s);
                    if t.ends_with(char::is_whitespace) {
                        self.body.space();
                    }
                }
            }
            Node::Element(e) => {
                let name = e.name();
                if is_furniture(node) {
                    return;
                }
                if self.headed
                    && self.sections.is_empty()
                    && matches!(name, "ul" | "ol" | "p" | "div")
                    && is_menu(node)
                {
                    return;
                }
                let admonition =
                    e.classes().any(|c| ADMONITION_CLASSES.contains(&c)) || name == "aside";
                let text_of = || {
                    ElementRef::wrap(node)
                        .map(|el| el.text().collect::<String>())
                        .unwrap_or_default()
                };
                if let Some(level) = heading_level(name) {
                    let heading = heading_text(node);
                    if self.in_admonition > 0 {
                        if !heading.is_empty() {
                            self.block_break();
                            self.body.text(&format!("{heading}:"));
                            self.block_break();
                        }
                        return;
                    }
                    if !heading.is_empty() {
                        self.close_section();
                        let section =
                            heading_section(&mut self.stack, &mut self.anchors, level, heading);
                        self.sections.push(section);
                        self.term_level = (level + 1).min(6);
                    }
                    return;
                }
                if self.in_admonition == 0 && self.in_dl == 0 && self.in_layout_table == 0 {
                    if let Some(term) = layout::term_heading(node) {
                        self.close_section();
                        let level = self.term_level;
                        let section =
                            heading_section(&mut self.stack, &mut self.anchors, level, term.name);
                        self.sections.push(section);
                        if let Some(signature) = term.signature {
                            self.body.inline_code(&signature);
                            self.block_break();
                        }
                        return;
                    }
                }
                if self.in_admonition > 0 && name == "table" && is_layout_table(node) {
                    self.block_break();
                    self.in_layout_table += 1;
                    for child in node.children() {
                        self.visit(child, depth + 1);
                    }
                    self.in_layout_table -= 1;
                    self.block_break();
                    return;
                }
                if self.in_layout_table > 0 && matches!(name, "td" | "th" | "tr") {
                    // A cell that only names the box is its title line, as a heading
                    // inside an admonition is.
                    let text = collapse_ws(&text_of());
                    self.block_break();
                    if ADMONITION_TITLES.contains(&text.to_lowercase().as_str()) {
                        self.body.text(&format!("{text}:"));
                    } else {
                        for child in node.children() {
                            self.visit(child, depth + 1);
                        }
                    }
                    self.block_break();
                    return;
                }
                match name {
                    "pre" => {
                        if let Some(blocks) = manpage::man_page(&text_of()) {
                            self.man_page(blocks);
                            return;
                        }
                        // The language, as highlighters mark it: class="language-x" on
                        // <pre> or its <code>.
                        let lang = node
                            .descendants()
                            .take(2)
                            .filter_map(|n| n.value().as_element())
                            .flat_map(|e| e.classes())
                            .find_map(|c| c.strip_prefix("language-").or(c.strip_prefix("lang-")))
                            .unwrap_or_default()
                            .to_string();
                        let text = text_without_furniture(node);
                        if let Some(paragraphs) = (lang.is_empty() && layout::plain_pre(node))
                            .then(|| layout::prose_paragraphs(&text))
                            .flatten()
                        {
                            for paragraph in paragraphs {
                                self.block_break();
                                self.body.text(&paragraph);
                            }
                            self.block_break();
                            return;
                        }
                        self.body.code_block(&lang, &text);
                        return;
                    }
                    n if INLINE_CODE.contains(&n) => {
                        let code = collapse_ws(&text_of());
                        if !code.is_empty() {
                            self.body.inline_code(&code);
                        }
                        return;
                    }
                    "br" => {
                        self.body.line_break();
                        return;
                    }
                    // An exponent read as digits changes the number: Django's "2 GB
                    // (2<sup>31</sup> bytes)" was stored as "(231 bytes)". A footnote
                    // mark ("[11]", DocBook's) stays as it is.
                    "sup" => {
                        let raised = collapse_ws(&text_of());
                        match raised.as_str() {
                            "" => {}
                            r if r.starts_with('[') => self.body.text(r),
                            r if r.contains(' ') => self.body.text(&format!("^({r})")),
                            r => self.body.text(&format!("^{r}")),
                        }
                        return;
                    }
                    _ => {}
                }
                self.open(name, e);
                self.in_admonition += usize::from(admonition);
                for child in node.children() {
                    self.visit(child, depth + 1);
                }
                self.in_admonition -= usize::from(admonition);
                self.close(name, e);
            }
            _ => {
                for child in node.children() {
                    self.visit(child, depth + 1);
                }
            }
        }
    }

    fn open(&mut self, name: &str, e: &scraper::node::Element) {
        match name {
            "ul" | "ol" => {
                self.block_break();
                let first = e.attr("start").and_then(|s| s.parse().ok()).unwrap_or(1);
                self.lists.push((name == "ol").then_some(first));
            }
            "li" => {
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "- ".to_string(),
                };
                self.body.item_start(&marker);
            }
            "blockquote" => self.body.quote_start(),
            "table" => self.body.table_start(),
            "td" | "th" => self.body.cell_start(),
            "a" => self.body.link_start(),
            "dl" => {
                self.block_break();
                self.in_dl += 1;
            }
            "dd" => {
                self.block_break();
                self.body.definition_start();
            }
            "dt" => {
                self.block_break();
                self.body.term_start();
            }
            n if BLOCK.contains(&n) => self.block_break(),
            _ => {}
        }
    }

    fn close(&mut self, name: &str, e: &scraper::node::Element) {
        match name {
            "ul" | "ol" => {
                self.lists.pop();
                self.block_break();
            }
            "li" => self.body.item_end(),
            "blockquote" => self.body.quote_end(),
            "table" => self.body.table_end(),
            "td" | "th" => self.body.cell_end(),
            "tr" => self.body.row_end(),
            "a" => self.body.link_end(e.attr("href").unwrap_or_default()),
            "dl" => {
                self.in_dl -= 1;
                self.block_break();
            }
            // A blank line ends a definition: the next term would continue it otherwise.
            "dd" => self.body.block_break(),
            n if BLOCK.contains(&n) => self.block_break(),
            _ => {}
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
        body: MarkdownWriter::default(),
        preamble: None,
        stack: HeadingStack::default(),
        anchors: Anchors::default(),
        in_dl: 0,
        lists: Vec::new(),
        in_admonition: 0,
        in_layout_table: 0,
        headed: has_heading(doc.tree.root()),
        term_level: 2,
    };
    walk.visit(doc.tree.root(), 0);
    walk.close_section();
    let first_h1 = walk
        .sections
        .iter()
        .find(|s| s.level == 1)
        .map(|s| s.heading.clone());
    let title = page_title
        .clone()
        .or(first_h1)
        .unwrap_or_else(|| stem.to_string());
    let preamble = walk.preamble.take().unwrap_or_default();
    let heading = page_title.unwrap_or_else(|| stem.to_string());
    let sections = std::mem::take(&mut walk.sections);
    super::with_preamble(
        DocKind::Html,
        title,
        sections,
        preamble,
        heading,
        &mut walk.anchors,
    )
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
    fn a_language_switcher_is_left_out() {
        let d = parse(
            r#"<h1>Name-based Virtual Host Support</h1><div class="toplang"><p><span>Available
            Languages: </span><a href="../de/n.html" hreflang="de" rel="alternate">de</a> |
            <a href="../en/n.html">en</a> | <a href="../fr/n.html" hreflang="fr">fr</a></p></div>
            <p>This document describes <a href="x.html" hreflang="en">when</a> to use them.</p>"#,
            "n",
        );
        assert_eq!(
            d.sections[0].text,
            "This document describes [when](x.html) to use them."
        );
    }

    #[test]
    fn a_preamble_that_repeats_the_title_is_left_out() {
        let page = |box_text: &str| {
            parse(
                &format!(
                    "<html><head><title>VACUUM</title></head><body><div class=fancy_title>\
                     {box_text}</div><h1>1. Syntax</h1><p>VACUUM rebuilds the file.</p></body></html>"
                ),
                "lang_vacuum",
            )
        };
        let d = page("\n  VACUUM\n");
        assert_eq!(d.sections.len(), 1);
        assert_eq!(d.sections[0].heading, "1. Syntax");
        let d = page("Rebuilds the database file.");
        assert_eq!(d.sections[0].text, "Rebuilds the database file.");
        let d = page("<p>VACUUM</p><p>Rebuilds the database file.</p>");
        assert_eq!(d.sections[0].text, "Rebuilds the database file.");
    }

    #[test]
    fn exponents_keep_their_caret() {
        let d = parse(
            "<h1>Uploads</h1><p>Chunks should not exceed 2 GB (2<sup>31</sup> bytes); the \
             default is 64*2<sup>10</sup> bytes, see x<sup>n + 1</sup>.<sup>[<a href=\"#f\">1</a>]</sup></p>",
            "up",
        );
        assert_eq!(
            d.sections[0].text,
            "Chunks should not exceed 2 GB (2^31 bytes); the default is 64*2^10 bytes, see x^(n + 1).[1]"
        );
    }

    /// Sphinx pages (Python's manual): a permalink "¶" after every heading and API entry.
    #[test]
    fn permalinks_are_left_out_of_headings_and_text() {
        let html = r##"<html><body><section id="d">
            <h2>Why are default values <em>shared</em>?<a class="headerlink" href="#d" title="Link to this heading">¶</a></h2>
            <dl><dt id="shutil.copy2"><code>shutil.copy2</code>(src, dst)<a class="reference internal" href="../_modules/shutil.html#copy2"><span class="viewcode-link"><span class="pre">[source]</span></span></a><a class="headerlink" href="#shutil.copy2">¶</a></dt>
            <dd><p>Like copy(), but keeps metadata.</p></dd></dl>
            <h3>Unclassed<a href="#u">#</a></h3><p>See <a href="#x">the FAQ</a>.</p></section></body></html>"##;
        let doc = parse(html, "faq");
        let headings: Vec<&str> = doc.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            headings,
            ["Why are default values shared?", "Unclassed"],
            "{doc:#?}"
        );
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(!all.contains('¶'), "{all}");
        assert!(
            !all.contains("source") && !all.contains("_modules"),
            "{all}"
        );
        assert!(all.contains("`shutil.copy2`(src, dst)"), "{all}");
        assert!(all.contains("the FAQ"), "{all}");
    }

    /// DocBook pages (PostgreSQL's manual): the navigation header repeats the page title
    /// and Prev / Up / Next; a note's title is an `<h3>` inside `div.note`.
    #[test]
    fn docbook_navigation_is_dropped_and_admonition_titles_stay_in_their_section() {
        let html = r#"<html><body>
            <div class="navheader"><table summary="Navigation header"><tr><th>20.5. Write Ahead Log</th></tr>
            <tr><td><a href="a.html">Prev</a></td><td><a href="b.html">Next</a></td></tr></table><hr></div>
            <div class="sect1"><h2 class="title">20.5. Write Ahead Log</h2>
            <div class="sect2"><h3 class="title">20.5.1. Settings</h3>
            <p>wal_level determines how much information is written.</p>
            <div class="note"><h3 class="title">Note</h3><p>Changing it needs a restart.</p></div>
            <p>fsync forces updates to disk.</p></div></div>
            <div class="navfooter"><a href="a.html">Prev</a> Home</div></body></html>"#;
        let doc = parse(html, "wal");
        let headings: Vec<&str> = doc.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            headings,
            ["20.5. Write Ahead Log", "20.5.1. Settings"],
            "{doc:#?}"
        );
        let settings = &doc.sections[1].text;
        assert!(settings.contains("Note:"), "{settings}");
        assert!(settings.contains("fsync forces updates"), "{settings}");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(!all.contains("Prev") && !all.contains("Home"), "{all}");
    }

    /// A site's menus before the page's first heading (SQLite's manual: lists of links
    /// with classes no rule names) are navigation; a list of links after a heading, a list
    /// with text of its own, and a page of links with no heading at all are text.
    #[test]
    fn link_menus_before_the_first_heading_are_dropped() {
        let html = r#"<html><head><title>VACUUM</title></head><body>
            <div class="tagline">Small. Fast. Reliable.</div>
            <div class="menu mainmenu"><ul><li><a href="index.html">Home</a>
            <li><a href="javascript:void(0)">Menu</a><li><a href="about.html">About</a>
            <li><a href="docs.html">Documentation</a></ul></div>
            <ul><li>Rebuilds the file <li>Repacks it <li><a href="x.html">frees</a> pages</ul>
            <p class="menu"><a href="m.html">Modules</a> | <a href="d.html">Directives</a> |
            <a href="g.html">Glossary</a></p>
            <div id="path"><a href="/">Apache</a> &gt; <a href="/s">Server</a> &gt;
            <a href="/d">Docs</a></div>
            <p>See <a href="a.html">one</a>, <a href="b.html">two</a> and <a href="c.html">three</a>.</p>
            <h2>1. Description</h2><p>The VACUUM command rebuilds the database file.</p>
            <p>See also:</p><ul><li><a href="a.html">ANALYZE</a><li><a href="b.html">REINDEX</a>
            <li><a href="c.html">PRAGMA</a></ul></body></html>"#;
        let doc = parse(html, "lang_vacuum");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(
            !all.contains("Home") && !all.contains("Documentation"),
            "{all}"
        );
        assert!(all.contains("Small. Fast. Reliable."), "{all}");
        assert!(
            !all.contains("Glossary") && !all.contains("Server"),
            "a trail: {all}"
        );
        assert!(
            all.contains("See [one]"),
            "a sentence of links stays: {all}"
        );
        assert!(
            all.contains("Repacks it"),
            "a list with its own text stays: {all}"
        );
        assert!(
            all.contains("REINDEX"),
            "links after the first heading stay: {all}"
        );
        // A block of links whose heading is a link too is where the page starts.
        let contents = r#"<html><body><div class="panel"><h2><a href="c.html">Contents</a></h2>
            <ul><li><a href="a.html">Alpha</a><li><a href="b.html">Beta</a><li><a href="g.html">Gamma</a>
            </ul></div></body></html>"#;
        let doc = parse(contents, "contents");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(all.contains("Beta"), "{all}");
        // A table of contents by its class (DocBook's, Sphinx's) is furniture wherever it
        // stands: its headings are read where they are.
        let toc = r#"<html><body><h1>Backup and Restore</h1><p>There are three approaches.</p>
            <div class="toc"><p>Table of Contents</p><dl class="toc"><dt><a href="d.html">SQL Dump</a></dt></dl></div>
            <div class="toctree-wrapper compound"><ul><li><a href="f.html">File System Level Backup</a></li></ul></div>
            </body></html>"#;
        let doc = parse(toc, "backup");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(all.contains("three approaches"), "{all}");
        assert!(
            !all.contains("Table of Contents")
                && !all.contains("SQL Dump")
                && !all.contains("File System"),
            "{all}"
        );
        let index = r#"<html><body><ul><li><a href="a.html">Alpha</a>
            <li><a href="b.html">Beta</a><li><a href="c.html">Gamma</a></ul></body></html>"#;
        let doc = parse(index, "index");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(
            all.contains("Beta"),
            "a page of links alone is its text: {all}"
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
        assert_eq!(d.sections[1].text, "- Page the on-call\n- Open a ticket");
        let all: String = d.sections.iter().map(|s| s.text.clone()).collect();
        assert!(!all.contains("secret") && !all.contains("color") && !all.contains("Menu"));
    }

    /// AsciiDoc (git's manual) and DocBook with graphics (the Debian Reference) lay an
    /// admonition out as a table: its title and text are lines of the section, not table
    /// cells. A data table inside a note stays a table.
    #[test]
    fn admonitions_laid_out_as_tables_read_as_title_and_paragraphs() {
        let html = r#"<html><body><h2>Blame</h2>
            <div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>
            <td class="content">For people who do parsing: ignore unknown lines.</td></tr></table></div>
            <h2>Boot</h2>
            <div class="warning"><table border="0" summary="Warning">
            <tr><td rowspan="2"><img alt="[Warning]" src="images/warning.png"/></td><th>Warning</th></tr>
            <tr><td><p>Do not play with boot loaders without rescue media.</p></td></tr></table></div>
            <div class="note"><h3>Note</h3><table><tr><th>file</th><th>content</th></tr>
            <tr><td>dpkg.log</td><td>dpkg activity</td></tr></table></div>
            </body></html>"#;
        let doc = parse(html, "admonitions");
        let blame = &doc.sections[0].text;
        assert!(!blame.contains('|'), "{blame}");
        assert!(
            blame.contains("Note:\n\nFor people who do parsing: ignore unknown lines."),
            "{blame}"
        );
        let boot = &doc.sections[1].text;
        assert!(
            boot.contains("Warning:\n\nDo not play with boot loaders without rescue media."),
            "{boot}"
        );
        assert!(!boot.contains("| Warning"), "{boot}");
        assert!(boot.contains("| dpkg.log | dpkg activity |"), "{boot}");
    }

    /// Sphinx writes an API entry's module and name as two code spans side by side.
    #[test]
    fn a_manual_page_in_one_pre_reads_as_sections() {
        let page = "<html><head><title>Postfix manual - postsuper(1)</title></head><body><pre>
POSTSUPER(1)                                                      POSTSUPER(1)

<b>NAME</b>
       postsuper - Postfix superintendent

<b>DESCRIPTION</b>
       <b>-d</b> <i>queue</i><b>_</b><i>id</i>
              Delete one message with the named queue ID.

              Specify \"-d ALL\" to remove all messages.
</pre></body></html>";
        let doc = parse(page, "postsuper.1");
        let headings: Vec<&str> = doc.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(headings, ["NAME", "DESCRIPTION"]);
        assert_eq!(
            doc.sections[1].text,
            "-d queue_id\n: Delete one message with the named queue ID.\n\nSpecify \"-d ALL\" \
             to remove all messages."
        );
    }

    #[test]
    fn adjacent_code_spans_read_as_one() {
        let html = r#"<html><body><h2>The per-view cache</h2><dl class="py function">
            <dt><code class="descclassname">django.views.decorators.cache.</code><code class="descname">cache_page</code>()</dt>
            <dd><p>Caches the view.</p></dd></dl></body></html>"#;
        let doc = parse(html, "cache");
        let text = &doc.sections[0].text;
        assert!(
            text.contains("`django.views.decorators.cache.cache_page`()"),
            "{text}"
        );
    }

    #[test]
    fn definition_lists_keep_each_term_before_its_definition() {
        // As asciidoc writes a manual page's options, and a subcommand whose definition
        // starts with a list (left unmarked).
        let html = r#"<h2>OPTIONS</h2><div class="dlist"><dl>
            <dt class="hdlist1">-k</dt><dt class="hdlist1">--keep-index</dt>
            <dd><p>Changes already added to the <code>index</code> are left intact.</p>
                <p>A second paragraph.</p></dd>
            <dt>foreach [--recursive] &lt;command&gt;</dt>
            <dd><p><a href="x.html">Evaluates</a> a command.</p></dd>
            <dt>sync</dt><dd><ul><li>first</li></ul></dd></dl></div>"#;
        let d = parse(html, "m");
        assert_eq!(
            d.sections[0].text,
            "-k\n--keep-index\n: Changes already added to the `index` are left intact.\n\
             A second paragraph.\n\nforeach [--recursive] <command>\n: [Evaluates](x.html) \
             a command.\n\nsync\n- first"
        );
        let html = crate::service::document::markdown_html(&d.sections[0].text);
        assert!(
            html.contains("<dt>foreach [--recursive] &lt;command&gt;</dt>"),
            "{html}"
        );
        assert_eq!(html.matches("<dd>").count(), 2, "{html}");
        // A definition holding only a nested list: the inner term is not marked as the
        // outer term's definition.
        let d = parse(
            "<dl><dt>outer</dt><dd><dl><dt>inner</dt><dd><p>Its definition.</p></dd></dl></dd></dl>",
            "n",
        );
        assert_eq!(d.sections[0].text, "outer\ninner\n: Its definition.");
        // A term ending in ':' introduces its definition already.
        let d = parse(
            "<dl><dt>Description:</dt><dd><p>You want all requests on HTTPS.</p></dd></dl>",
            "n",
        );
        assert_eq!(
            d.sections[0].text,
            "Description:\nYou want all requests on HTTPS."
        );
    }
}
