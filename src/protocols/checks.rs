//! Post-validation: the navigator seed's five rules, each a function returning what it
//! found, plus the grounding share reported for both formats. A failed rule never passes
//! silently: the navigator lowers its confidence and says why in `confidenceReason`.

use regex::Regex;
use serde::Serialize;

use super::evidence::{content_words, overlap_share};
use super::prose_commands::{command_found, prose_commands};

/// Share of the answer's content words that must occur in the cited sections for the
/// sources to count as supporting the answer (rule 4).
pub const ALIGNMENT_MIN_SHARE: f64 = 0.5;

#[derive(Debug, Clone, Serialize)]
pub struct RuleResult {
    pub rule: &'static str,
    pub passed: bool,
    pub detail: String,
}

impl RuleResult {
    fn new(rule: &'static str, passed: bool, detail: impl Into<String>) -> Self {
        RuleResult {
            rule,
            passed,
            detail: detail.into(),
        }
    }
}

/// Rule 1: every cited (file, section) exists in the knowledge base.
pub fn source_existence(
    cited: &[(String, String)],
    exists: &dyn Fn(&str, &str) -> bool,
) -> RuleResult {
    let missing: Vec<String> = cited
        .iter()
        .filter(|(f, s)| !exists(f, s))
        .map(|(f, s)| format!("{f} § {s}"))
        .collect();
    RuleResult::new(
        "source_existence",
        missing.is_empty(),
        if missing.is_empty() {
            format!("{} cited sections exist", cited.len())
        } else {
            format!("not in the knowledge base: {}", missing.join("; "))
        },
    )
}

