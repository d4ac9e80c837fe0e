//! Section text cut into evidence units: sentences, lines, code blocks with the line
//! introducing them, and terms with their descriptions.

/// A unit of evidence: a sentence, a line, a code block with the line introducing it, or
/// a term with its description.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub text: String,
    /// The source text the unit was made from, as it stands in the section (an entry's
    /// `text` joins its term and description with `: `; its source keeps their lines):
    /// what tells which chunk holds the unit.
    pub source: String,
}

impl Unit {
    fn same(text: &str) -> Unit {
        Unit {
            text: text.trim().to_string(),
            source: text.trim().to_string(),
        }
    }
}

/// Splits section text into sentences (see `units`).
pub fn split_sentences(text: &str) -> Vec<String> {
    units(text).into_iter().map(|u| u.text).collect()
}

/// Splits section text into sentences (and lines: lists and commands are one per line);
/// drops fragments too short to stand alone. A term with its description stays one
/// unit, term first, so the description is never separated from what it describes: an
/// option entry of a manual page (flag lines such as `-k` / `--keep-index`, then their
/// description) or a definition list's entry (`term` / `: definition`, as the parsers
/// write `<dt>`/`<dd>`). A description too long for one unit gives its first sentence
/// the term and the rest its own sentences.
pub fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    // A line ending in ':' introduces the next line (usually a command): keep them
    // together. A fenced code block is one unit, after the line that introduces it.
    // Each line is kept with its source (the lines it joins, as written).
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut fence: Option<String> = None;
    // Whether the open code block is inside a block quote, whose markers its lines carry.
    let mut quoted_fence = false;
    for raw in text.lines() {
        // A block quote's markers are formatting: a code block quoted on SQLite's pages
        // ("> ```") was not seen as one, and its command was a sentence of its own.
        let quoted = raw.trim_start().starts_with('>');
        let line = if quoted && (fence.is_none() || quoted_fence) {
            unquote(raw)
        } else {
            raw
        };
        if let Some(f) = &fence {
            let (unit, source) = lines.last_mut().expect("the fence's opening line");
            unit.push('\n');
            unit.push_str(line);
            source.push('\n');
            source.push_str(raw);
            if line.trim() == f {
                fence = None;
            }
            continue;
        }
        if crate::kb::parse::is_table_rule(line) {
            // The row above the rule is the table's header: column names, which answer
            // nothing on their own and were copied into answers ("| stage | weight |
            // minimum duration |").
            if lines
                .last()
                .is_some_and(|l| l.0.trim_start().starts_with('|'))
            {
                lines.pop();
            }
            continue;
        }
        fence = crate::kb::parse::fence_of(line);
        quoted_fence = quoted;
        if fence.is_some() {
            // Markdown puts a blank line between a block and the line introducing it.
            let blanks = lines
                .iter()
                .rev()
                .take_while(|l| l.0.trim().is_empty())
                .count();
            let before = lines.len() - blanks;
            if before > 0 && introduces_code(&lines[before - 1].0) {
                lines.truncate(before);
                split_off_last_sentence(&mut lines);
            }
        }
        let sep = if fence.is_some() { '\n' } else { ' ' };
        let introduced = |prev: &str| {
            if fence.is_some() {
                introduces_code(prev)
            } else {
                prev.trim_end().ends_with(':') && !prev.contains("```")
            }
        };
        match lines.last_mut() {
            Some((prev, source)) if introduced(prev) => {
                prev.truncate(prev.trim_end().len());
                prev.push(sep);
                prev.push_str(if fence.is_some() { line } else { line.trim() });
                source.push('\n');
                source.push_str(raw);
            }
            _ => lines.push((line.to_string(), raw.to_string())),
        }
    }
    let mut n = 0;
    while n < lines.len() {
        let terms = term_lines(&lines, n);
        if terms > 0 {
            let term = lines[n..n + terms]
                .iter()
                .map(|l| l.0.trim())
                .collect::<Vec<_>>()
                .join(", ");
            let mut source: Vec<&str> = lines[n..n + terms].iter().map(|l| l.1.as_str()).collect();
            let mut entry = term.clone();
            let mut m = n + terms;
            let mut rest = None;
            while m < lines.len() && (m == n + terms || is_description_line(&lines, m)) {
                let raw = lines[m].0.trim();
                let line = raw.strip_prefix(": ").unwrap_or(raw).trim();
                if m > n + terms && raw.starts_with(": ") {
                    break;
                }
                if entry.chars().count() + line.chars().count() > MAX_SENTENCE_CHARS {
                    if m == n + terms {
                        // Too long as a whole: its first sentence goes with the term.
                        let sentences = line_sentences(line);
                        if let Some(first) = sentences.first() {
                            entry = format!("{term}: {first}");
                            source.push(lines[m].1.as_str());
                            rest = Some(line[first.len()..].trim().to_string());
                        }
                    }
                    break;
                }
                entry.push_str(if m > n + terms { " " } else { ": " });
                entry.push_str(line);
                source.push(lines[m].1.as_str());
                m += 1;
            }
            if m > n + terms || rest.is_some() {
                let unit = Unit {
                    text: entry,
                    source: source.join("\n"),
                };
                push_unit(&mut out, unit);
            }
            n = m;
            if let Some(rest) = rest {
                // The long line's other sentences, as any line's.
                lines[m] = (rest.clone(), rest);
            }
            continue;
        }
        let line = &lines[n].0;
        n += 1;
        if line.contains("```") && line.contains('\n') {
            // A code block (with its introducing line) is never split at its periods.
            // A definition's paragraph introducing it keeps its place in the source only.
            let text = line.trim();
            push_unit(
                &mut out,
                Unit {
                    text: text.strip_prefix(": ").unwrap_or(text).to_string(),
                    source: lines[n - 1].1.trim().to_string(),
                },
            );
            continue;
        }
        // A chunk can start inside a sentence (chunks overlap): skip that fragment.
        let line = if n == 1 && line.starts_with(|c: char| c.is_lowercase() || ",;)".contains(c)) {
            match line.find(". ") {
                Some(i) => &line[i + 2..],
                None => continue,
            }
        } else {
            line.as_str()
        };
        // A definition whose term was too long to be one stands as a paragraph.
        let line = line.strip_prefix(": ").unwrap_or(line);
        for s in line_sentences(line) {
            push_unit(&mut out, Unit::same(s));
        }
    }
    out
}

