//! The block structure every parser keeps, written as a small, regular Markdown: one line
//! per paragraph (never wrapped), fenced code blocks with their language, `- ` / `1. `
//! list items (nested items indented), `> ` block quotes, pipe tables with a header row,
//! definition lists (`term` lines, then `: definition`, then a blank line),
//! `` `inline code` `` and `[links](target)`. A section's stored text is this Markdown.
//!
//! Why Markdown rather than a tree of typed blocks: the seed formats' answers are
//! strings, and Markdown is what they carry to a user, so chunks, evidence sentences,
//! answers, MCP's `read_section` and the Reader all read one text; pulldown-cmark turns
//! it back into typed events where structure matters (rendering). The regularity is what
//! the line-based consumers rely on: a code block is the only multi-line unit
//! (`code_fences`), every other block is whole lines.

/// Frames nest (quotes, list items) up to this depth; deeper ones keep their text in the
/// enclosing frame, so hostile nesting cannot make closing frames quadratic.
const MAX_FRAMES: usize = 32;

#[derive(Debug)]
enum Frame {
    Root,
    Quote,
    /// A list item with its marker ("- ", "3. ").
    Item(String),
}

/// Builds a section's Markdown from parser callbacks.
#[derive(Debug)]
pub(crate) struct MarkdownWriter {
    frames: Vec<(Frame, String)>,
    /// Frames refused by `MAX_FRAMES`, still to be closed.
    overflow: usize,
    /// Open links: where each one's text starts in the current frame's buffer.
    links: Vec<usize>,
    /// The current table row's cells, and where the open cell starts.
    row: Option<(Vec<String>, usize)>,
    /// Rows written in the current table (the first is its header).
    table_rows: usize,
    /// A definition (`<dd>`) has opened and its first text is still to come: it starts
    /// a line with `: `, the definition-list syntax pulldown-cmark reads.
    definition_pending: bool,
}

impl Default for MarkdownWriter {
    fn default() -> Self {
        MarkdownWriter {
            frames: vec![(Frame::Root, String::new())],
            overflow: 0,
            links: Vec::new(),
            row: None,
            table_rows: 0,
            definition_pending: false,
        }
    }
}

impl MarkdownWriter {
    fn buf(&mut self) -> &mut String {
        &mut self.frames.last_mut().expect("the root frame stays").1
    }

    /// Inline text, as is (callers collapse whitespace where their format asks for it).
    pub(crate) fn text(&mut self, s: &str) {
        self.open_definition();
        self.buf().push_str(s);
    }

    /// The lines before this call are a term; the next text starts its definition
    /// (`term` / `: definition`). A definition that opens with a block (a list, code)
    /// stays unmarked.
    pub(crate) fn definition_start(&mut self) {
        self.line_break();
        self.definition_pending = true;
    }

    /// A term (`<dt>`) starts: a definition still waiting for its text (one that held
    /// only a nested list's terms) is not marked.
    pub(crate) fn term_start(&mut self) {
        self.definition_pending = false;
    }

    fn open_definition(&mut self) {
        if std::mem::take(&mut self.definition_pending) {
            self.line_break();
            let b = self.buf();
            // Only after a term: a definition with nothing before it is plain text. A
            // term that ends in ':' ("Description:", Apache's rewrite guides) already
            // introduces it; marked again it reads "Description: : You want…".
            let term = b.trim_end();
            if !term.is_empty() && !term.ends_with(':') {
                b.push_str(": ");
            }
        }
    }

    /// A space between inline runs, unless the line already ends in one.
    pub(crate) fn space(&mut self) {
        let b = self.buf();
        if !b.is_empty() && !b.ends_with([' ', '\n']) {
            b.push(' ');
        }
    }