/// Things a model tends to invent: file paths, commands in backticks, URLs, ARNs, and
/// numbers with units.
pub fn specific_tokens(text: &str) -> Vec<String> {
    static PATTERNS: std::sync::OnceLock<Vec<Regex>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            r"https?://[^\s)'`]+",
            r"arn:[a-z0-9-]+:[^\s'`]+",
            r"\b[\w./-]*[\w-]+\.(?:md|ya?ml|json|toml|conf|cfg|sh|py|rs|txt|html|pdf|log|pem|crt|key)\b",
            r"\b(?:kubectl|lhctl|helm|docker|systemctl|psql|curl|openssl|git)(?:[ \t]+[a-z0-9./:=<>_-][\w./:=<>-]*){1,10}",
            // Dotted setting names (`merge.conflictStyle`, `core.autocrlf`): segments of
            // two or more characters, so "e.g." and "i.e." are prose.
            r"\b[a-zA-Z][\w-]+(?:\.[a-zA-Z][\w-]+)+\b",
            // Names with an underscore (`shared_buffers`, `SQLITE_MAX_LENGTH`), and a
            // function's call (`sqlite3_backup_init()`).
            r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?",
            // Command-line flags: --long-option (with a value), or -x.
            r"(?:^|[\s(`'\x22])(--?[a-zA-Z][\w-]*(?:=[^\s`'\x22)]+)?)",
            // Numbers of two or more digits (amounts, ports, versions, sizes), and
            // decimals ("0.2": a share the question gave as "20%", set as a value no
            // passage shows, postgresql's pg-089).
            r"\$?\b\d(?:[\d,]*\d)?\.\d+\b|\$?\b\d[\d,]*\d\b",
            r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|minutes|min|h|hours|days|GB|GiB|MB|MiB|KB|TB|%|req/s|rps|cores?|replicas?|pods?)\b",
        ]
        .iter()
        .map(|p| Regex::new(p).expect("static regex"))
        .collect()
    });
    // Inline code spans as Markdown reads them (a double-backtick span, a backtick in
    // prose, a code block's fences never pair up wrongly); a code block's fence lines are
    // structure and are dropped, its code lines stay for the patterns below.
    let mut out: Vec<String> = Vec::new();
    for event in pulldown_cmark::Parser::new(text) {
        if let pulldown_cmark::Event::Code(code) = event {
            let t = code.trim().to_string();
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    let text: String = text
        .lines()
        .filter(|l| crate::kb::parse::fence_of(l).is_none())
        .collect::<Vec<_>>()
        .join("\n");
    for p in patterns {
        for c in p.captures_iter(&text) {
            // A pattern with a group names the token inside its match.
            let m = c.get(1).or_else(|| c.get(0)).expect("a match has group 0");
            // Sentence punctuation after a token is prose, not part of it.
            let t = m.as_str().trim_matches('`').trim();
            let t = t.trim_end_matches([',', ';', ':', '.']).to_string();
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Rule 2: specific tokens quoted in the answer must occur in the cited sources.
pub fn hallucination_patterns(answer: &str, sources_text: &str) -> RuleResult {
    let invented = invented_tokens(answer, sources_text);
    RuleResult::new(
        "hallucination_patterns",
        invented.is_empty(),
        if invented.is_empty() {
            "every path, command, flag, URL, ARN and quantity in the answer occurs in the sources"
                .into()
        } else {
            format!("not found in the cited sources: {}", invented.join(", "))
        },
    )
}

/// The answer's specific tokens (`specific_tokens`) that the sources do not contain.
/// Commands handed over in prose (`prose_commands`) count too, unless their tool is one
/// the patterns already check.
pub fn invented_tokens(answer: &str, sources_text: &str) -> Vec<String> {
    let hay = normalise_space(sources_text);
    let said = normalise_space(answer);
    let mut invented: Vec<String> = specific_tokens(answer)
        .into_iter()
        .filter(|t| !token_found(t, &hay, &said))
        .collect();
    let commands = prose_commands(answer);
    if !commands.is_empty() {
        let lines: Vec<String> = sources_text.lines().map(normalise_space).collect();
        for command in commands {
            let tool = command.split(' ').next().unwrap_or_default();
            if !COMMANDS.contains(&tool)
                && !command_found(&command, &lines)
                && !invented.contains(&command)
            {
                invented.push(command);
            }
        }
    }
    invented
}

fn normalise_space(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether a specific token of the answer (`said`, normalised as `hay`) occurs in `hay`
/// (whitespace-normalised, lowercase sources). A number or underscored name the answer
/// writes whole must be whole there too; a piece of a longer one (the "15.1" of
/// "v2.15.1") is looked for as a piece.
fn token_found(token: &str, hay: &str, said: &str) -> bool {
    let t = normalise_space(token);
    if let Some(bounded) = bounded_token(&t).filter(|b| b.found_in(said)) {
        return bounded.found_in(hay);
    }
    if hay.contains(&t) {
        return true;
    }
    // A command is found if its verb phrase and every argument that looks specific
    // (paths, flags, values, numbers) occur in the sources; prose that the pattern
    // swept up after the command does not count against it.
    let words: Vec<&str> = t.split(' ').collect();
    let is_command = words.len() >= 2 && COMMANDS.contains(&words[0]);
    is_command
        && hay.contains(&words[..2].join(" "))
        && words[2..]
            .iter()
            // Sentence punctuation after a word is prose, not part of an argument.
            .map(|w| w.trim_end_matches(['.', ',', ';', ':', ')']))
            .filter(|w| {
                w.contains(['/', '.', '=', ':', '-']) || w.chars().any(|c| c.is_ascii_digit())
            })
            .all(|w| hay.contains(w))
}

/// A number or a name with an underscore: found only whole, so that a number cut short
/// ("1,000,000,00" in "1,000,000,000") or a name with a part missing ("sqlite3_backup()"
/// in "sqlite3_backup_init()") is not taken for the one the sources give.
enum Bounded<'a> {
    /// Digits with `,` or `.` between them: no digit on either side, nor a separator
    /// (`, . : - /`) with a digit beyond it; letters after it are a unit ("30s"). A
    /// number with its unit ("30 s") is bounded before it only.
    Number { number: &'a str, unit: bool },
    /// An identifier: no letter, digit or `_` on either side; a call (`name()`) must be
    /// followed by `(`.
    Name { name: &'a str, call: bool },
}

fn bounded_token(t: &str) -> Option<Bounded<'_>> {
    let digits = |c: char| c.is_ascii_digit() || c == ',' || c == '.';
    let number = t.strip_prefix('$').unwrap_or(t);
    if number.starts_with(|c: char| c.is_ascii_digit()) {
        let unit = !number.chars().all(digits);
        return Some(Bounded::Number { number, unit });
    }
    let (name, call) = match t.strip_suffix("()") {
        Some(n) => (n, true),
        None => (t, false),
    };
    let identifier = name.contains('_')
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then_some(Bounded::Name { name, call })
}

impl Bounded<'_> {
    fn found_in(&self, hay: &str) -> bool {
        let (needle, word, unit) = match self {
            Bounded::Number { number, unit } => (*number, false, *unit),
            Bounded::Name { name, .. } => (*name, true, false),
        };
        // A version given short ("3.7" for "3.7.0") is the same release.
        let version = !word && needle.contains('.');
        let joined = |c: Option<char>, next: Option<char>, after: bool| match c {
            Some(c) if c.is_ascii_digit() => true,
            Some(c) if word => c.is_ascii_alphanumeric() || c == '_',
            Some('.') if after && version => false,
            // A separator joins only where a digit is beyond it ("1,000", "3.5", a time
            // "17:00", a date "2024-05-31").
            Some(',' | '.' | ':' | '-' | '/') => next.is_some_and(|n| n.is_ascii_digit()),
            _ => false,
        };
        hay.match_indices(needle).any(|(i, _)| {
            let mut before = hay[..i].chars().rev();
            let mut after = hay[i + needle.len()..].chars();
            let (b, b2) = (before.next(), before.next());
            let (a, a2) = (after.next(), after.next());
            let called = !matches!(self, Bounded::Name { call: true, .. }) || a == Some('(');
            !joined(b, b2, false) && (unit || !joined(a, a2, true)) && called
        })
    }
}

/// Command names whose invocations `specific_tokens` picks out of prose.
const COMMANDS: &[&str] = &[
    "kubectl",
    "lhctl",
    "helm",
    "docker",
    "systemctl",
    "psql",
    "curl",
    "openssl",
    "git",
];

const BOILERPLATE: &[&str] = &[
    "seems right",
    "i think so",
    "not sure",
    "n/a",
    "none",
    "no reason",
    "because",
    "high confidence",
    "medium confidence",
    "low confidence",
];

/// Rule 3: confidenceReason says something (more than 10 characters, not boilerplate).
pub fn confidence_reason_meaningful(reason: &str) -> RuleResult {
    let r = reason.trim().trim_end_matches('.').to_lowercase();
    let words = content_words(&r);
    let distinct: std::collections::HashSet<&String> = words.iter().collect();
    let ok = r.chars().count() > 10 && !BOILERPLATE.contains(&r.as_str()) && distinct.len() >= 3;
    RuleResult::new(
        "confidence_reason_meaningful",
        ok,
        if ok {
            "explains the evidence".to_string()
        } else {
            format!("too vague: {reason:?}")
        },
    )
}

/// Rule 4: the cited sections support the answer (content-word overlap).
pub fn source_answer_alignment(answer: &str, sources_text: &str) -> (RuleResult, f64) {
    let share = grounding_share(answer, sources_text);
    (
        RuleResult::new(
            "source_answer_alignment",
            share >= ALIGNMENT_MIN_SHARE,
            format!(
                "{:.0}% of the answer's content words occur in the cited sections (minimum {:.0}%)",
                share * 100.0,
                ALIGNMENT_MIN_SHARE * 100.0
            ),
        ),
        share,
    )
}

/// Rule 5: an out-of-domain answer cites no sources.
pub fn out_of_domain_logic(out_of_domain: bool, n_sources: usize) -> RuleResult {
    let ok = !out_of_domain || n_sources == 0;
    RuleResult::new(
        "out_of_domain_logic",
        ok,
        if ok {
            "consistent".to_string()
        } else {
            format!("outOfDomain is true but {n_sources} sources are cited")
        },
    )
}

/// Share of the answer's content words that occur in the evidence (1.0 for an answer
/// with no content words).
pub fn grounding_share(answer: &str, evidence_text: &str) -> f64 {
    let words = content_words(answer);
    if words.is_empty() {
        return 1.0;
    }
    overlap_share(&words, evidence_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "To roll back, run `kubectl rollout undo deployment/lighthouse-api`. \
        The check runs every 30 s. See operations/rollbacks.md.";

    #[test]
    fn planted_fake_paths_commands_urls_and_arns_are_flagged() {
        let ok = hallucination_patterns(
            "Run `kubectl rollout undo deployment/lighthouse-api`; checks run every 30 s.",
            SOURCE,
        );
        assert!(ok.passed, "{ok:?}");
        for planted in [
            "Run `kubelet-tls-re-renew --force` first.",
            "Edit config/lighthouse-secrets.yaml and restart.",
            "See https://internal.example.com/runbook for details.",
            "Use arn:aws:iam::123456789012:role/LighthouseAdmin to deploy.",
            "The check runs every 45 s.",
            "Then run kubectl delete pod lighthouse-api-0 to recover.",
            "Roll back with the --force-rollback flag.",
            "Add -f to skip the check.",
            "Set rollback.autoConfirm to true.",
        ] {
            let r = hallucination_patterns(planted, SOURCE);
            assert!(!r.passed, "not flagged: {planted}");
        }
    }

    #[test]
    fn a_command_handed_over_in_prose_must_show_its_tool_and_next_word() {
        let source = "| `=` | place the package on hold |\n\
                      | `apt-mark hold package_name` | set a package on hold |";
        let r = hallucination_patterns("Run apt hold <package>.", source);
        assert!(
            !r.passed && r.detail.contains("apt hold <package>"),
            "{r:?}"
        );
        assert!(hallucination_patterns("Run apt-mark hold <package>.", source).passed);
        // Prose after a verb of running is not a command.
        assert!(hallucination_patterns("Run the following command to hold it.", source).passed);
    }

    #[test]
    fn numbers_and_underscored_names_are_found_only_whole() {
        let source = "The default is 1,000,000,000 bytes (3.7.0 and later); call \
                      sqlite3_backup_init() with shared_buffers at 128MB, every 30s.";
        for supported in [
            "It is 1,000,000,000 bytes.",
            "Since version 3.7, the limit holds.",
            "Call sqlite3_backup_init() first.",
            "Raise shared_buffers.",
            "The check runs every 30s.",
            "Since 3.7.0, the limit holds.",
        ] {
            let r = hallucination_patterns(supported, source);
            assert!(r.passed, "{supported}: {r:?}");
        }
        for invented in [
            "It is 1,000,000,00 bytes.",
            "It is 000,000 bytes.",
            "Call sqlite3_backup() first.",
            "Raise shared_buffer.",
            "Raise max_shared_buffers.",
            "The check runs every 0s.",
            "Set it to 0.2.",
        ] {
            let r = hallucination_patterns(invented, source);
            assert!(!r.passed, "not flagged: {invented}");
        }
        // A piece of a longer number the answer itself writes is looked for as a piece.
        let tagged = "Deploy image.tag=v2.15.1 at 09:41:02.117Z.";
        assert!(hallucination_patterns(tagged, tagged).passed);
        assert!(!hallucination_patterns("Deploy image.tag=v2.15.2.", tagged).passed);
        // Pieces of a time or a date, too.
        let due = "It is due 2024-05-31T17:00:00Z.";
        assert!(hallucination_patterns(due, "due 2024-05-31T17:0000").passed);
    }

    #[test]
    fn dotted_setting_names_are_specific_and_abbreviations_are_not() {
        let tokens =
            specific_tokens("Set merge.conflictStyle to diff3, e.g. in a repo (i.e. locally).");
        assert_eq!(tokens, ["merge.conflictStyle"]);
        let source = "An alternative style can be set with the merge.conflictStyle variable.";
        assert!(hallucination_patterns("Set merge.conflictStyle.", source).passed);
        assert!(!hallucination_patterns("Set merge.conflictMarkers.", source).passed);
    }

    #[test]
    fn code_blocks_are_checked_by_their_lines_not_paired_with_prose_backticks() {
        let source = "Roll back:\n\n```sh\nkubectl rollout undo deployment/api\n```\n\n\
                      Pause the workers (see `operations/scaling.md`) first.";
        let answer = "Roll back:\n```sh\nkubectl rollout undo deployment/api\n```\n\n\
                      Pause the workers (see `operations/scaling.md`) first.";
        assert!(hallucination_patterns(answer, source).passed);
        let planted = answer.replace("undo deployment/api", "undo deployment/web --force");
        let r = hallucination_patterns(&planted, source);
        assert!(!r.passed && r.detail.contains("--force"), "{r:?}");
        // A double-backtick span (as manual pages quote) is one span.
        let quoted = "See the ``Algorithm`` section; run `git log` first.";
        assert!(hallucination_patterns(quoted, quoted).passed);
        let tokens = specific_tokens(quoted);
        assert_eq!(tokens[..2], ["Algorithm", "git log"]);
        assert!(tokens.iter().all(|t| !t.contains("section")), "{tokens:?}");
    }

    #[test]
    fn source_existence_names_the_missing_source() {
        let exists = |f: &str, s: &str| f == "a.md" && s == "Intro";
        let r = source_existence(
            &[
                ("a.md".into(), "Intro".into()),
                ("b.md".into(), "Nope".into()),
            ],
            &exists,
        );
        assert!(!r.passed && r.detail.contains("b.md § Nope"));
        assert!(source_existence(&[("a.md".into(), "Intro".into())], &exists).passed);
    }

    #[test]
    fn confidence_reason_must_explain() {
        assert!(!confidence_reason_meaningful("Seems right").passed);
        assert!(!confidence_reason_meaningful("high confidence").passed);
        assert!(!confidence_reason_meaningful("ok ok ok ok ok ok").passed);
        assert!(
            confidence_reason_meaningful(
                "High confidence: the Quick Rollback section gives the exact command."
            )
            .passed
        );
    }

    #[test]
    fn alignment_needs_overlap_with_the_cited_text() {
        let (r, share) =
            source_answer_alignment("Run the rollout undo command to roll back.", SOURCE);
        assert!(r.passed, "{share}");
        let (r, _) =
            source_answer_alignment("Bake bread at 220 degrees for forty minutes.", SOURCE);
        assert!(!r.passed);
    }

    #[test]
    fn out_of_domain_answers_cite_nothing() {
        assert!(out_of_domain_logic(true, 0).passed);
        assert!(!out_of_domain_logic(true, 1).passed);
        assert!(out_of_domain_logic(false, 2).passed);
    }
}