/// A block quote's line without its markers (`> `, nested `> > `).
fn unquote(line: &str) -> &str {
    let mut rest = line.trim_start();
    while let Some(r) = rest.strip_prefix('>') {
        rest = r.strip_prefix(' ').unwrap_or(r);
        if !rest.trim_start().starts_with('>') {
            break;
        }
        rest = rest.trim_start();
    }
    rest
}

/// Whether `line` introduces the code block after it: it ends with ':', stops
/// mid-sentence, as manual pages introduce their examples ("If that version works
/// correctly, type", "you might use"; then not a heading, list item, table row, option
/// or definition), or its last sentence announces what follows ("The following command
/// sends all syslog messages to a remote server via TCP port 10514.", "… as follows.").
fn introduces_code(line: &str) -> bool {
    let l = line.trim();
    if l.contains("```") {
        return false;
    }
    l.ends_with(':')
        || (!is_list_item(l)
            && !l.starts_with(['|', ':', '#'])
            && !is_option_line(l)
            && (l.ends_with(|c: char| c == ',' || c.is_alphanumeric()) || announces_next(l)))
}

/// Whether a finished line's last sentence points at what comes after it.
fn announces_next(line: &str) -> bool {
    if !line.ends_with('.') {
        return false;
    }
    let last = line_sentences(line)
        .pop()
        .unwrap_or_default()
        .to_lowercase();
    last.contains("the following ")
        || last.ends_with("as follows.")
        || last.ends_with("like this.")
        || last.ends_with("below.")
}