    pub(crate) fn inline_code(&mut self, code: &str) {
        self.open_definition();
        let code = code.replace('\n', " ");
        let fence = "`".repeat(longest_run(&code, '`') + 1);
        let pad = if code.starts_with('`') || code.ends_with('`') {
            " "
        } else {
            ""
        };
        let buf = self.buf();
        // Adjacent spans are one: Sphinx writes a signature's module and name as two
        // (`<code>django.views.decorators.cache.</code><code>cache_page</code>`), which
        // as two spans reads "`django.views.decorators.cache.``cache_page`".
        if fence == "`" && pad.is_empty() && buf.ends_with('`') && !buf.ends_with("``") {
            buf.pop();
            buf.push_str(&format!("{code}`"));
            return;
        }
        buf.push_str(&format!("{fence}{pad}{code}{pad}{fence}"));
    }

    pub(crate) fn link_start(&mut self) {
        self.open_definition();
        let at = self.buf().len();
        self.links.push(at);
    }

    /// Closes the open link: its text becomes `[text](target)` when the target is one a
    /// reader can follow (web, mail, relative or in-page); otherwise only the text stays.
    pub(crate) fn link_end(&mut self, target: &str) {
        let Some(at) = self.links.pop() else { return };
        let buf = self.buf();
        if at > buf.len() || !buf.is_char_boundary(at) {
            return;
        }
        let text = buf[at..].trim().to_string();
        let target = target.trim();
        if text.is_empty() || !followable(target) || text.contains('\n') {
            return;
        }
        buf.truncate(at);
        let text = text.replace('[', "\\[").replace(']', "\\]");
        let target = target
            .replace(' ', "%20")
            .replace('(', "%28")
            .replace(')', "%29");
        buf.push_str(&format!("[{text}]({target})"));
    }

    /// Ends the current line (a hard break inside a paragraph).
    pub(crate) fn line_break(&mut self) {
        let b = self.buf();
        if !b.is_empty() && !b.ends_with('\n') {
            b.push('\n');
        }
    }

    /// Separates blocks with one blank line.
    pub(crate) fn block_break(&mut self) {
        let b = self.buf();
        let trimmed = b.trim_end_matches([' ', '\t']).len();
        b.truncate(trimmed);
        if b.is_empty() || b.ends_with("\n\n") {
            return;
        }
        b.push_str(if b.ends_with('\n') { "\n" } else { "\n\n" });
    }

    pub(crate) fn code_block(&mut self, lang: &str, code: &str) {
        let code = code.trim_end_matches(['\n', '\r']);
        if code.trim().is_empty() {
            return;
        }
        self.definition_pending = false;
        let fence = "`".repeat(longest_run(code, '`').max(2) + 1);
        let lang: String = lang
            .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_alphanumeric() || "+-_.#".contains(*c))
            .take(32)
            .collect();
        self.block_break();
        self.buf()
            .push_str(&format!("{fence}{lang}\n{code}\n{fence}"));
        self.block_break();
    }

    pub(crate) fn quote_start(&mut self) {
        self.push_frame(Frame::Quote);
    }

    /// `marker` is "- " or "N. ".
    pub(crate) fn item_start(&mut self, marker: &str) {
        self.push_frame(Frame::Item(marker.to_string()));
    }

    pub(crate) fn quote_end(&mut self) {
        self.pop_frame();
    }

    pub(crate) fn item_end(&mut self) {
        self.pop_frame();
    }

    fn push_frame(&mut self, frame: Frame) {
        self.definition_pending = false;
        if self.frames.len() >= MAX_FRAMES {
            self.overflow += 1;
            self.block_break();
            return;
        }
        if matches!(frame, Frame::Quote) {
            self.block_break();
        } else {
            self.line_break();
        }
        self.frames.push((frame, String::new()));
    }

    fn pop_frame(&mut self) {
        if self.overflow > 0 {
            self.overflow -= 1;
            self.block_break();
            return;
        }
        if self.frames.len() < 2 {
            return;
        }
        let (frame, content) = self.frames.pop().expect("checked above");
        let content = tidy(&content);
        let parent = self.buf();
        match frame {
            Frame::Quote => {
                if content.is_empty() {
                    return;
                }
                for line in content.lines() {
                    parent.push_str(if line.is_empty() { ">" } else { "> " });
                    parent.push_str(line);
                    parent.push('\n');
                }
                self.block_break();
            }
            Frame::Item(marker) => {
                let indent = " ".repeat(marker.len());
                parent.push_str(&marker);
                for (i, line) in content.lines().enumerate() {
                    if i > 0 {
                        parent.push('\n');
                        if !line.is_empty() {
                            parent.push_str(&indent);
                        }
                    }
                    parent.push_str(line);
                }
                parent.push('\n');
            }
            Frame::Root => unreachable!("the root frame is never pushed"),
        }
    }

    pub(crate) fn cell_start(&mut self) {
        let at = self.buf().len();
        match self.row.as_mut() {
            Some((_, start)) => *start = at,
            None => self.row = Some((Vec::new(), at)),
        }
    }

    pub(crate) fn cell_end(&mut self) {
        let len = self.buf().len();
        let Some((_, start)) = self.row.as_ref() else {
            return;
        };
        let start = (*start).min(len);
        let cell = self.buf().split_off(start);
        let cell = cell
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|");
        if let Some((cells, _)) = self.row.as_mut() {
            cells.push(cell);
        }
    }

    /// Writes the finished row; the table's first row is its header.
    pub(crate) fn row_end(&mut self) {
        let Some((cells, _)) = self.row.take() else {
            return;
        };
        if cells.iter().all(|c| c.is_empty()) {
            return;
        }
        if self.table_rows == 0 {
            self.block_break();
        } else {
            self.line_break();
        }
        let line = format!("| {} |", cells.join(" | "));
        self.buf().push_str(&line);
        if self.table_rows == 0 {
            let rule = format!("\n|{}", " --- |".repeat(cells.len()));
            self.buf().push_str(&rule);
        }
        self.table_rows += 1;
    }

    pub(crate) fn table_start(&mut self) {
        self.definition_pending = false;
        self.table_rows = 0;
        self.row = None;
        self.block_break();
    }

    pub(crate) fn table_end(&mut self) {
        if self.row.is_some() {
            self.row_end();
        }
        self.table_rows = 0;
        self.block_break();
    }

    /// The section's Markdown: open frames closed, blank-line runs collapsed.
    pub(crate) fn finish(mut self) -> String {
        self.overflow = 0;
        while self.frames.len() > 1 {
            self.pop_frame();
        }
        tidy(&self.frames.pop().expect("the root frame").1)
    }
}

