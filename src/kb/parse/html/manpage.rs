//! A manual page formatted for a terminal and wrapped in one `<pre>` (Postfix's HTML
//! manuals, man2html): read as code, its whole text is one code block with no sentence, no
//! section and no option entry, so retrieval finds it but no answer can quote it. Read
//! here instead as what the terminal layout shows: a line at the left margin is a
//! section's heading, a paragraph at one indentation is prose (its justification and
//! hyphenation undone), a short line above deeper-indented text is an option's term and
//! its description, and lines of mixed indentation are code.

use std::sync::LazyLock;

use regex::Regex;

/// One block of a manual page.
#[derive(Debug, PartialEq)]
pub(super) enum ManBlock {
    Heading(String),
    Paragraph(String),
    /// A term (an option, a parameter) and the first paragraph of its description.
    Entry(String, String),
    Code(String),
}

/// The running header and footer: `POSTSUPER(1)   …   POSTSUPER(1)`.
static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[A-Za-z0-9_.:+-]+\([0-9a-zA-Z]+\)(\s.*)?$").expect("a valid pattern")
});

/// A term longer than this is a paragraph's first line with a hanging indent ("1)    The
/// queue manager deletes …").
const MAX_TERM_CHARS: usize = 40;

/// The blocks of `text` when it is a manual page: its first line is the running header
/// and a heading at the left margin follows. None for any other preformatted text.
pub(super) fn man_page(text: &str) -> Option<Vec<ManBlock>> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty())?;
    let header = lines[first].trim();
    let name = header.split('(').next().unwrap_or_default();
    if !HEADER.is_match(header) || !header.trim_end().ends_with(')') || name.is_empty() {
        return None;
    }
    let headed = lines[first + 1..]
        .iter()
        .any(|l| !l.is_empty() && !l.starts_with(char::is_whitespace));
    if !headed {
        return None;
    }
    let mut blocks = Vec::new();
    let mut group: Vec<&str> = Vec::new();
    for line in &lines[first + 1..] {
        let line = line.trim_end();
        if line.is_empty() {
            flush(&mut group, &mut blocks);
        } else if !line.starts_with(char::is_whitespace) {
            flush(&mut group, &mut blocks);
            blocks.push(ManBlock::Heading(collapse(line)));
        } else if HEADER.is_match(line) && line.trim_start().starts_with(name) {
            // The running footer.
            flush(&mut group, &mut blocks);
        } else {
            group.push(line);
        }
    }
    flush(&mut group, &mut blocks);
    Some(blocks)
}

fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 8 } else { 1 })
        .sum()
}

/// A paragraph's lines: prose at one indentation, an entry (a short term above a deeper
/// description at one indentation), prose with a hanging indent, or code.
fn flush(group: &mut Vec<&str>, blocks: &mut Vec<ManBlock>) {
    if group.is_empty() {
        return;
    }
    let lines = std::mem::take(group);
    let first = indent(lines[0]);
    let rest: Vec<usize> = lines[1..].iter().map(|l| indent(l)).collect();
    let one_indent = rest.windows(2).all(|w| w[0] == w[1]);
    let block = if rest.iter().all(|&i| i == first) {
        ManBlock::Paragraph(prose(&lines))
    } else if one_indent && rest[0] > first {
        let term = lines[0].trim();
        if term.chars().count() <= MAX_TERM_CHARS {
            ManBlock::Entry(collapse(term), prose(&lines[1..]))
        } else {
            ManBlock::Paragraph(prose(&lines))
        }
    } else {
        let base = lines.iter().map(|l| indent(l)).min().unwrap_or(0);
        let code: Vec<String> = lines
            .iter()
            .map(|l| l.chars().skip(base).collect())
            .collect();
        ManBlock::Code(code.join("\n"))
    };
    blocks.push(block);
}

/// Lines joined as one paragraph: the terminal's justification collapsed and a word
/// hyphenated at a line's end joined again ("recipi-" / "ent").
fn prose(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let line = collapse(line);
        let hyphenated = out
            .strip_suffix('-')
            .is_some_and(|s| s.ends_with(|c: char| c.is_alphabetic()))
            && line.starts_with(|c: char| c.is_lowercase());
        if hyphenated {
            out.pop();
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&line);
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "
POSTSUPER(1)                                                      POSTSUPER(1)

NAME
       postsuper - Postfix superintendent

DESCRIPTION
       The  postsuper(1)  command  does maintenance jobs on the Postfix queue.
       Use  of  the  command  is  restricted  to  the  superuser.

       -d queue_id
              Delete one message with the named queue ID from the  named  mail
              queue(s). For example, to delete all mail with exactly one recipi-
              ent user@example.com:

              mailq | tail -n +2 | awk  'BEGIN { RS = \"\" }'
                  { print $1 }
               ' | postsuper -d -

              1)     The  Postfix queue manager deletes the message that post-
                     super(1) is asked to delete.

                                                                  POSTSUPER(1)
";

    #[test]
    fn a_terminal_manual_page_reads_as_headings_prose_entries_and_code() {
        let blocks = man_page(PAGE).expect("a manual page");
        assert_eq!(
            blocks,
            vec![
                ManBlock::Heading("NAME".into()),
                ManBlock::Paragraph("postsuper - Postfix superintendent".into()),
                ManBlock::Heading("DESCRIPTION".into()),
                ManBlock::Paragraph(
                    "The postsuper(1) command does maintenance jobs on the Postfix queue. \
                     Use of the command is restricted to the superuser."
                        .into()
                ),
                ManBlock::Entry(
                    "-d queue_id".into(),
                    "Delete one message with the named queue ID from the named mail \
                     queue(s). For example, to delete all mail with exactly one recipient \
                     user@example.com:"
                        .into()
                ),
                ManBlock::Code(
                    "mailq | tail -n +2 | awk  'BEGIN { RS = \"\" }'\n    { print $1 }\n \
                     ' | postsuper -d -"
                        .into()
                ),
                ManBlock::Paragraph(
                    "1) The Postfix queue manager deletes the message that postsuper(1) is \
                     asked to delete."
                        .into()
                ),
            ]
        );
    }

    #[test]
    fn other_preformatted_text_is_no_manual_page() {
        assert_eq!(
            man_page("$ git stash push -m wip\n$ git stash list\n"),
            None
        );
        assert_eq!(
            man_page("main.cf:\n    relayhost = [mail.example.com]\n"),
            None
        );
        // A header with no heading at the left margin after it.
        assert_eq!(man_page("LS(1)   User Commands   LS(1)\n   ls -l\n"), None);
    }
}