/// Keeps only the last sentence of the last line as the introduction of the code block
/// that follows: the line's earlier sentences become a line of their own, so they stay
/// sentences rather than a preamble to the code.
fn split_off_last_sentence(lines: &mut Vec<(String, String)>) {
    let Some((line, source)) = lines.last() else {
        return;
    };
    // A line joined from several (its source differs), a definition or a list item is
    // left whole: its parts belong together. So is a paragraph ending in ':' with a
    // blank line before its block (the blank is joined to it): split too, the reader's
    // answers lost keywords (docs/CHANGELOG.md, 2026-11-27, seventh sitting).
    if line != source || line.trim_start().starts_with(": ") || is_list_item(line) {
        return;
    }
    let sentences = line_sentences(line);
    let Some(last) = sentences.last().filter(|_| sentences.len() > 1) else {
        return;
    };
    // The last sentence is the line's end: its last occurrence.
    let start = line.rfind(last).unwrap_or(0);
    let (earlier, intro) = (
        line[..start].trim_end().to_string(),
        line[start..].to_string(),
    );
    lines.pop();
    lines.push((earlier.clone(), earlier));
    lines.push((intro.clone(), intro));
}

/// A line's sentences: it ends one at `.`, `!` or `?` before a space, unless the next
/// word starts in lowercase (`i.e. the`, `e.g. a`), the stop is inside an inline code
/// span (`ALTER SUBSCRIPTION ... SKIP`) or numbers a list item (`uses two roles: 1.
/// Create…`), or at its end.
pub fn line_sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    let b = line.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'`' {
            in_code = !in_code;
        }
        let end_here = !in_code
            && matches!(b[i], b'.' | b'!' | b'?')
            && !numbers_item(&line[..i])
            && (i + 1 == b.len()
                || (b[i + 1] == b' '
                    && !line[i + 1..]
                        .trim_start()
                        .starts_with(|c: char| c.is_lowercase())));
        if end_here {
            out.push(line[start..=i].trim());
            start = i + 1;
        }
    }
    if !line[start..].trim().is_empty() {
        out.push(line[start..].trim());
    }
    out
}

/// Whether `before` (a line up to a `.`) ends in a list item's number: one to three
/// digits at the line's start or after a `:` and a space (not a ratio such as `2:3`).
fn numbers_item(before: &str) -> bool {
    let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &before[..before.len() - digits];
    (1..=3).contains(&digits)
        && (rest.trim().is_empty()
            || (rest.ends_with(char::is_whitespace) && rest.trim_end().ends_with(':')))
}

/// How many lines from `n` on are an entry's terms: a run of option lines followed by
/// a description, or one short line followed by a `: definition` line.
fn term_lines(lines: &[(String, String)], n: usize) -> usize {
    let is_def = |i: usize| {
        lines
            .get(i)
            .is_some_and(|l| l.0.trim_start().starts_with(": "))
    };
    let mut k = 0;
    while n + k < lines.len() && is_option_line(&lines[n + k].0) {
        k += 1;
    }
    if k == 0 {
        let l = lines[n].0.trim();
        let term = !l.is_empty()
            && !is_def(n)
            && l.chars().count() <= MAX_TERM_CHARS
            && !l.contains("```");
        return usize::from(term && is_def(n + 1));
    }
    let described = lines
        .get(n + k)
        .is_some_and(|l| !l.0.trim().is_empty() && !is_list_item(&l.0) && !l.0.contains("```"));
    if described {
        k
    } else {
        0
    }
}

/// Whether line `m` continues the description before it: not blank, not a list item,
/// not an option line, not the start of another entry.
fn is_description_line(lines: &[(String, String)], m: usize) -> bool {
    let l = &lines[m].0;
    !l.trim().is_empty()
        && !is_list_item(l)
        && !is_option_line(l)
        && !l.contains("```")
        && term_lines(lines, m) == 0
}

fn is_list_item(line: &str) -> bool {
    ["- ", "* ", "+ "]
        .iter()
        .any(|m| line.trim_start().starts_with(m))
}

/// Longest definition-list term.
const MAX_TERM_CHARS: usize = 100;

/// Longest sentence (or option entry) kept.
const MAX_SENTENCE_CHARS: usize = 400;

/// A line naming a command-line option, as manual pages list them: `-k`, `--keep-index`,
/// `--format=<format>` (a markdown list item, "- text", is not one).
fn is_option_line(line: &str) -> bool {
    let l = line.trim();
    let mut c = l.chars();
    c.next() == Some('-')
        && c.next()
            .is_some_and(|c| c == '-' || c.is_ascii_alphanumeric())
        && l.chars().count() <= 60
        && !l.ends_with(['.', '!', '?', ':'])
}