/// Whether a link target is one the Reader may follow: http(s), mail, or a path or
/// anchor inside the knowledge base (no scheme). `javascript:`, `data:` and other
/// schemes keep only the link text.
pub fn followable(target: &str) -> bool {
    if target.is_empty() || target.contains(['\n', '<', '>', '"']) {
        return false;
    }
    let lower = target.to_ascii_lowercase();
    match lower.split_once(':') {
        Some((scheme, _))
            if scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)) =>
        {
            matches!(scheme, "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// What a reader of rendered Markdown sees: the text and code, without backticks, fences,
/// link targets or table rules (blocks end in line breaks).
pub fn visible_text(md: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, TagEnd};
    let mut out = String::with_capacity(md.len());
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_DEFINITION_LIST) {
        match event {
            Event::Text(t) | Event::Code(t) | Event::InlineHtml(t) | Event::Html(t) => {
                out.push_str(&t)
            }
            Event::SoftBreak => out.push(' '),
            Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::CodeBlock
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::DefinitionListTitle
                | TagEnd::DefinitionListDefinition
                | TagEnd::Heading(_),
            ) if !out.ends_with('\n') => out.push('\n'),
            Event::End(TagEnd::TableCell) => out.push_str(" | "),
            _ => {}
        }
    }
    out
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// Trailing spaces dropped, blank-line runs made one, except inside fenced code.
pub(crate) fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if let Some(f) = &fence {
            out.push('\n');
            out.push_str(line);
            if line.trim_start() == f {
                fence = None;
            }
            continue;
        }
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank {
                out.push('\n');
            }
        }
        blank = false;
        out.push_str(line);
        fence = fence_of(line);
    }
    out
}

/// The fence a line opens (three or more backticks, then an info string), if any.
pub(crate) fn fence_of(line: &str) -> Option<String> {
    let t = line.trim_start();
    let n = t.chars().take_while(|c| *c == '`').count();
    (n >= 3 && !t[n..].contains('`')).then(|| "`".repeat(n))
}

