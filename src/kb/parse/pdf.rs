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
    drop_running_lines(&mut pages);
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

/// A page's text as stored: its lines trimmed, blank ones dropped, and the lines a
/// paragraph was wrapped into joined again (`continues`), so that a sentence is never cut
/// where the page's line ended ("…if errors continue after that, page the" / "database
/// on-call."). List items and headings keep their own lines.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    let mut prev: Option<&str> = None;
    for line in lines {
        match prev {
            // A word hyphenated at the line's end ("on-" / "call") keeps its hyphen.
            Some(p) if continues(p, line, widest) && p.ends_with('-') => {}
            Some(p) if continues(p, line, widest) => out.push(' '),
            Some(_) => out.push('\n'),
            None => {}
        }
        out.push_str(line);
        prev = Some(line);
    }
    out
}

/// Whether `next` continues the paragraph `line` was wrapped from: `line` does not end a
/// sentence (or introduce what follows, with `:`), `next` does not start a list item,
/// and `next` starts in lower case, or `line` runs at least three quarters of the widest
/// line (a wrap before a capitalised word).
fn continues(line: &str, next: &str, widest: usize) -> bool {
    let end = line
        .trim_end_matches(['"', '\'', ')', ']', '”', '’'])
        .chars()
        .last();
    if matches!(end, Some('.' | '!' | '?' | ':') | None) || starts_item(next) {
        return false;
    }
    let first = next.chars().next().unwrap_or(' ');
    first.is_lowercase()
        || (line.chars().count() * 4 >= widest * 3 && (first.is_alphanumeric() || first == '('))
}

/// A list item's first line: a bullet, or a number or letter with `.` or `)`.
fn starts_item(line: &str) -> bool {
    if line.starts_with(['-', '•', '*', '–', '◦', '▪']) {
        return true;
    }
    let marker: String = line.chars().take_while(|c| c.is_alphanumeric()).collect();
    let rest = &line[marker.len()..];
    (1..=3).contains(&marker.chars().count())
        && (marker.chars().all(|c| c.is_ascii_digit()) || marker.chars().count() == 1)
        && (rest.starts_with(". ") || rest.starts_with(") "))
}

/// Leaves out running headers and footers: a first or last line of a page that recurs,
/// its digits aside ("Lighthouse On-call Guide - page 5"), on at least three pages and
/// half of them. Such a line is in no section's text, and a question about paging is not
/// answered by the page numbers.
fn drop_running_lines(pages: &mut [String]) {
    let shape = |l: &str| -> String {
        collapse_ws(l)
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect()
    };
    let edges = |page: &str| -> Vec<String> {
        let lines: Vec<&str> = page.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut e: Vec<String> = lines
            .first()
            .into_iter()
            .chain(lines.last())
            .map(|l| shape(l))
            .collect();
        e.dedup();
        e
    };
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for page in pages.iter() {
        for e in edges(page) {
            *counts.entry(e).or_default() += 1;
        }
    }
    let needed = 3.max(pages.len().div_ceil(2));
    let running: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| *n >= needed)
        .map(|(l, _)| l)
        .collect();
    if running.is_empty() {
        return;
    }
    for page in pages.iter_mut() {
        let lines: Vec<&str> = page.lines().collect();
        let filled: Vec<usize> = (0..lines.len())
            .filter(|&i| !lines[i].trim().is_empty())
            .collect();
        let (Some(&first), Some(&last)) = (filled.first(), filled.last()) else {
            continue;
        };
        let kept: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|&(i, l)| !((i == first || i == last) && running.contains(&shape(l))))
            .map(|(_, l)| *l)
            .collect();
        *page = kept.join("\n");
    }
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
    fn wrapped_lines_are_joined_and_items_and_headings_kept() {
        let page = "Database failover\n\
            When the primary database fails, the operator promotes a replica and\n\
            PgBouncer reconnects. Do nothing for the first 2 minutes; if errors continue, page the\n\
            database on-call.\n\
            You need all of the following:\n\
            - Membership of the SSO group grp-oncall, which gives the operator\n\
            role.\n\
            - A working cluster login.\n\
            2. Page the secondary as soon as you need a second pair of hands or the on-\n\
            call lead says so.\n\
            Escalation";
        assert_eq!(
            tidy(page),
            "Database failover\n\
             When the primary database fails, the operator promotes a replica and PgBouncer \
             reconnects. Do nothing for the first 2 minutes; if errors continue, page the \
             database on-call.\n\
             You need all of the following:\n\
             - Membership of the SSO group grp-oncall, which gives the operator role.\n\
             - A working cluster login.\n\
             2. Page the secondary as soon as you need a second pair of hands or the on-call \
             lead says so.\n\
             Escalation"
        );
    }

    #[test]
    fn running_headers_and_footers_are_left_out() {
        let mut pages: Vec<String> = (1..=4)
            .map(|n| format!("Guide\nBody of page {n}.\nGuide - page {n}"))
            .collect();
        pages.push("Last page, no footer.".into());
        drop_running_lines(&mut pages);
        assert_eq!(pages[0], "Body of page 1.");
        assert_eq!(pages[3], "Body of page 4.");
        assert_eq!(pages[4], "Last page, no footer.");
        // Two pages are too few to tell a running line from a repeated one.
        let mut two = vec!["A\nx".to_string(), "A\ny".to_string()];
        drop_running_lines(&mut two);
        assert_eq!(two[0], "A\nx");
    }

    #[test]
    fn the_sample_guide_reads_as_whole_sentences_without_its_footers() {
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/kb/handbook/oncall-guide.pdf"),
        )
        .unwrap();
        let doc = parse(&bytes, "oncall-guide").unwrap();
        let text: Vec<&str> = doc.sections.iter().map(|s| s.text.as_str()).collect();
        assert!(
            text.iter().all(|t| !t.contains("On-call Guide - page")),
            "{text:#?}"
        );
        let failover = doc
            .sections
            .iter()
            .find(|s| s.heading == "Database failover")
            .unwrap();
        assert!(
            failover
                .text
                .lines()
                .any(|l| l.contains("if errors continue after that, page the database on-call.")),
            "{}",
            failover.text
        );
    }

    #[test]
    fn corrupt_and_truncated_pdfs_are_refused_with_a_reason() {
        let err = parse(b"%PDF-1.4\n garbage", "x").unwrap_err().to_string();
        assert!(err.contains("not a readable PDF"), "{err}");
    }
}
