//! Commands a model writes in prose, outside backticks: "Run apt hold <package>." The
//! patterns of `checks::specific_tokens` find code spans and the invocations of a few
//! well-known tools; a command of any other tool is found by what hands it to the person
//! ("run", "type", "execute", "enter", "the following command:", "for example:") and by
//! a word that only code has (a flag, a `<placeholder>`, a name or value with
//! `_ - . / = :`), since prose follows such verbs too ("run tests before you push"). Such
//! a command is supported when the text read shows its tool with the same next word
//! (written together, or on one line: a table row, an option's entry) and its later
//! code-like words on that line, so that a paraphrase of a real invocation passes and a
//! real tool given a subcommand it does not have ("apt hold") does not.

use regex::Regex;

use super::support::GENERAL;
use crate::kb::store::contains_word;

/// Words that only say a command follows ("run the following command").
const NOT_A_TOOL: &[&str] = &[
    "following",
    "command",
    "commands",
    "script",
    "program",
    "query",
    "statement",
    "step",
    "steps",
    "again",
];

/// The commands of `answer` that verbs of running hand to the person, each its tool and
/// the words after it up to the first word of prose (two words at least, one of them
/// code-like).
pub fn prose_commands(answer: &str) -> Vec<String> {
    static RUN: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let run = RUN.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:run|type|execute|enter|commands?:|example:)[ \t]+([a-z][^\s`]*(?:[ \t]+[^\s`]+){1,8})",
        )
            .expect("static regex")
    });
    let mut out: Vec<String> = Vec::new();
    for c in run.captures_iter(answer) {
        let mut words: Vec<String> = Vec::new();
        for raw in c[1].split_whitespace() {
            let ends_sentence = raw.ends_with(['.', ',', ';', ':', '?', '!', ')']);
            let w = raw
                .trim_end_matches(['.', ',', ';', ':', '?', '!', ')'])
                .to_lowercase();
            if w.is_empty() || !is_command_word(&w) {
                break;
            }
            words.push(w);
            if ends_sentence {
                break;
            }
        }
        let Some(tool) = words.first() else {
            continue;
        };
        if words.len() < 2
            || crate::kb::stopwords::is_stopword(tool)
            || GENERAL.contains(&tool.as_str())
            || NOT_A_TOOL.contains(&tool.as_str())
            || words[1].starts_with('<')
            || !words.iter().any(|w| is_code_like(w))
        {
            continue;
        }
        let command = words.join(" ");
        if !out.contains(&command) {
            out.push(command);
        }
    }
    out
}

