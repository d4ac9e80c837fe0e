//! Page furniture that no markup names: a block of text repeated across the pages of one
//! site (Python's licence footer on 528 of 530 pages, "Part of the git(1) suite" on 157
//! of 160, SQLite's "Small. Fast. Reliable. Choose any three.", Apache's copyright line).
//! Each copy made its page's last chunk like every other page's and pulled questions
//! about licences, versions or dates to it. Before an ingest reads its files, its HTML
//! pages are parsed once to count in how many pages of each folder (the root and every
//! folder under it) each block occurs. A block in at least `MIN_SHARE` of a folder's
//! pages (a folder of `MIN_FOLDER` pages or more) is furniture there: it is kept only on
//! the root's first page that has it (by path), so the KB still holds it once, and left
//! out of the folder's other pages.
//!
//! A block shared by some pages is content and stays on each: git's diff options,
//! included in six of 160 manual pages; Python's "New in version 3.8." on 79 of 317
//! library pages. Only HTML is counted: Markdown marks no furniture that this would find,
//! and PDF has its own per-page rule.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::kb::parse::{code_fences, DocKind, ParsedDoc};

/// Pages a folder needs (its own and its subfolders') for its blocks to be counted.
const MIN_FOLDER: usize = 10;

/// The share of a folder's pages a block must occur in, at least, to be furniture.
const MIN_SHARE: f64 = 0.5;

/// Words a block needs to be counted, one of them with a letter ("See also" or "Note"
/// name a part; they are not furniture).
const MIN_WORDS: usize = 3;

/// The repeated blocks of one ingest and the page that keeps each.
#[derive(Debug, Default)]
pub struct Boilerplate {
    /// (folder, block): furniture in that folder (`folder_key`).
    furniture: HashSet<(u64, u64)>,
    /// (root, block) → the path of the page that keeps it.
    keepers: HashMap<(u64, u64), String>,
}

/// One page to count: the root it is recorded under, its path there, and the file.
pub struct Page<'a> {
    pub root: &'a str,
    pub rel: &'a str,
    pub abs: &'a Path,
}

