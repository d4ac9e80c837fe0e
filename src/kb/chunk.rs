//! Token-aware chunking with the embedding model's own tokenizer: no chunk exceeds the
//! window, consecutive chunks overlap, and a chunk never crosses a section boundary (each
//! section is chunked on its own). Chunk ends snap back to a sentence or line end when
//! one is near, and starts never fall inside a word. A fenced code block is never cut
//! when it fits a window: a chunk ends before it, and an overlap that would start inside
//! it starts at its fence instead.

use anyhow::{anyhow, Result};
use tokenizers::Tokenizer;

#[derive(Debug, Clone, Copy)]
pub struct ChunkParams {
    /// Word pieces per chunk. The embedding input adds the heading path and [CLS]/[SEP],
    /// which must still fit the model's 256-piece window.
    pub max_tokens: usize,
    /// Word pieces repeated at the start of the next chunk.
    pub overlap: usize,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            max_tokens: 160,
            overlap: 32,
        }
    }
}

/// A byte span of a section's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// Splits `text` into overlapping spans of at most `max_tokens` word pieces.
pub fn chunk_spans(tok: &Tokenizer, text: &str, p: ChunkParams) -> Result<Vec<Span>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let enc = tok
        .encode(text, false)
        .map_err(|e| anyhow!("tokenize: {e}"))?;
    let offsets = enc.get_offsets();
    let pieces = enc.get_tokens();
    let n = offsets.len();
    if n <= p.max_tokens {
        return Ok(vec![trimmed(text, 0, text.len())]);
    }
    let max = p.max_tokens.max(8);
    let overlap = p.overlap.min(max / 2);
    let is_word_start = |i: usize| !pieces[i].starts_with("##");
    // Code blocks as token ranges [first, past-the-end).
    let fences: Vec<(usize, usize)> = crate::kb::parse::code_fences(text)
        .into_iter()
        .map(|(a, b)| {
            let first = offsets.partition_point(|o| o.0 < a);
            (first, offsets.partition_point(|o| o.0 < b))
        })
        .collect();
    let fence_around = |i: usize| fences.iter().copied().find(|&(a, b)| a < i && i < b);
    let mut spans = Vec::new();
    let mut s = 0;
    loop {
        let mut e = (s + max).min(n);
        if e < n {
            // Prefer to end after a sentence or line end in the last third of the window;
            // else at a word boundary.
            let floor = s + max * 2 / 3;
            let sentence_end = (floor..e).rev().find(|&j| {
                let end = offsets[j - 1].1;
                let prev = text[..end].chars().last();
                matches!(prev, Some('.' | '!' | '?' | ':' | ';'))
                    || text[end..offsets[j].0].contains('\n')
            });
            e = match sentence_end {
                Some(j) => j,
                None => (s + 1..=e).rev().find(|&j| is_word_start(j)).unwrap_or(e),
            };
            // Ending inside a code block: end after it when the window holds it, else
            // before it, unless that leaves too little (a block longer than a window is
            // cut at its lines).
            if let Some((a, b)) = fence_around(e) {
                if b <= s + max {
                    e = b;
                } else if a > s + max / 3 {
                    e = a;
                }
            }
        }
        spans.push(trimmed(text, offsets[s].0, offsets[e - 1].1));
        if e >= n {
            break;
        }
        let mut next = e.saturating_sub(overlap).max(s + 1);
        while next < e && !is_word_start(next) {
            next += 1;
        }
        if let Some((a, _)) = fence_around(next) {
            if a > s {
                next = a;
            }
        }
        s = next;
    }
    Ok(spans)
}

/// Longest table header (its first line and the separator under it) that a chunk
/// starting below it repeats: a wide matrix's header would take much of a window.
const MAX_TABLE_HEADER_BYTES: usize = 400;

/// For a chunk of `text` starting at `start` below the header of a Markdown table: the
/// start of the row it begins in, and the header lines (first line and separator) to put
/// before it. A row read without its header is a list of cells nobody can name ("|
/// remote_apply | • | • | |"): the embedder, the keyword index and a citation's reader
/// are shown what each column holds. None where the chunk starts outside a table, on
/// its first line, or in code.
pub fn table_header_above(text: &str, start: usize) -> Option<(usize, String)> {
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_at = |at: usize| {
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        &text[at..end]
    };
    let is_row = |line: &str| line.trim_start().starts_with('|');
    let row = line_start(start);
    if !is_row(line_at(row)) {
        return None;
    }
    if crate::kb::parse::code_fences(text)
        .iter()
        .any(|&(a, b)| a < row && row < b)
    {
        return None;
    }
    // The table's first line: rows upwards until a line that is not one.
    let mut first = row;
    let mut lines_above = 0;
    while first > 0 {
        let above = line_start(first - 1);
        if !is_row(line_at(above)) {
            break;
        }
        first = above;
        lines_above += 1;
    }
    if lines_above == 0 {
        return None;
    }
    let header = line_at(first);
    let separator_start = first + header.len() + 1;
    let separator = line_at(separator_start);
    if !crate::kb::parse::is_table_rule(separator) || crate::kb::parse::is_table_rule(header) {
        return None;
    }
    let above = if row == separator_start {
        format!("{header}\n")
    } else {
        format!("{header}\n{separator}\n")
    };
    (above.len() <= MAX_TABLE_HEADER_BYTES).then_some((row, above))
}