/// A file to read that a verb of running hands over as though it were a program: "Run
/// `/var/lib/dpkg/info/package_name.list` to see the files" (a list dpkg keeps), "Run
/// ch03.en.html § 3.4" (a page of the manual). Every word of such a sentence can be in
/// the passages, as the file's name is. A Markdown link's target is not handed over.
pub fn file_run_as_command(sentence: &str) -> Option<String> {
    static RUN_FILE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let run_file = RUN_FILE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:run|execute)[ \t]+`?([^\s`\[\]()]+\.(?:html?|md|txt|list|conf|cfg|log|pdf|json|ya?ml|toml|csv|ini))(?:[`\s.,;:)]|$)",
        )
        .expect("static regex")
    });
    run_file.captures(sentence).map(|c| c[1].to_string())
}

/// A word that can be part of an invocation: a flag, a placeholder, or a lowercase name
/// or value; a stopword ("to", "with", "and") is where the prose resumes.
fn is_command_word(w: &str) -> bool {
    if w.starts_with('-') || (w.starts_with('<') && w.ends_with('>')) {
        return true;
    }
    !crate::kb::stopwords::is_stopword(w)
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:@+".contains(c))
}

/// A word only code has: a flag, a placeholder, or a name or value with `_ - . / = :`.
fn is_code_like(w: &str) -> bool {
    w.starts_with('-') || w.starts_with('<') || w.contains(['_', '-', '.', '/', '=', ':'])
}

/// Whether the text read (`hay_lines`: its lines, whitespace-normalised, lowercase)
/// shows `command`'s tool with its next word (together, or as words of one line), on a
/// line that also holds each of its later code-like words but placeholders: a line put
/// together from two ("ErrorDocument 500 /errors/not_found.html" from a passage's
/// `ErrorDocument 500 …` and `ErrorDocument 404 /errors/not_found.html`) is not found.
pub fn command_found(command: &str, hay_lines: &[String]) -> bool {
    let words: Vec<&str> = command.split(' ').collect();
    let (tool, next) = (words[0], words[1]);
    let together = format!("{tool} {next}");
    let later: Vec<&str> = words[2..]
        .iter()
        .copied()
        .filter(|w| is_code_like(w) && !w.starts_with('<'))
        .collect();
    hay_lines.iter().any(|line| {
        (line.contains(&together) || (contains_word(line, tool) && line.contains(next)))
            && later.iter().all(|w| line.contains(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(|l| l.to_lowercase()).collect()
    }

    #[test]
    fn commands_handed_over_in_prose_are_found_and_prose_is_not() {
        assert_eq!(
            prose_commands("Run apt hold <package>."),
            ["apt hold <package>"]
        );
        assert_eq!(
            prose_commands("Run dpkg -S file_name_pattern to find it."),
            ["dpkg -s file_name_pattern"]
        );
        assert_eq!(
            prose_commands("Then execute apt-get dist-upgrade on the host."),
            ["apt-get dist-upgrade"]
        );
        // Introduced rather than handed over by a verb (the Debian Reference's backports
        // question: no such tool).
        assert_eq!(
            prose_commands("Use the following command: bk update-backport <kernel-version>."),
            ["bk update-backport <kernel-version>"]
        );
        for prose in [
            "Run the following command.",
            "Run it again later.",
            "Type q to quit.",
            "Run tests before you push.",
            "Run `apt-mark hold foo` first.",
            "Enter your passphrase when asked.",
            "Then execute VACUUM FULL on the table.",
            "The command: the line you typed.",
        ] {
            assert!(
                prose_commands(prose).is_empty(),
                "{prose}: {:?}",
                prose_commands(prose)
            );
        }
    }

    #[test]
    fn a_file_to_read_handed_over_to_run_is_found() {
        assert_eq!(
            file_run_as_command("Run `/var/lib/dpkg/info/package_name.list` to see them."),
            Some("/var/lib/dpkg/info/package_name.list".to_string())
        );
        assert_eq!(
            file_run_as_command("Run ch03.en.html § 3.4 and read on."),
            Some("ch03.en.html".to_string())
        );
        for fine in [
            "Run `setup.sh` first.",
            "Run `git log` and keep notes.txt open.",
            "Run the checks in ci.yml.",
            "Edit `/etc/apt/sources.list` and run `apt update`.",
            "Without having to run [EXPLAIN](sql-explain.html) by hand.",
        ] {
            assert_eq!(file_run_as_command(fine), None, "{fine}");
        }
    }

    #[test]
    fn a_tool_given_a_subcommand_the_text_does_not_show_is_not_found() {
        let read = lines(
            "| `=` | place the package on hold |\n\
             | `apt-mark hold package_name` | hold a package |\n\
             Run `reindexdb --concurrently` to rebuild without locks.",
        );
        assert!(!command_found("apt hold <package>", &read));
        assert!(command_found("apt-mark hold <package>", &read));
        // A paraphrase of a real invocation: the tool and its next word on one line.
        assert!(command_found("reindexdb concurrently", &read));
        assert!(!command_found("reindexdb everything", &read));
        // Each later code-like word on the tool's line (Apache's custom error pages).
        let read = lines(
            "ErrorDocument 500 http://error.example.com/server_error.html\n\
             ErrorDocument 404 /errors/not_found.html",
        );
        let said = prose_commands("For example: ErrorDocument 500 /errors/not_found.html");
        assert_eq!(said, ["errordocument 500 /errors/not_found.html"]);
        assert!(!command_found(&said[0], &read));
        assert!(command_found(
            "errordocument 404 /errors/not_found.html",
            &read
        ));
    }
}