impl Boilerplate {
    /// Counts the blocks of `pages` folder by folder; `blocks` gives a page's (None for a
    /// page that cannot be read, left out of the counts).
    /// `on_read(pages read, pages to read)` follows the reading, about once a percent.
    pub fn learn(
        pages: &[Page<'_>],
        blocks: &(dyn Fn(&Page<'_>) -> Option<HashSet<u64>> + Sync),
        on_read: &(dyn Fn(usize, usize) + Sync),
    ) -> Self {
        let mut roots: HashMap<&str, Vec<&Page<'_>>> = HashMap::new();
        for p in pages
            .iter()
            .filter(|p| DocKind::from_path(p.abs) == Some(DocKind::Html))
        {
            roots.entry(p.root).or_default().push(p);
        }
        roots.retain(|_, pages| pages.len() >= MIN_FOLDER);
        let to_read: usize = roots.values().map(Vec::len).sum();
        let (read, step) = (AtomicUsize::new(0), to_read.div_ceil(100).max(1));
        let mut found = Boilerplate::default();
        for (root, mut pages) in roots {
            pages.sort_by(|a, b| a.rel.cmp(b.rel));
            let sets: Vec<Vec<u64>> = pages
                .par_iter()
                .map(|p| {
                    let mut v: Vec<u64> = blocks(p).unwrap_or_default().into_iter().collect();
                    v.sort_unstable();
                    let n = read.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % step == 0 || n == to_read {
                        on_read(n, to_read);
                    }
                    v
                })
                .collect();
            found.learn_root(root, &pages, &sets);
        }
        found
    }

    /// One root's pages (sorted by path) and their blocks.
    fn learn_root(&mut self, root: &str, pages: &[&Page<'_>], sets: &[Vec<u64>]) {
        // Blocks on too few pages to be furniture anywhere, left out before counting
        // by folder: nearly all of them occur once.
        let least = (MIN_SHARE * MIN_FOLDER as f64).ceil() as usize;
        let mut all: Vec<u64> = sets.iter().flatten().copied().collect();
        all.sort_unstable();
        let candidates: HashSet<u64> = all
            .chunk_by(|a, b| a == b)
            .filter(|run| run.len() >= least)
            .map(|run| run[0])
            .collect();
        drop(all);
        let mut folder_pages: HashMap<u64, usize> = HashMap::new();
        let mut counts: HashMap<(u64, u64), usize> = HashMap::new();
        for (page, set) in pages.iter().zip(sets) {
            let folders: Vec<u64> = folders_of(page.rel).map(|f| folder_key(root, f)).collect();
            for &f in &folders {
                *folder_pages.entry(f).or_default() += 1;
            }
            for &b in set.iter().filter(|b| candidates.contains(b)) {
                self.keepers
                    .entry((folder_key(root, ""), b))
                    .or_insert_with(|| page.rel.to_string());
                for &f in &folders {
                    *counts.entry((f, b)).or_default() += 1;
                }
            }
        }
        for ((f, b), n) in counts {
            let size = folder_pages[&f];
            if size >= MIN_FOLDER && n as f64 >= MIN_SHARE * size as f64 {
                self.furniture.insert((f, b));
            }
        }
        let furniture: HashSet<u64> = self.furniture.iter().map(|&(_, b)| b).collect();
        self.keepers.retain(|(_, b), _| furniture.contains(b));
    }

    /// Whether any block was found repeated.
    pub fn is_empty(&self) -> bool {
        self.furniture.is_empty()
    }

    /// Leaves the repeated blocks out of `doc` (the page `rel` under `root`) unless it is
    /// the page that keeps them; returns how many blocks were left out.
    pub fn strip(&self, root: &str, rel: &str, doc: &mut ParsedDoc) -> usize {
        if self.furniture.is_empty() || doc.kind != DocKind::Html {
            return 0;
        }
        let folders: Vec<u64> = folders_of(rel).map(|f| folder_key(root, f)).collect();
        let root_key = folder_key(root, "");
        let mut left_out = 0;
        for section in &mut doc.sections {
            let units = units(&section.text);
            let mut dropped: Vec<bool> = units
                .iter()
                .map(|u| {
                    u.fingerprint.is_some_and(|b| {
                        folders.iter().any(|&f| self.furniture.contains(&(f, b)))
                            && self
                                .keepers
                                .get(&(root_key, b))
                                .is_some_and(|keeper| keeper != rel)
                    })
                })
                .collect();
            left_out += dropped.iter().filter(|&&d| d).count();
            // A box's title whose text went as furniture ("Note" over every module page's
            // "Parameter names are case-insensitive.") goes with it: left alone it became
            // a chunk of one word, read as a passage.
            for i in (0..units.len()).rev() {
                let text = &section.text[units[i].start..units[i].end];
                let emptied = dropped.get(i + 1).copied().unwrap_or(true);
                if !dropped[i] && emptied && dropped.iter().any(|&d| d) && is_box_title(text) {
                    dropped[i] = true;
                }
            }
            let kept: Vec<&str> = units
                .iter()
                .zip(&dropped)
                .filter(|(_, &d)| !d)
                .map(|(u, _)| &section.text[u.start..u.end])
                .collect();
            if kept.len() < units.len() {
                section.text = kept.join("\n\n");
                // What the parser left of a title box beside the furniture ("Small.
                // Fast. Reliable." gone, SQLite's "VACUUM" box stays) goes as the parser
                // would have let it go (`parse::without_title`).
                if section.level == 0 {
                    section.text = crate::kb::parse::without_title(&section.text, &section.heading);
                }
            }
        }
        left_out
    }
}

/// Whether a block is only the title of an admonition box ("Note", "Warning:", "See
/// also").
fn is_box_title(block: &str) -> bool {
    let title = block.trim().trim_end_matches(':').to_lowercase();
    crate::kb::parse::is_admonition_title(&title) || title == "see also"
}

/// The folders a page is in, from its root down: "" (the root), "library", …
fn folders_of(rel: &str) -> impl Iterator<Item = &str> {
    std::iter::once("").chain(rel.match_indices('/').map(|(i, _)| &rel[..i]))
}

/// A folder of a root, as the counts key it.
fn folder_key(root: &str, folder: &str) -> u64 {
    let mut h = DefaultHasher::new();
    (root, folder).hash(&mut h);
    h.finish()
}

/// A block's fingerprint: the first eight bytes of its SHA-256, the same from build to
/// build (`PAGE_BLOCKS` keeps them; std's `DefaultHasher` may change with the compiler).
fn stable_hash(normalized: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(normalized.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// A block of a section's Markdown: lines between blank lines, a fenced code block whole.
struct Unit {
    start: usize,
    end: usize,
    /// None for code and for blocks too short to count.
    fingerprint: Option<u64>,
}

fn units(text: &str) -> Vec<Unit> {
    let fences = code_fences(text);
    let in_fence = |pos: usize| fences.iter().any(|&(s, e)| pos >= s && pos < e);
    let mut out: Vec<Unit> = Vec::new();
    let mut open: Option<(usize, usize, bool)> = None; // start, end, holds code
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let code = in_fence(pos);
        let blank = line.trim().is_empty() && !code;
        if blank {
            if let Some((s, e, c)) = open.take() {
                out.push(unit(text, s, e, c));
            }
        } else {
            let end = pos + line.trim_end_matches(['\n', '\r']).len();
            open = Some(match open {
                Some((s, _, c)) => (s, end, c || code),
                None => (pos, end, code),
            });
        }
        pos += line.len();
    }
    if let Some((s, e, c)) = open {
        out.push(unit(text, s, e, c));
    }
    out
}

fn unit(text: &str, start: usize, end: usize, code: bool) -> Unit {
    let fingerprint = (!code)
        .then(|| normalized(&text[start..end]))
        .and_then(|n| {
            let words = n.split_whitespace().count();
            (words >= MIN_WORDS && n.chars().any(char::is_alphabetic)).then(|| stable_hash(&n))
        });
    Unit {
        start,
        end,
        fingerprint,
    }
}

/// A block's text as its copies on other pages share it: links without their targets
/// ("« [previous](a.html) | [up](../index.html)"), dates, times and years as one digit
/// per number (a word of four digits or more: "2026-11-27", "00:35:55"; "3.8" stays, so
/// "New in version 3.8." and "…3.9." differ), lower case, single spaces.
fn normalized(block: &str) -> String {
    let mut out = String::with_capacity(block.len());
    let mut rest = block;
    while let Some(i) = rest.find("](") {
        out.push_str(&rest[..i + 1]);
        rest = &rest[i + 2..];
        rest = rest.find(')').map_or("", |j| &rest[j + 1..]);
    }
    out.push_str(rest);
    let words: Vec<String> = out
        .split_whitespace()
        .map(|word| {
            let word = word.to_lowercase();
            if word.chars().filter(char::is_ascii_digit).count() < 4 {
                return word;
            }
            let mut squeezed = String::with_capacity(word.len());
            let mut last_digit = false;
            for c in word.chars() {
                let digit = c.is_ascii_digit();
                if !(digit && last_digit) {
                    squeezed.push(if digit { '0' } else { c });
                }
                last_digit = digit;
            }
            squeezed
        })
        .collect();
    words.join(" ")
}

/// The fingerprints of a page's blocks.
pub(super) fn fingerprints(doc: &ParsedDoc) -> HashSet<u64> {
    doc.sections
        .iter()
        .flat_map(|s| units(&s.text))
        .filter_map(|u| u.fingerprint)
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::kb::parse::Section;

    /// A one-section HTML page (also the cache's tests').
    pub(in crate::kb::ingest) fn page(body: &str) -> ParsedDoc {
        ParsedDoc {
            kind: DocKind::Html,
            title: "t".into(),
            sections: vec![Section {
                heading: "H".into(),
                path: vec!["H".into()],
                level: 1,
                anchor: "h".into(),
                page: None,
                text: body.into(),
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn blocks_repeated_across_a_folder_are_kept_on_one_page() {
        let footer = |i: usize| {
            format!("« [previous](p{i}.html) | [up](index.html) | [next](n{i}.html) »\n\nLast updated 2026-11-{i:02} 00:35:{i:02} UTC")
        };
        let code = "```sh\ngit log\n\ngit log --stat --all\n```";
        // Twelve pages at the top and ten in `api/`, all with the footer (dates and link
        // targets differ); three share an included option list; `api/`'s pages share a
        // banner that no other page has; every page has the same code example.
        let bodies: Vec<(String, String)> = (0..22)
            .map(|i| {
                let rel = if i < 12 {
                    format!("a{i:02}.html")
                } else {
                    format!("api/r{i:02}.html")
                };
                let mut body = format!("This page explains topic number {i} and nothing else.");
                if i < 3 {
                    body += "\n\n- `--stat`: show a diffstat of the changes made";
                }
                if i >= 12 {
                    body += "\n\nThis is the reference of the C interface.";
                }
                (rel, format!("{body}\n\n{code}\n\n{}", footer(i)))
            })
            .collect();
        let parsed: HashMap<String, ParsedDoc> = bodies
            .iter()
            .map(|(rel, body)| (rel.clone(), page(body)))
            .collect();
        let pages: Vec<Page<'_>> = bodies
            .iter()
            .map(|(rel, _)| Page {
                root: "/docs",
                rel,
                abs: Path::new(rel),
            })
            .collect();
        let reports = std::sync::Mutex::new(Vec::new());
        let bp = Boilerplate::learn(
            &pages,
            &|p: &Page<'_>| parsed.get(p.rel).map(fingerprints),
            &|n, of| reports.lock().unwrap().push((n, of)),
        );
        // The reading is followed to its end.
        let reports = reports.into_inner().unwrap();
        assert!(reports.contains(&(pages.len(), pages.len())), "{reports:?}");
        let stripped = |rel: &str| {
            let mut d = parsed[rel].clone();
            let n = bp.strip("/docs", rel, &mut d);
            (n, d.sections[0].text.clone())
        };
        // The root's first page keeps the footer; `api/`'s first the banner.
        let (n, first) = stripped("api/r12.html");
        assert_eq!(n, 2, "{first}");
        assert!(first.contains("the C interface"), "{first}");
        let (n, top) = stripped("a00.html");
        assert_eq!(n, 0, "{top}");
        let (n, fifth) = stripped("a05.html");
        assert_eq!(n, 2, "{fifth}");
        assert_eq!(
            fifth,
            format!("This page explains topic number 5 and nothing else.\n\n{code}")
        );
        let (n, second) = stripped("a01.html");
        assert_eq!(n, 2);
        assert!(second.contains("--stat`: show a diffstat"), "{second}");
        let (n, api) = stripped("api/r20.html");
        assert_eq!(n, 3, "{api}");
        // Ten pages are fewer than a folder needs.
        assert!(Boilerplate::learn(
            &pages[..9],
            &|p: &Page<'_>| parsed.get(p.rel).map(fingerprints),
            &|_, _| {}
        )
        .is_empty());
    }

    /// The repeated blocks of ten pages `p0.html` … `p9.html` under `/docs`, page i
    /// parsed as `doc(i)`.
    fn learned_from_ten_pages(doc: &(dyn Fn(usize) -> ParsedDoc + Sync)) -> Boilerplate {
        let rels: Vec<String> = (0..10).map(|i| format!("p{i}.html")).collect();
        let pages: Vec<Page<'_>> = rels
            .iter()
            .map(|rel| Page {
                root: "/docs",
                rel,
                abs: Path::new(rel),
            })
            .collect();
        let blocks = |p: &Page<'_>| {
            let i: usize = p.rel[1..p.rel.len() - 5].parse().unwrap();
            Some(fingerprints(&doc(i)))
        };
        Boilerplate::learn(&pages, &blocks, &|_, _| {})
    }

    #[test]
    fn a_title_left_alone_by_the_furniture_goes_too() {
        let titled = |i: usize| {
            let mut d = page(&format!("Section {i} body with its own words."));
            d.sections.insert(
                0,
                Section {
                    heading: format!("VACUUM{i}"),
                    path: vec![format!("VACUUM{i}")],
                    level: 0,
                    anchor: "t".into(),
                    page: None,
                    text: format!("Small. Fast. Reliable.\nChoose any three.\n\nVACUUM{i}"),
                },
            );
            d
        };
        let bp = learned_from_ten_pages(&titled);
        let mut d = titled(4);
        assert_eq!(bp.strip("/docs", "p4.html", &mut d), 1);
        assert_eq!(d.sections[0].text, "");
        assert_eq!(d.sections[1].text, "Section 4 body with its own words.");
    }

    #[test]
    fn a_box_title_whose_text_went_as_furniture_goes_too() {
        let body = |i: usize| {
            format!(
                "Note\n\nParameter names are case-insensitive.\n\nModule {i} reads the journal.\n\n\
                 Note\n\nModule {i} needs version {i}.\n\nSee also\n\nHelp with configuring rsyslog: the mailing list."
            )
        };
        let bp = learned_from_ten_pages(&|i| page(&body(i)));
        let mut d = page(&body(4));
        assert_eq!(bp.strip("/docs", "p4.html", &mut d), 2);
        assert_eq!(
            d.sections[0].text,
            "Module 4 reads the journal.\n\nNote\n\nModule 4 needs version 4."
        );
    }

    #[test]
    fn normalized_drops_link_targets_and_numbers() {
        assert_eq!(
            normalized("Last  updated 2026-11-27 00:35:55 [Home](../index.html)"),
            "last updated 0-0-0 0:0:0 [home]"
        );
        assert_ne!(
            normalized("New in version 3.8."),
            normalized("New in version 3.9.")
        );
    }
}
