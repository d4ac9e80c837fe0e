//! The files of an ingest: what is under a folder, the root each is recorded under, and
//! whether each is new or changed (by content hash).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::{kind_version, Work, PARSER_VERSION};
use crate::kb::index::DocumentLedger;
use crate::kb::parse::DocKind;

/// A file to consider, with its path relative to the ingested root.
pub struct Candidate {
    pub(super) abs: PathBuf,
    pub rel: String,
    /// Its size when the folder was walked (for progress; the read checks it again).
    pub bytes: u64,
}

/// What a folder holds for an ingest.
pub(super) struct Found {
    /// The documents to read, by relative path.
    pub files: Vec<Candidate>,
    /// Entries with a document's name that are not regular files (links are not
    /// followed: they could lead out of the folder or in a circle; a FIFO or device would
    /// block the read), each with why it is skipped.
    pub not_files: Vec<(String, String)>,
    /// Text sources of pages the folder also holds built (`source_of_built_page`), left
    /// out so that each page is read once.
    pub page_sources: Vec<String>,
    /// Pages a documentation generator builds from the others (`generated_page`).
    pub generated_pages: Vec<String>,
}

/// The documents under `root`.
pub(super) fn candidates(root: &Path, images: bool) -> Found {
    if root.is_file() {
        let rel = root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let file = Candidate {
            abs: root.to_path_buf(),
            rel,
            bytes: std::fs::metadata(root).map(|m| m.len()).unwrap_or(0),
        };
        return Found {
            files: vec![file],
            not_files: Vec::new(),
            page_sources: Vec::new(),
            generated_pages: Vec::new(),
        };
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    for e in walk.flatten() {
        match DocKind::from_path(e.path()) {
            None => continue,
            Some(DocKind::Image) if !images => continue,
            Some(_) => {}
        }
        let Ok(rel) = e.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        match e.file_type() {
            Some(t) if t.is_file() => out.push(Candidate {
                abs: e.path().to_path_buf(),
                rel,
                bytes: e.metadata().map(|m| m.len()).unwrap_or(0),
            }),
            Some(t) if t.is_symlink() => skipped.push((
                rel,
                "a symbolic link; links are not followed (copy the file into the folder)"
                    .to_string(),
            )),
            Some(t) if !t.is_dir() => skipped.push((
                rel,
                "not a regular file (a FIFO, socket or device)".to_string(),
            )),
            _ => {}
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    skipped.sort();
    let built: HashSet<String> = out
        .iter()
        .filter(|c| DocKind::from_path(Path::new(&c.rel)) == Some(DocKind::Html))
        .map(|c| without_extension(&c.rel).to_string())
        .collect();
    let (page_sources, files): (Vec<_>, Vec<_>) = out.into_iter().partition(|c| {
        source_of_built_page(&c.rel).is_some_and(|page| built.contains(page.as_str()))
    });
    let (generated_pages, files): (Vec<_>, Vec<_>) =
        files.into_iter().partition(|c| generated_page(&c.abs));
    Found {
        files,
        not_files: skipped,
        page_sources: page_sources.into_iter().map(|c| c.rel).collect(),
        generated_pages: generated_pages.into_iter().map(|c| c.rel).collect(),
    }
}

/// Whether a page is one a Sphinx build generates from the others: its index of terms
/// (`genindex.html`, each a list of links), its module index and its search page (a
/// form that needs JavaScript), beside the build's `searchindex.js` or marked as such by
/// its own markup. Read, the index matched every question that named a term and was
/// quoted as a list of links (bind9-doc's: 498 of its 4,372 chunks).
fn generated_page(abs: &Path) -> bool {
    let Some(name) = abs.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let generated = matches!(name, "genindex.html" | "search.html" | "py-modindex.html")
        || (name.starts_with("genindex-") && name.ends_with(".html"));
    generated && (abs.with_file_name("searchindex.js").is_file() || sphinx_marked(abs))
}

/// Whether a page carries the markup Sphinx gives its generated pages: the index
/// tables' classes, or the search page's script. Debian's packages drop
/// `searchindex.js` (bind9-doc's among them) but keep the pages.
fn sphinx_marked(abs: &Path) -> bool {
    const MARKS: [&[u8]; 3] = [b"genindextable", b"modindextable", b"searchtools.js"];
    let Ok(page) = std::fs::read(abs) else {
        return false;
    };
    MARKS
        .iter()
        .any(|mark| page.windows(mark.len()).any(|w| w == *mark))
}

/// `rel` without its last extension.
fn without_extension(rel: &str) -> &str {
    match rel.rfind('.') {
        Some(dot) if !rel[dot..].contains('/') => &rel[..dot],
        _ => rel,
    }
}

/// The page a text file would be the source of, as a relative path without extension,
/// if it is one by the way documentation generators lay their output: a Sphinx build
/// keeps every page's reStructuredText or Markdown in `_sources/` (`_sources/a/b.rst.txt`
/// for `a/b.html`), and Debian's git-doc, like many AsciiDoc builds, ships `git-add.txt`
/// beside `git-add.html`. Read twice, a page splits its hits (and citations) between two
/// copies, one of them in markup.
fn source_of_built_page(rel: &str) -> Option<String> {
    // Markdown beside an HTML page of its name is left alone: either may be the one a
    // person wrote (and the HTML may be unreadable).
    if DocKind::from_path(Path::new(rel))? != DocKind::Text {
        return None;
    }
    let stem = without_extension(rel);
    // Sphinx names a source `page.rst.txt` (`page.txt` before 1.5).
    let stem = [".rst", ".md", ".txt", ".ipynb"]
        .iter()
        .find_map(|ext| stem.strip_suffix(ext))
        .unwrap_or(stem);
    let page = match stem.split_once("_sources/") {
        Some((before, after)) if before.is_empty() || before.ends_with('/') => {
            format!("{before}{after}")
        }
        _ => stem.to_string(),
    };
    Some(page)
}

/// The root a file is recorded under: the ingested folder (canonical), or for a single
/// file its parent folder.
pub(super) fn root_key(root: &Path) -> Result<String> {
    let canon = root
        .canonicalize()
        .with_context(|| format!("cannot read {}", root.display()))?;
    let dir = if canon.is_file() {
        canon.parent().map(Path::to_path_buf).unwrap_or(canon)
    } else {
        canon
    };
    Ok(dir.to_string_lossy().to_string())
}

/// Whether a file is new or changed, by content hash (and its bytes when it is).
pub(super) fn check_file<T: DocumentLedger + ?Sized>(
    ledger: &mut T,
    root: &str,
    c: &Candidate,
    max_file_bytes: u64,
    force: bool,
) -> Result<Option<Work>> {
    let meta = std::fs::metadata(&c.abs).context("cannot read")?;
    // Before reading: a huge file must not be read into memory only to be refused.
    if meta.len() > max_file_bytes {
        anyhow::bail!(
            "too large ({} MB > {} MB limit)",
            meta.len() / 1_000_000,
            max_file_bytes / 1_000_000
        );
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let existing = ledger.document(root, &c.rel)?;
    let bytes = std::fs::read(&c.abs).context("cannot read")?;
    let hash = content_hash(&c.rel, &bytes);
    if let Some(doc) = existing.as_ref().filter(|_| !force) {
        if doc.hash == hash {
            if doc.mtime_ns != mtime_ns {
                ledger.touch(doc.id, mtime_ns)?;
            }
            return Ok(None);
        }
    }
    Ok(Some(Work {
        root: root.to_string(),
        rel: c.rel.clone(),
        abs: c.abs.clone(),
        bytes,
        hash,
        mtime_ns,
        existed: existing.is_some(),
        boilerplate: None,
    }))
}

/// A document's stored hash: of its bytes and the parser versions, so a parser change
/// re-ingests what it changes (a `-incomplete` suffix marks a document read in part).
pub fn content_hash(path: &str, bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PARSER_VERSION.to_le_bytes());
    // Hashed only once a kind has its own version, so other files keep their hashes.
    let kind = DocKind::from_path(Path::new(path)).map_or(0, kind_version);
    if kind > 0 {
        hasher.update(kind.to_le_bytes());
    }
    hasher.update(bytes);
    format!("{:x}", hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holding a file of a few bytes at each of `rels`.
    fn folder_of(rels: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for rel in rels {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "text").unwrap();
        }
        dir
    }

    #[test]
    fn a_pages_source_beside_its_built_page_is_left_out() {
        let dir = folder_of(&[
            "index.html",
            "_sources/index.rst.txt",
            "config/filters.html",
            "_sources/config/filters.rst.txt",
            "_sources/config/gone.rst.txt",
            "git-add.html",
            "git-add.txt",
            "guide.md",
            "guide.html",
            "notes.txt",
            "old/page.txt",
            "page.html",
        ]);
        let found = candidates(dir.path(), false);
        let files: Vec<&str> = found.files.iter().map(|c| c.rel.as_str()).collect();
        assert_eq!(
            files,
            [
                "_sources/config/gone.rst.txt",
                "config/filters.html",
                "git-add.html",
                "guide.html",
                "guide.md",
                "index.html",
                "notes.txt",
                "old/page.txt",
                "page.html",
            ]
        );
        assert_eq!(
            found.page_sources,
            [
                "_sources/config/filters.rst.txt",
                "_sources/index.rst.txt",
                "git-add.txt",
            ]
        );
    }

    #[test]
    fn a_sphinx_builds_index_and_search_pages_are_left_out() {
        let dir = folder_of(&[
            "lua/index.html",
            "lua/genindex.html",
            "lua/genindex-A.html",
            "lua/search.html",
            "lua/searchindex.js",
            // Without a Sphinx build beside them, pages of these names are read.
            "other/genindex.html",
            "other/search.html",
        ]);
        // Unless their markup is Sphinx's (Debian's packages drop `searchindex.js`).
        for (rel, page) in [
            (
                "debian/genindex.html",
                r#"<table class="indextable genindextable">"#,
            ),
            (
                "debian/search.html",
                r#"<script src="_static/searchtools.js"></script>"#,
            ),
        ] {
            std::fs::create_dir_all(dir.path().join("debian")).unwrap();
            std::fs::write(dir.path().join(rel), page).unwrap();
        }
        let found = candidates(dir.path(), false);
        let files: Vec<&str> = found.files.iter().map(|c| c.rel.as_str()).collect();
        assert_eq!(
            files,
            ["lua/index.html", "other/genindex.html", "other/search.html"]
        );
        assert_eq!(
            found.generated_pages,
            [
                "debian/genindex.html",
                "debian/search.html",
                "lua/genindex-A.html",
                "lua/genindex.html",
                "lua/search.html"
            ]
        );
    }

    #[test]
    fn a_kinds_own_parser_version_changes_only_its_files_hashes() {
        let global = |bytes: &[u8]| {
            let mut hasher = Sha256::new();
            hasher.update(PARSER_VERSION.to_le_bytes());
            hasher.update(bytes);
            format!("{:x}", hasher.finalize())
        };
        // Markdown has no version of its own: its hash is the one stored before.
        assert_eq!(content_hash("docs/a.md", b"# A"), global(b"# A"));
        assert_ne!(content_hash("guide.PDF", b"%PDF"), global(b"%PDF"));
        assert_eq!(
            content_hash("x/guide.pdf", b"%PDF"),
            content_hash("guide.PDF", b"%PDF")
        );
    }
}
