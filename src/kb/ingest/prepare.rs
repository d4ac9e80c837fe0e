//! A file's work away from the KB: parse (in a worker), chunk, embed; several files'
//! chunks embedded together.

use std::path::Path;

use anyhow::Result;
use tokenizers::Tokenizer;

use super::{IngestOptions, Prepared, Work};
use crate::embed::Embedder;
use crate::kb::chunk::{chunk_spans, table_header_above, ChunkParams};
use crate::kb::parse::{self, DocKind, ParsedDoc};
use crate::kb::store::{embed_text, NewChunk};

/// Chunk ids: `pdfpage_{page}_chunk_{i}` for PDFs (i counts chunks within the page, as the
/// RAG format specifies), `{anchor}_chunk_{i}` otherwise (i counts within the section).
/// Both depend only on the document's own content, so they are stable across re-ingest.
pub fn make_chunks(
    doc: &ParsedDoc,
    tok: &tokenizers::Tokenizer,
    params: ChunkParams,
) -> Result<Vec<NewChunk>> {
    let mut chunks = Vec::new();
    let mut per_page: std::collections::HashMap<u32, usize> = Default::default();
    for (si, s) in doc.sections.iter().enumerate() {
        for (i, span) in chunk_spans(tok, &s.text, params)?.into_iter().enumerate() {
            let chunk_id = match (doc.kind, s.page) {
                (DocKind::Pdf, Some(page)) => {
                    let n = per_page.entry(page).or_insert(0);
                    *n += 1;
                    format!("pdfpage_{page}_chunk_{}", *n - 1)
                }
                _ => format!("{}_chunk_{i}", s.anchor),
            };
            // A chunk below a table's header starts at its row, with the header put
            // above it (outside `start..end`, which stay a span of the section's text).
            let (start, text) = match table_header_above(&s.text, span.start) {
                Some((row, above)) => (row, format!("{above}{}", &s.text[row..span.end])),
                None => (span.start, s.text[span.start..span.end].to_string()),
            };
            chunks.push(NewChunk {
                section: si,
                chunk_id,
                page: s.page,
                start,
                end: span.end,
                text,
            });
        }
    }
    Ok(chunks)
}

/// Files prepared together: their chunks are embedded in one call, so batches are full
/// and sorted by length across documents instead of one small, ragged batch per file
/// (documentation folders are many small files).
pub const PREPARE_GROUP: usize = 16;

impl Work {
    /// Parses (in a worker when the options say so), chunks and embeds; needs no KB.
    /// `tok` is the embedder's counting tokenizer.
    pub fn prepare(self, embedder: &Embedder, tok: &Tokenizer, opts: &IngestOptions) -> Prepared {
        Work::prepare_group(vec![self], embedder, tok, opts)
            .pop()
            .expect("one prepared per work")
    }

    /// The parsed page, its chunks, and how many repeated blocks were left out of it.
    fn parse_and_chunk(
        &self,
        tok: &Tokenizer,
        opts: &IngestOptions,
    ) -> Result<(ParsedDoc, Vec<NewChunk>, usize)> {
        let mut parsed = parse_file(&self.abs, &self.bytes, opts)?;
        let repeated = self
            .boilerplate
            .as_ref()
            .map_or(0, |b| b.strip(&self.root, &self.rel, &mut parsed));
        let chunks = make_chunks(&parsed, tok, opts.chunk)?;
        Ok((parsed, chunks, repeated))
    }

    /// `prepare` for several files at once (see `PREPARE_GROUP`); one result per work, in
    /// order. A file that fails to parse fails alone.
    pub fn prepare_group(
        works: Vec<Work>,
        embedder: &Embedder,
        tok: &Tokenizer,
        opts: &IngestOptions,
    ) -> Vec<Prepared> {
        let parsed: Vec<Result<(ParsedDoc, Vec<NewChunk>, usize)>> =
            works.iter().map(|w| w.parse_and_chunk(tok, opts)).collect();
        let texts: Vec<String> = parsed
            .iter()
            .flatten()
            .flat_map(|(doc, chunks, _)| {
                chunks
                    .iter()
                    .map(|ch| embed_text(&doc.sections[ch.section].path, &ch.text))
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut vectors = embedder.embed(&refs).map(|v| v.into_iter());
        works
            .into_iter()
            .zip(parsed)
            .map(|(work, parsed)| {
                let repeated = parsed.as_ref().map_or(0, |(_, _, n)| *n);
                let result = parsed.and_then(|(doc, chunks, _)| match &mut vectors {
                    Ok(all) => {
                        let mine = all.by_ref().take(chunks.len()).collect();
                        Ok((doc, chunks, mine))
                    }
                    Err(e) => Err(anyhow::anyhow!("embedding failed: {e:#}")),
                });
                Prepared {
                    work,
                    result,
                    repeated,
                }
            })
            .collect()
    }
}

/// Parses a file, in a worker when the options say so.
pub(super) fn parse_file(path: &Path, bytes: &[u8], opts: &IngestOptions) -> Result<ParsedDoc> {
    match &opts.isolation {
        Some(iso) => parse::worker::parse_isolated(iso, path, bytes),
        None => std::panic::catch_unwind(|| parse::parse(path, bytes))
            .map_err(|_| anyhow::anyhow!("the parser panicked on this file"))?,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::chunk::tests::toy_tokenizer;
    use crate::kb::parse::Section;

    #[test]
    fn chunks_inside_a_long_table_start_at_a_row_under_its_header() {
        let rows: String = (0..40)
            .map(|i| format!("| mode{i} | yes | no |\n"))
            .collect();
        let text = format!("| setting | local | standby |\n| --- | --- | --- |\n{rows}");
        let doc = ParsedDoc {
            kind: DocKind::Markdown,
            title: "t".into(),
            sections: vec![Section {
                heading: "Modes".into(),
                path: vec!["Modes".into()],
                level: 1,
                anchor: "modes".into(),
                page: None,
                text: text.clone(),
            }],
            notes: Vec::new(),
        };
        let p = ChunkParams {
            max_tokens: 60,
            overlap: 10,
        };
        let chunks = make_chunks(&doc, &toy_tokenizer(), p).unwrap();
        assert!(chunks.len() > 3, "{}", chunks.len());
        for c in &chunks {
            assert!(
                c.text
                    .starts_with("| setting | local | standby |\n| --- | --- | --- |\n| mode"),
                "{}",
                c.text
            );
            // The span is the section's text from a row's start; the header is above it.
            assert!(text[..c.start].is_empty() || text[..c.start].ends_with('\n'));
            assert!(c.text.ends_with(&text[c.start..c.end]));
        }
    }
}