/// Longest code block (with its introducing line) kept as one unit.
const MAX_CODE_UNIT_CHARS: usize = 800;

fn push_unit(out: &mut Vec<Unit>, unit: Unit) {
    let s = unit.text.trim();
    let max = if s.contains("```") {
        MAX_CODE_UNIT_CHARS
    } else {
        MAX_SENTENCE_CHARS
    };
    if s.chars().count() >= 20 && s.chars().count() <= max && !only_links(s) {
        out.push(unit);
    }
}

/// Whether a unit is nothing but Markdown links: a list of them ("- [USB](https://
/// en.wikipedia.org/wiki/Universal_Serial_Bus)") is long in characters but states
/// nothing, and was quoted as the whole answer to "How do I mount a USB disk?" (the
/// Debian Reference).
fn only_links(s: &str) -> bool {
    static LINK: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let link = LINK.get_or_init(|| regex::Regex::new(r"\[[^\]]*\]\([^)\s]*\)").unwrap());
    link.is_match(s) && !link.replace_all(s, " ").chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definitions_code_block_is_quoted_without_the_definition_marker() {
        let s = split_sentences(
            "`cache_page`()\n\n: A more granular way is caching the output of individual views:\n\n```\n@cache_page(60 * 15)\ndef my_view(request):\n```",
        );
        assert!(
            s.iter()
                .any(|u| u.starts_with("A more granular way") && u.contains("@cache_page")),
            "{s:?}"
        );
        assert!(!s.iter().any(|u| u.starts_with(": ")), "{s:?}");
    }

    #[test]
    fn a_quoted_code_block_stays_with_its_introduction() {
        let text = "To convert to WAL mode, use the following pragma:\n\n> ```\n> PRAGMA journal_mode=WAL;\n> ```\n\n> A quoted remark about the journal.";
        let units = units(text);
        let texts: Vec<&str> = units.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "To convert to WAL mode, use the following pragma:\n```\nPRAGMA journal_mode=WAL;\n```",
                "A quoted remark about the journal."
            ]
        );
        // The source stays as written, so the chunk holding the unit is found.
        assert!(
            units[0].source.contains("> PRAGMA journal_mode=WAL;"),
            "{units:?}"
        );
    }

    #[test]
    fn a_line_that_is_only_a_short_link_is_not_a_unit() {
        let s = split_sentences(
            "- [USB](https://en.wikipedia.org/wiki/Universal_Serial_Bus)\n\
             - [IEEE 1394 / FireWire](https://en.wikipedia.org/wiki/IEEE_1394)\n\
             - [Optical disc drive](https://en.wikipedia.org/wiki/Optical_disc_drive), [USB](https://x.org/usb)\n\
             See [Section 10.1.7, Removable storage device](ch10.en.html#_removable) for mounting.",
        );
        assert_eq!(
            s,
            ["See [Section 10.1.7, Removable storage device](ch10.en.html#_removable) for mounting."]
        );
    }

    #[test]
    fn sentences_split_on_terminators_and_lines() {
        let s = split_sentences(
            "Run the rollback command now. Then check the status page!\nkubectl rollout undo deployment/x\nok.",
        );
        assert_eq!(
            s,
            vec![
                "Run the rollback command now.",
                "Then check the status page!",
                "kubectl rollout undo deployment/x"
            ]
        );
        let s = split_sentences(
            "in our chart), so it is one command. To undo it, run:\nkubectl rollout undo x",
        );
        assert_eq!(s, vec!["To undo it, run: kubectl rollout undo x"]);
        let s = split_sentences(
            "To undo it, run:\n\n```sh\nkubectl rollout undo x. Then\nkubectl get pods\n```\n\n\
             | Flag | What it does |\n| --- | --- |\n| --dry-run | prints, changes nothing |",
        );
        assert_eq!(
            s,
            vec![
                "To undo it, run:\n```sh\nkubectl rollout undo x. Then\nkubectl get pods\n```",
                // The header row names columns: no unit of its own.
                "| --dry-run | prints, changes nothing |"
            ]
        );
        let s = split_sentences(
            "-k\n--keep-index\nAll changes already added to the index are left intact.\n\
             -q\nQuiet. Suppress feedback messages.\n- a markdown list item that is long enough",
        );
        assert_eq!(
            s,
            vec![
                "-k, --keep-index: All changes already added to the index are left intact.",
                "-q: Quiet. Suppress feedback messages.",
                "- a markdown list item that is long enough"
            ]
        );
    }

    #[test]
    fn a_stop_inside_inline_code_does_not_end_the_sentence() {
        assert_eq!(
            split_sentences(
                "The transaction can be skipped by using `ALTER SUBSCRIPTION ... SKIP` with \
                 its LSN. Then replication resumes."
            ),
            vec![
                "The transaction can be skipped by using `ALTER SUBSCRIPTION ... SKIP` with its LSN.",
                "Then replication resumes."
            ]
        );
    }

    #[test]
    fn a_list_items_number_does_not_end_the_sentence() {
        assert_eq!(
            split_sentences(
                "Rotation without downtime uses two roles:\n\
                 1. Create the new password on the standby role.\n\
                 2. Write a `db_url` that uses the standby role. Then restart the pods.\n\
                 The pool size it settles on is 42. Then it stops growing."
            ),
            vec![
                "Rotation without downtime uses two roles: 1. Create the new password on the standby role.",
                "2. Write a `db_url` that uses the standby role.",
                "Then restart the pods.",
                "The pool size it settles on is 42.",
                "Then it stops growing."
            ]
        );
    }

    #[test]
    fn a_sentence_that_stops_before_a_code_block_introduces_it() {
        let s = split_sentences(
            "You should now test it. If that version works correctly, type\n\n```\n\
             $ git bisect good\n```\n\nThat is how a good commit is marked.\n\n\
             - a list item that is long enough\n\n```\nmake install DESTDIR=/tmp/x\n```",
        );
        assert_eq!(
            s,
            vec![
                "You should now test it.",
                "If that version works correctly, type\n```\n$ git bisect good\n```",
                "That is how a good commit is marked.",
                "- a list item that is long enough",
                "```\nmake install DESTDIR=/tmp/x\n```"
            ]
        );
        // A finished sentence does not introduce the block after it, unless it says it
        // does.
        let s =
            split_sentences("That is all there is to say.\n\n```\nmake install DESTDIR=/x\n```");
        assert_eq!(
            s,
            vec![
                "That is all there is to say.",
                "```\nmake install DESTDIR=/x\n```"
            ]
        );
        let s = split_sentences(
            "The action has a legacy form and a newer one. The following command sends all messages via TCP.\n\n\
             ```\naction(type=\"omfwd\" Protocol=\"tcp\")\n```",
        );
        assert_eq!(
            s,
            vec![
                "The action has a legacy form and a newer one.",
                "The following command sends all messages via TCP.\n```\naction(type=\"omfwd\" Protocol=\"tcp\")\n```",
            ]
        );
    }

    #[test]
    fn definitions_stay_with_their_terms() {
        let long = "Evaluates an arbitrary shell command in each checked out submodule. \
                    The command has access to the variables $name and $sm_path, which name \
                    the submodule and its path (i.e. the path recorded in the superproject). "
            .repeat(3);
        let text = format!(
            "--depth <depth>\n: Create a shallow clone.\nImplies `--single-branch`.\n\
             foreach [--recursive] <command>\n: {long}\nsync [--recursive]\n\
             : Synchronizes the remote URL configuration."
        );
        let u = units(&text);
        let texts: Vec<&str> = u.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(
            texts[..3],
            [
                "--depth <depth>: Create a shallow clone. Implies `--single-branch`.",
                "foreach [--recursive] <command>: Evaluates an arbitrary shell command in \
                 each checked out submodule.",
                "The command has access to the variables $name and $sm_path, which name the \
                 submodule and its path (i.e. the path recorded in the superproject).",
            ]
        );
        assert_eq!(
            texts.last(),
            Some(&"sync [--recursive]: Synchronizes the remote URL configuration.")
        );
        // The source is the section's text as written: a chunk holding it is found.
        assert_eq!(
            u[0].source,
            "--depth <depth>\n: Create a shallow clone.\nImplies `--single-branch`."
        );
        assert!(text.contains(&u[1].source[..60]));
    }
}
