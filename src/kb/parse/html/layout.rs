//! Text that a page lays out with the wrong element: prose set in `<pre>` to keep its
//! line breaks, and a reference entry's name set in bold instead of a heading. HAProxy's
//! manuals do both (`<pre class="text">` for every description, `<div class="keyword">
//! <b><a name="stats enable">…</a></b></div>` for every keyword), and read as they are
//! laid out, every answer quoted a code block and no passage named its keyword.

use ego_tree::NodeRef;
use scraper::{ElementRef, Node};

use crate::kb::parse::collapse_ws;

/// Whether a `<pre>` is plain preformatted text, which may be prose: no class or only
/// "text", no `<code>`/`<samp>`/`<kbd>`/`<tt>` inside, no highlighter around it. Markup
/// that says code or output is believed: AsciiDoc's `<pre><code>`, DocBook's `screen`
/// and `programlisting`, Sphinx's `highlight` blocks hold program output and settings
/// that read as sentences too ("FATAL: password authentication failed for user …").
pub(super) fn plain_pre(node: NodeRef<'_, Node>) -> bool {
    let Some(e) = node.value().as_element() else {
        return false;
    };
    let code_inside = node.children().any(|c| {
        c.value()
            .as_element()
            .is_some_and(|e| matches!(e.name(), "code" | "samp" | "kbd" | "tt"))
    });
    let highlighted = node.ancestors().any(|a| {
        a.value()
            .as_element()
            .is_some_and(|e| e.classes().any(|c| c.contains("highlight")))
    });
    e.classes().all(|c| matches!(c, "text" | "plaintext")) && !code_inside && !highlighted
}

/// The paragraphs of a plain `<pre>` block (`plain_pre`) that is prose, or None where it
/// is code or output. Prose: lines of words (five or more a line on average, or one
/// finished sentence of three; letters nearly all of what is not space), at least one
/// finished sentence, and no line a comment, a prompt, a statement's end or a brace (a
/// wrapped line may end with a comma or a parenthesis). A paragraph's wrapped lines are
/// joined; a line that starts a list item ("- …", "* …") starts a paragraph of its own.
pub(super) fn prose_paragraphs(text: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    // One short finished sentence is prose too ("Enable HTTP compression.").
    let one_sentence = lines.len() == 1
        && words >= 3
        && lines[0].ends_with('.')
        && lines[0].starts_with(char::is_uppercase);
    if words < 5 * lines.len() && !one_sentence {
        return None;
    }
    let code_line = |l: &&str| {
        [
            "#", "//", ";", "--", "$ ", "> ", "/*", "*/", "<!--", "{", "}",
        ]
        .iter()
        .any(|p| l.starts_with(p))
            || [";", "{", "}", "\\"].iter().any(|e| l.ends_with(e))
    };
    if lines.iter().any(code_line) {
        return None;
    }
    let visible: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    let letters = visible.iter().filter(|c| c.is_alphabetic()).count();
    if letters * 100 < visible.len() * 85 {
        return None;
    }
    let sentence = lines.iter().any(|l| l.ends_with('.'))
        || text.contains(". ")
        || (lines.len() == 1 && lines[0].starts_with(char::is_uppercase));
    if !sentence {
        return None;
    }
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut flush = |current: &mut Vec<&str>| {
        if !current.is_empty() {
            paragraphs.push(current.join(" "));
            current.clear();
        }
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("- ") || line.starts_with("* ") {
            flush(&mut current);
        }
        if !line.is_empty() {
            current.push(line);
        }
    }
    flush(&mut current);
    Some(paragraphs.iter().map(|p| collapse_ws(p)).collect())
}

/// A reference entry's name set as a bold line with its own anchor: a heading.
pub(super) struct TermHeading {
    /// The bold name ("stats show-node").
    pub name: String,
    /// The whole line where arguments follow the name ("stats show-node [ <name> ]").
    pub signature: Option<String>,
}