fn trimmed(text: &str, start: usize, end: usize) -> Span {
    let slice = &text[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    Span {
        start: start + lead,
        end: end - trail,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tokenizers::models::wordpiece::WordPiece;
    use tokenizers::pre_tokenizers::bert::BertPreTokenizer;

    /// A small WordPiece tokenizer (every word a piece of up to 4 letters plus ## parts),
    /// enough to exercise the windowing without the real model files.
    pub(crate) fn toy_tokenizer() -> Tokenizer {
        let mut vocab = tokenizers::models::bpe::Vocab::default();
        let mut id = 0u32;
        let mut add = |s: String| {
            vocab.entry(s).or_insert_with(|| {
                id += 1;
                id - 1
            });
        };
        add("[UNK]".into());
        for c in ('a'..='z').chain('0'..='9') {
            add(c.to_string());
            add(format!("##{c}"));
        }
        for p in ['.', ',', ':', ';', '!', '?', '-', '/', '(', ')'] {
            add(p.to_string());
        }
        let wp = WordPiece::builder()
            .vocab(vocab)
            .unk_token("[UNK]".into())
            .build()
            .unwrap();
        let mut t = Tokenizer::new(wp);
        t.with_pre_tokenizer(Some(BertPreTokenizer));
        t
    }

    fn count(tok: &Tokenizer, s: &str) -> usize {
        tok.encode(s, false).unwrap().len()
    }

    #[test]
    fn code_blocks_that_fit_are_never_cut() {
        let tok = toy_tokenizer();
        let prose = |n: usize| -> String {
            (0..n)
                .map(|i| format!("word{i} alpha beta. "))
                .collect::<String>()
        };
        // The toy tokenizer spells words out: this block is about 15 pieces.
        let code = "```sh\nrm a.txt\nls b\n```";
        let text = format!("{}\n\n{code}\n\n{}", prose(12), prose(12));
        let p = ChunkParams {
            max_tokens: 50,
            overlap: 10,
        };
        let spans = chunk_spans(&tok, &text, p).unwrap();
        assert!(spans.len() > 2);
        let (a, b) = crate::kb::parse::code_fences(&text)[0];
        for s in &spans {
            assert!(count(&tok, &text[s.start..s.end]) <= 50);
            let cuts_into = (s.start > a && s.start < b) || (s.end > a && s.end < b);
            assert!(!cuts_into, "{:?}", &text[s.start..s.end]);
        }
        assert!(spans.iter().any(|s| text[s.start..s.end].contains(code)));
    }

    #[test]
    fn a_chunk_below_a_tables_header_repeats_it() {
        let text = "Modes:\n\n| mode | local | standby |\n| --- | --- | --- |\n| on | • | • |\n| local | • |  |\n\nAfter.";
        let at = |s: &str| text.find(s).unwrap();
        // A body row, from its middle: back to the row's start, header and separator.
        let (row, above) = table_header_above(text, at("• |  |")).unwrap();
        assert_eq!(row, at("| local | • |"));
        assert_eq!(above, "| mode | local | standby |\n| --- | --- | --- |\n");
        // On the separator: the header alone.
        let (row, above) = table_header_above(text, at("| --- |")).unwrap();
        assert_eq!(
            (row, above.as_str()),
            (at("| --- |"), "| mode | local | standby |\n")
        );
        // On the header, before the table, after it: nothing to repeat.
        for s in ["| mode |", "Modes:", "After."] {
            assert_eq!(table_header_above(text, at(s)), None, "{s}");
        }
        // Rows without a separator under their first line are no table; nor is code.
        assert_eq!(table_header_above("| a |\n| b |\n| c |", 8), None);
        let code = "```\n| a |\n| --- |\n| c |\n```";
        assert_eq!(table_header_above(code, code.find("| c").unwrap()), None);
    }

    #[test]
    fn short_text_is_one_chunk_and_empty_text_none() {
        let tok = toy_tokenizer();
        let spans = chunk_spans(&tok, "  ab cd.  ", ChunkParams::default()).unwrap();
        assert_eq!(spans, vec![Span { start: 2, end: 8 }]);
        assert!(chunk_spans(&tok, " \n ", ChunkParams::default())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn long_text_chunks_fit_the_window_overlap_and_cover_everything() {
        let tok = toy_tokenizer();
        let text: String = (0..120)
            .map(|i| format!("word{i} alpha beta{}", if i % 2 == 1 { ". " } else { " " }))
            .collect();
        let p = ChunkParams {
            max_tokens: 50,
            overlap: 10,
        };
        let spans = chunk_spans(&tok, &text, p).unwrap();
        assert!(spans.len() > 5);
        for w in spans.windows(2) {
            assert!(w[1].start < w[0].end, "consecutive chunks overlap");
            assert!(w[1].start > w[0].start);
        }
        assert_eq!(spans[0].start, 0);
        assert_eq!(spans.last().unwrap().end, text.trim_end().len());
        for s in &spans {
            let piece = &text[s.start..s.end];
            assert!(count(&tok, piece) <= 50, "{piece}");
            // Starts on a word, never mid-word.
            assert!(
                s.start == 0 || text[..s.start].ends_with([' ', '.']),
                "{piece}"
            );
        }
        // Most chunks end at a sentence end.
        let at_sentence = spans
            .iter()
            .filter(|s| text[..s.end].ends_with('.'))
            .count();
        assert!(
            at_sentence * 2 >= spans.len(),
            "{at_sentence} of {}",
            spans.len()
        );
    }
}
