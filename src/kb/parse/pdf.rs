//! PDF, page by page (pdf-extract), with the document outline (lopdf) as sections where
//! the file has one: a section runs from its bookmark's title on its page to the next
//! bookmark, split per page so every piece keeps its 1-indexed page number.

use anyhow::{anyhow, bail, Result};

use super::{collapse_ws, ocr, Anchors, DocKind, HeadingStack, ParsedDoc, Section};

pub fn parse(bytes: &[u8], stem: &str) -> Result<ParsedDoc> {
    let doc = lopdf::Document::load_mem(bytes)
        .map_err(|e| anyhow!("not a readable PDF (corrupt or truncated): {e}"))?;
    if doc.is_encrypted() {
        bail!("the PDF is encrypted (password protected); its text cannot be read");
    }
    // pdf-extract panics on some malformed content streams: contain it to this file.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| anyhow!("the PDF's text could not be extracted (malformed content)"))?
        .map_err(|e| anyhow!("the PDF's text could not be extracted: {e}"))?;
    let mut pages = pages;
    let notes = read_scanned_pages(&doc, &mut pages);
    let outline: Vec<(u8, String, usize)> = doc
        .get_toc()
        .map(|t| {
            t.toc
                .into_iter()
                .map(|e| (e.level.clamp(1, 6) as u8, collapse_ws(&e.title), e.page))
                .filter(|(_, t, p)| !t.is_empty() && *p >= 1)
                .collect()
        })
        .unwrap_or_default();
    let title = outline
        .iter()
        .find(|(l, _, _)| *l == 1)
        .map(|(_, t, _)| t.clone())
        .unwrap_or_else(|| stem.to_string());
    let mut sections = Vec::new();
    let mut anchors = Anchors::default();
    if outline.is_empty() {
        for (i, text) in pages.iter().enumerate() {
            let page = i as u32 + 1;
            sections.push(Section {
                heading: stem.to_string(),
                path: vec![stem.to_string()],
                level: 1,
                anchor: format!("page-{page}"),
                page: Some(page),
                text: tidy(text),
            });
        }
        return Ok(ParsedDoc {
            notes,
            kind: DocKind::Pdf,
            title,
            sections,
        });
    }
    // Resolve each bookmark's path and anchor once.
    let mut stack = HeadingStack::default();
    let entries: Vec<(String, Vec<String>, u8, String, usize)> = outline
        .iter()
        .map(|(level, t, page)| {
            let path = stack.push(*level, t);
            (t.clone(), path, *level, anchors.unique(t), *page)
        })
        .collect();
    // The section in force at the top of each page: the last bookmark on an earlier page.
    let mut current: Option<usize> = None;
    for (i, text) in pages.iter().enumerate() {
        let page = i + 1;
        // Bookmarks on this page, located in its text in order.
        let mut cuts: Vec<(usize, usize, usize)> = Vec::new(); // (entry, heading start, body start)
        let mut cursor = 0;
        for (e, entry) in entries.iter().enumerate().filter(|(_, en)| en.4 == page) {
            let (start, end) = find_heading(text, &entry.0, cursor).unwrap_or((cursor, cursor));
            cuts.push((e, start, end));
            cursor = end;
        }
        let mut push = |entry: Option<usize>, body: &str| {
            let body = tidy(body);
            let (heading, path, level, anchor) = match entry {
                Some(e) => {
                    let en = &entries[e];
                    (en.0.clone(), en.1.clone(), en.2, en.3.clone())
                }
                None => (
                    title.clone(),
                    vec![title.clone()],
                    0,
                    "preamble".to_string(),
                ),
            };
            if body.is_empty() && entry.is_none() {
                return;
            }
            sections.push(Section {
                heading,
                path,
                level,
                anchor,
                page: Some(page as u32),
                text: body,
            });
        };
        let first_cut = cuts.first().map(|c| c.1).unwrap_or(text.len());
        if !text[..first_cut].trim().is_empty() || cuts.is_empty() {
            push(current, &text[..first_cut]);
        }
        for (k, &(e, _, body_start)) in cuts.iter().enumerate() {
            let body_end = cuts.get(k + 1).map(|c| c.1).unwrap_or(text.len());
            push(Some(e), &text[body_start..body_end.max(body_start)]);
            current = Some(e);
        }
    }
    Ok(ParsedDoc {
        notes,
        kind: DocKind::Pdf,
        title,
        sections,
    })
}

/// Pages without a text layer (a scanner's image) get the text OCR reads in their
/// image. Returns notes on the pages left unread: Tesseract missing (naming the
/// package), an image encoding it cannot be given, or its failure.
fn read_scanned_pages(doc: &lopdf::Document, pages: &mut [String]) -> Vec<String> {
    let ids = doc.get_pages();
    let program = ocr::tesseract();
    let (mut missing, mut notes) = (Vec::new(), Vec::new());
    for (i, text) in pages.iter_mut().enumerate() {
        if text.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
            continue;
        }
        let n = i as u32 + 1;
        let Some(&id) = ids.get(&n) else { continue };
        let image = match ocr::page_image(doc, id) {
            Ok(Some(image)) => image,
            Ok(None) => continue,
            Err(e) => {
                notes.push(format!("page {n} is a scan not read: {e:#}"));
                continue;
            }
        };
        let Some(program) = &program else {
            missing.push(n.to_string());
            continue;
        };
        match ocr::image_text(program, &image) {
            Ok(t) => *text = t,
            Err(e) => notes.push(format!("page {n} is a scan not read: {e:#}")),
        }
    }
    if !missing.is_empty() {
        notes.insert(
            0,
            format!(
                "scanned page(s) {} have no text layer and were not read: {}",
                missing.join(", "),
                ocr::INSTALL_HINT
            ),
        );
    }
    notes
}

/// Finds `heading` in `text` at or after `from`, ignoring case and whitespace
/// differences. Returns the byte range of the match.
fn find_heading(text: &str, heading: &str, from: usize) -> Option<(usize, usize)> {
    let want: Vec<char> = heading
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if want.is_empty() {
        return None;
    }
    let hay: Vec<(usize, char)> = text[from..]
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .map(|(i, c)| (from + i, c.to_lowercase().next().unwrap_or(c)))
        .collect();
    hay.windows(want.len()).find_map(|w| {
        w.iter().map(|(_, c)| *c).eq(want.iter().copied()).then(|| {
            let (last_i, last_c) = w[w.len() - 1];
            (w[0].0, last_i + last_c.len_utf8())
        })
    })
}

fn tidy(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headings_despite_case_and_spacing() {
        let t = "Intro\n2.  Paging   the On-Call\nbody";
        let (s, e) = find_heading(t, "2. Paging the on-call", 0).unwrap();
        assert_eq!(&t[s..e], "2.  Paging   the On-Call");
        assert!(find_heading(t, "Missing", 0).is_none());
    }

    #[test]
    fn corrupt_and_truncated_pdfs_are_refused_with_a_reason() {
        let err = parse(b"%PDF-1.4\n garbage", "x").unwrap_err().to_string();
        assert!(err.contains("not a readable PDF"), "{err}");
    }
}