/// The name of a reference entry set as a bold line with its own anchor, to be read as a
/// heading: a `<div>` or `<p>` that opens with one `<b>`/`<strong>` of at most 8 words,
/// holding an element other pages link to (`name` or `id`), followed by nothing or by a
/// line of arguments (the whole at most 300 characters), not ending as a sentence or a
/// label does (an ellipsis of more arguments aside). DocBook's bold titles of tables and examples carry their anchor on
/// the enclosing element and stay text.
pub(super) fn term_heading(node: NodeRef<'_, Node>) -> Option<TermHeading> {
    let el = ElementRef::wrap(node)?;
    if !matches!(el.value().name(), "div" | "p") {
        return None;
    }
    let mut bold = None;
    for child in node.children() {
        match child.value() {
            Node::Text(t) if t.trim().is_empty() && bold.is_none() => {}
            Node::Element(e) if matches!(e.name(), "b" | "strong") && bold.is_none() => {
                bold = Some(child)
            }
            // An empty anchor before the term.
            Node::Element(e) if e.name() == "a" && child.children().next().is_none() => {}
            // Arguments after it, inline.
            Node::Text(_) if bold.is_some() => {}
            Node::Element(e)
                if bold.is_some() && matches!(e.name(), "span" | "i" | "em" | "var" | "code") => {}
            _ => return None,
        }
    }
    let bold = ElementRef::wrap(bold?)?;
    let anchored = bold
        .descendants()
        .filter_map(|n| n.value().as_element())
        .any(|e| e.attr("name").is_some() || e.attr("id").is_some());
    let name = collapse_ws(&bold.text().collect::<String>());
    let line = collapse_ws(&el.text().collect::<String>());
    let words = name.split_whitespace().count();
    let fits = (1..=8).contains(&words) && line.chars().count() <= 300;
    // "compression algo <algorithm> ..." continues with more arguments; it ends no
    // sentence.
    let ends_sentence =
        line.ends_with(['.', ':', '!', '?']) && !line.ends_with("...") && !line.ends_with('…');
    if !anchored || !fits || ends_sentence {
        return None;
    }
    Some(TermHeading {
        signature: (line != name).then_some(line),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use scraper::{Html, Selector};

    #[test]
    fn wrapped_prose_in_pre_is_paragraphs_and_code_is_not() {
        let prose = "This statement enables statistics reporting with default settings\n\
                     defined at build time. Unless stated otherwise, these settings are used :\n\
                     \x20 - stats uri   : the page's address\n\
                     \x20 - stats realm : the name shown when it asks for a password\n\n\
                     Though this statement alone is enough to enable statistics reporting, it is\n\
                     recommended to set all other settings.\n";
        let paragraphs = prose_paragraphs(prose).unwrap();
        assert_eq!(paragraphs.len(), 4, "{paragraphs:?}");
        assert!(paragraphs[0].starts_with("This statement enables statistics reporting with default settings defined at build time."));
        assert_eq!(paragraphs[1], "- stats uri : the page's address");
        assert_eq!(
            prose_paragraphs("Enable statistics reporting with default settings").unwrap(),
            ["Enable statistics reporting with default settings"]
        );
        assert_eq!(
            prose_paragraphs("Enable HTTP compression.\n").unwrap(),
            ["Enable HTTP compression."]
        );
        assert_eq!(prose_paragraphs("make install\n"), None);
        let wrapped = "When dynamic cookies are enabled (see the \"dynamic\" directive for\n\
                       cookie), a cookie is created for each server (unless one is set on the\n\
                       server line), using a hash of the address of the server, the port,\n\
                       and the secret key.\n";
        assert_eq!(prose_paragraphs(wrapped).map(|p| p.len()), Some(1));
        for code in [
            "backend public_www\n    server srv1 192.168.0.1:80\n    stats enable\n",
            "SELECT city, temp_lo FROM weather WHERE city = 'San Francisco' AND prcp > 0.0;\n",
            "# Run this after every upgrade so that the new settings are picked up.\nmake install\n",
            "$ git add Documentation/\\*.txt and then commit the result of the change.\n",
            "git add [--verbose | -v] [--dry-run | -n] [--force | -f] [--interactive | -i]\n",
        ] {
            assert_eq!(prose_paragraphs(code), None, "{code}");
        }
    }

    fn first(html: &str, selector: &str) -> Option<(String, Option<String>)> {
        let doc = Html::parse_fragment(html);
        let el = doc
            .select(&Selector::parse(selector).unwrap())
            .next()
            .unwrap();
        term_heading(*el).map(|t| (t.name, t.signature))
    }

    #[test]
    fn a_bold_anchored_name_is_a_heading_and_a_bold_title_is_not() {
        let haproxy = r##"<div class="keyword"><b><a class="anchor" name="stats enable"></a><a href="#4.2-stats%20enable">stats enable</a></b></div>"##;
        assert_eq!(first(haproxy, "div"), Some(("stats enable".into(), None)));
        let with_arguments = r##"<div class="keyword"><b><a class="anchor" name="stats show-node"></a><a href="#4.2-stats%20show-node">stats show-node</a></b> <span style="color: #008">[ <span>&lt;name&gt;</span> ]</span></div>"##;
        assert_eq!(
            first(with_arguments, "div"),
            Some((
                "stats show-node".into(),
                Some("stats show-node [ <name> ]".into())
            ))
        );
        // DocBook: the anchor is on the enclosing element.
        let docbook = r#"<div class="table" id="T1"><p class="title"><strong>Table 9.1. Comparison Operators</strong></p></div>"#;
        assert_eq!(first(docbook, "p"), None);
        let more = r##"<div class="keyword"><b><a class="anchor" name="compression algo"></a><a href="#c">compression algo</a></b> <span>&lt;algorithm&gt;</span> ...</div>"##;
        assert_eq!(
            first(more, "div"),
            Some((
                "compression algo".into(),
                Some("compression algo <algorithm> ...".into())
            ))
        );
        // A label, and bold inside a sentence.
        assert_eq!(first(r##"<p><b><a name="n">Note:</a></b></p>"##, "p"), None);
        assert_eq!(
            first(r##"<p>Use <b><a name="x">stats</a></b> here</p>"##, "p"),
            None
        );
    }
}
