//! Markdown links in a written answer held to the text the model read: a link whose
//! target the text does not hold is the model's ("#cmdoption(O)" for the passage's
//! "#cmdoption-O", "https://code.activestate.com/ recipes/52560/" with a space), and a
//! reader who follows it lands nowhere. Its text stays; the support check judges that.

use std::sync::LazyLock;

use regex::Regex;

/// `[text](target)`, the target allowed one level of parentheses ("…#cmdoption(O)").
static LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[([^\]\n]*)\]\(((?:[^()\n]|\([^()\n]*\))*)\)").expect("a valid pattern")
});

/// `answer` with each link whose target `read` does not hold replaced by its text, and
/// the targets so removed.
pub fn without_foreign_targets(answer: &str, read: &str) -> (String, Vec<String>) {
    let mut removed = Vec::new();
    let text = LINK.replace_all(answer, |c: &regex::Captures| {
        let target = &c[2];
        if read.contains(&format!("]({target})")) {
            c[0].to_string()
        } else {
            removed.push(target.to_string());
            c[1].to_string()
        }
    });
    (text.into_owned(), removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_target_the_passages_do_not_hold_is_unlinked() {
        let read = "Equivalent to specifying the [`-O`](#cmdoption-O) option. See \
            [https://code.activestate.com/recipes/52560/](https://code.activestate.com/recipes/52560/).";
        let (text, removed) = without_foreign_targets(
            "It is the same as [`-O`](#cmdoption(O)) given twice; see \
             [https://code.activestate.com/recipes/52560/](https://code.activestate.com/ recipes/52560/).",
            read,
        );
        assert_eq!(
            text,
            "It is the same as `-O` given twice; see https://code.activestate.com/recipes/52560/."
        );
        assert_eq!(
            removed,
            [
                "#cmdoption(O)",
                "https://code.activestate.com/ recipes/52560/"
            ]
        );
        // A link copied as the passages have it stays.
        let copied = "Give [`-O`](#cmdoption-O) once.";
        assert_eq!(without_foreign_targets(copied, read).0, copied);
    }
}
