//! An answer cut by its schema's length bound: the unfinished last sentence the support
//! check would keep (its words are all in the passage) is left out.

use super::{answer_sentences, join_sentences, Removed};
use crate::protocols::Report;

/// `answer` without an unfinished last sentence, which the support check would keep (its
/// words are all in the passage). The schema's bound (`bound` characters) ends the string
/// wherever it falls ("… enclosed in a brace pair (e.g."), and the model closes it early
/// when it copies a passage's double quote ("… by adding `"). A last sentence that leaves
/// a code span, bracket, bold or code block open, ends in ':' or trails off in an
/// ellipsis, is left out whatever the length; one without closing punctuation only in an
/// answer that reached the bound.
/// What is left out is listed in `report.removed`.
pub fn without_cut_sentence(answer: String, bound: usize, report: &mut Report) -> String {
    // Within two characters: the answer was trimmed of the whitespace it was cut after.
    let at_bound = answer.chars().count() + 2 >= bound;
    let mut sentences = answer_sentences(&answer);
    let why = match sentences.last() {
        Some(last) if left_open(last) => {
            "it stops inside a code span, bracket or block, introduces nothing or trails off"
        }
        Some(last) if at_bound && unpunctuated(last) => "the answer's length bound cut it off",
        _ => return answer,
    };
    let sentence = sentences.pop().expect("a last sentence");
    report.notes.push(format!(
        "unfinished last sentence {sentence:?} left out: {why}"
    ));
    report.removed.push(Removed {
        sentence,
        why: why.to_string(),
    });
    // A code block opened inline ("… in sorted order:```") and cut inside leaves the
    // sentence that opened it unfinished too.
    while let Some(sentence) = sentences.pop_if(|s| left_open(s)) {
        let why = "it opens what the sentence cut after it was to hold";
        report
            .notes
            .push(format!("unfinished sentence {sentence:?} left out: {why}"));
        report.removed.push(Removed {
            sentence,
            why: why.to_string(),
        });
    }
    let kept: Vec<&str> = sentences.iter().map(String::as_str).collect();
    without_dangling_marker(&join_sentences(&kept)).to_string()
}

/// `text` without a list item's number left at its end when the item itself was cut
/// ("… 2. Boot from a rescue medium. 3."): a number that introduces nothing.
fn without_dangling_marker(text: &str) -> &str {
    // The group starts after the punctuation that ended the item before it, which stays.
    static MARKER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|[.!?:)\]\x60])(\s+\d{1,2}[.)]\s*)$").expect("a valid pattern")
    });
    match MARKER.captures(text).and_then(|c| c.get(1)) {
        Some(marker) => &text[..marker.start()],
        None => text,
    }
}

/// Whether a sentence (or a code block with its introduction) leaves a code block, code
/// span, bracket or bold open, introduces what does not follow, or trails off.
fn left_open(sentence: &str) -> bool {
    let fences = sentence
        .lines()
        .filter(|l| crate::kb::parse::fence_of(l).is_some())
        .count();
    if fences > 0 {
        return fences % 2 == 1;
    }
    let count = |c: char| sentence.chars().filter(|&x| x == c).count();
    // A last sentence ending in ':' introduces what never came ("Here is how you can do
    // it for each of your examples:").
    // One ending in an ellipsis outside code trails off: the model copied a template's
    // fragment ("$access_map_reject_code optional text..." for rejecting a subject).
    let end = sentence.trim_end();
    end.ends_with(':')
        || end.ends_with("...")
        || end.ends_with('…')
        || count('`') % 2 == 1
        || count('(') > count(')')
        || count('[') > count(']')
        || sentence.matches("**").count() % 2 == 1
}

/// Whether a prose sentence ends without closing punctuation, or on "e.g." / "i.e.".
fn unpunctuated(sentence: &str) -> bool {
    if sentence.contains("```") {
        return false;
    }
    let end = sentence
        .trim_end()
        .trim_end_matches(['"', '\'', '”', '’', ')', ']', '*', '_', '`']);
    let lower = end.to_lowercase();
    !end.ends_with(['.', '!', '?']) || lower.ends_with("e.g.") || lower.ends_with("i.e.")
}