/// A pipe table's header rule, `| --- | :-: |`: structure, not a sentence.
pub fn is_table_rule(line: &str) -> bool {
    let l = line.trim();
    l.starts_with('|') && l.contains('-') && l.chars().all(|c| "|-: ".contains(c))
}

/// Byte ranges of the fenced code blocks in a section's Markdown, fences included. An
/// unclosed fence runs to the end.
pub fn code_fences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let end = pos + line.len();
        let bare = line.trim_end_matches(['\n', '\r']);
        match &open {
            Some((start, f)) if bare.trim() == f => {
                out.push((*start, pos + bare.len()));
                open = None;
            }
            Some(_) => {}
            None => {
                if let Some(f) = fence_of(bare) {
                    open = Some((pos, f));
                }
            }
        }
        pos = end;
    }
    if let Some((start, _)) = open {
        out.push((start, text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_out_as_regular_markdown() {
        let mut w = MarkdownWriter::default();
        w.text("Roll back with ");
        w.inline_code("kubectl rollout undo");
        w.text(" or see ");
        w.link_start();
        w.text("the guide");
        w.link_end("rollbacks.md#undo");
        w.text(".");
        w.block_break();
        w.code_block(
            "bash title=x",
            "kubectl rollout undo deploy/web\nkubectl get pods\n",
        );
        w.item_start("- ");
        w.text("first");
        w.item_start("1. ");
        w.text("nested");
        w.item_end();
        w.item_end();
        w.item_start("- ");
        w.text("second");
        w.item_end();
        w.table_start();
        for (i, row) in [["Flag", "Meaning"], ["--dry-run", "a|b"]]
            .iter()
            .enumerate()
        {
            for cell in row {
                w.cell_start();
                w.text(cell);
                w.cell_end();
            }
            w.row_end();
            assert_eq!(w.table_rows, i + 1);
        }
        w.table_end();
        w.quote_start();
        w.text("Careful.");
        w.quote_end();
        w.link_start();
        w.text("click");
        w.link_end("javascript:alert(1)");
        assert_eq!(
            w.finish(),
            "Roll back with `kubectl rollout undo` or see [the guide](rollbacks.md#undo).\n\n\
             ```bash\nkubectl rollout undo deploy/web\nkubectl get pods\n```\n\n\
             - first\n  1. nested\n- second\n\n\
             | Flag | Meaning |\n| --- | --- |\n| --dry-run | a\\|b |\n\n\
             > Careful.\n\nclick"
        );
    }

    #[test]
    fn fences_are_found_and_longer_fences_protect_backticks() {
        let mut w = MarkdownWriter::default();
        w.text("Intro:");
        w.code_block("", "echo ```\n\n\nx");
        w.text("after");
        let md = w.finish();
        assert_eq!(md, "Intro:\n\n````\necho ```\n\n\nx\n````\n\nafter");
        let fences = code_fences(&md);
        assert_eq!(fences.len(), 1);
        let (s, e) = fences[0];
        assert!(md[s..e].starts_with("````") && md[s..e].ends_with("````"));
    }

    #[test]
    fn deep_nesting_is_capped_and_everything_closes() {
        let mut w = MarkdownWriter::default();
        for _ in 0..10_000 {
            w.quote_start();
            w.item_start("- ");
        }
        w.text("deep");
        let md = w.finish();
        assert!(md.contains("deep"));
        assert!(md.lines().count() < 100);
    }

    #[test]
    fn visible_text_drops_the_markup() {
        let md = "Run `git stash` pop, see [the guide](x.md).\n\n```sh\ngit stash list\n```";
        assert_eq!(
            visible_text(md),
            "Run git stash pop, see the guide.\ngit stash list\n"
        );
    }

    #[test]
    fn only_followable_targets_become_links() {
        assert!(followable("https://example.org/a"));
        assert!(followable("../ops/rollbacks.md#undo"));
        assert!(followable("#section"));
        assert!(!followable("javascript:alert(1)"));
        assert!(!followable("JaVaScRiPt:x"));
        assert!(!followable("data:text/html,<b>"));
        assert!(!followable(""));
    }
}
