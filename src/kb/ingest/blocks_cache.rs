//! Each page's block fingerprints (`boilerplate`), kept in the KB's folder between
//! ingests with the content hash they were made from, and a run's pages counted through
//! it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::boilerplate::{fingerprints, Boilerplate, Page};
use super::{content_hash, IngestOptions, IngestRun};
use crate::kb::parse::ParsedDoc;

/// The file in a KB's folder that keeps each page's block fingerprints between ingests,
/// with the content hash they were made from: a run over a folder where little changed
/// (a live sync, a resumed ingest) parses only the pages that did.
pub const PAGE_BLOCKS: &str = "page-blocks.bin";

/// What `PAGE_BLOCKS` starts with; a change to what a fingerprint is changes it.
const PAGE_BLOCKS_MAGIC: &[u8; 8] = b"sxblk002";

/// A page's entry: (root, path) → (content hash, sorted fingerprints).
type Entries = HashMap<(String, String), (String, Vec<u64>)>;

/// `PAGE_BLOCKS` as read, and the pages of this run as they are found.
pub struct BlocksCache {
    known: Entries,
    seen: std::sync::Mutex<Entries>,
}

impl BlocksCache {
    /// The cache in `dir` (empty when there is none or it cannot be read as one).
    pub fn open(dir: &Path) -> BlocksCache {
        let known = std::fs::read(dir.join(PAGE_BLOCKS))
            .ok()
            .and_then(|b| decode(&b))
            .unwrap_or_default();
        BlocksCache {
            known,
            seen: Default::default(),
        }
    }

    /// A page's fingerprints: cached under the same content hash, or from `parse` (then
    /// kept). None when the page cannot be parsed.
    pub fn get(
        &self,
        page: &Page<'_>,
        hash: &str,
        parse: impl FnOnce() -> Option<ParsedDoc>,
    ) -> Option<HashSet<u64>> {
        let key = (page.root.to_string(), page.rel.to_string());
        let set: HashSet<u64> = match self.known.get(&key) {
            Some((h, v)) if h == hash => v.iter().copied().collect(),
            _ => fingerprints(&parse()?),
        };
        let mut sorted: Vec<u64> = set.iter().copied().collect();
        sorted.sort_unstable();
        self.seen
            .lock()
            .unwrap()
            .insert(key, (hash.to_string(), sorted));
        Some(set)
    }

    /// The pages under `root` as the last ingest found them (path and blocks), whatever
    /// their files hold now: the folder that re-indexing one of its pages counts in.
    pub fn pages_under(&self, root: &str) -> Vec<(String, HashSet<u64>)> {
        self.known
            .iter()
            .filter(|((r, _), _)| r == root)
            .map(|((_, rel), (_, blocks))| (rel.clone(), blocks.iter().copied().collect()))
            .collect()
    }

    /// Writes the cache to `dir`: this run's pages, and the earlier ones except those
    /// under `walked` (roots whose whole folder this run listed, so a page of theirs not
    /// seen is gone). Written whole under a per-process name, then renamed; a folder that
    /// cannot be written to only loses the cache.
    pub fn save(self, dir: &Path, walked: &[&str]) {
        let seen = self.seen.into_inner().unwrap();
        let mut all: Entries = self
            .known
            .iter()
            .filter(|((root, _), _)| !walked.contains(&root.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        all.extend(seen);
        if all == self.known {
            return;
        }
        let mut entries: Vec<_> = all.iter().collect();
        entries.sort();
        let mut bytes = PAGE_BLOCKS_MAGIC.to_vec();
        let mut put = |b: &[u8]| {
            bytes.extend((b.len() as u32).to_le_bytes());
            bytes.extend(b);
        };
        for ((root, rel), (hash, blocks)) in entries {
            put(root.as_bytes());
            put(rel.as_bytes());
            put(hash.as_bytes());
            put(&blocks
                .iter()
                .flat_map(|b| b.to_le_bytes())
                .collect::<Vec<u8>>());
        }
        let tmp = dir.join(format!("{PAGE_BLOCKS}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, &bytes)
            .and_then(|()| std::fs::rename(&tmp, dir.join(PAGE_BLOCKS)))
            .is_err()
        {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// `PAGE_BLOCKS`'s entries; None for a file that is not one.
fn decode(bytes: &[u8]) -> Option<Entries> {
    let mut rest = bytes.strip_prefix(PAGE_BLOCKS_MAGIC.as_slice())?;
    let mut field = || -> Option<Option<&[u8]>> {
        if rest.is_empty() {
            return Some(None);
        }
        let (len, tail) = rest.split_at_checked(4)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let (value, tail) = tail.split_at_checked(len)?;
        rest = tail;
        Some(Some(value))
    };
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
    let mut out = Entries::new();
    while let Some(root) = field()? {
        let rel = field()??;
        let hash = field()??;
        let blocks = field()??;
        if blocks.len() % 8 != 0 {
            return None;
        }
        let blocks = blocks
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        out.insert((text(root)?, text(rel)?), (text(hash)?, blocks));
    }
    Some(out)
}

impl IngestRun {
    /// Counts the repeated blocks of the run's pages: every page, changed or not, so that
    /// a run resumed after a stop leaves out what an uninterrupted one would. Pages parsed
    /// before are looked up by content hash in the KB folder's cache.
    pub(super) fn learn_boilerplate(
        &self,
        dir: &Path,
        opts: &IngestOptions,
        on_read: &(dyn Fn(usize, usize) + Sync),
    ) -> Boilerplate {
        let pages: Vec<Page<'_>> = self
            .files
            .iter()
            .filter(|f| f.candidate.bytes <= self.max_file_bytes)
            .map(|f| Page {
                root: &f.root,
                rel: &f.candidate.rel,
                abs: &f.candidate.abs,
            })
            .collect();
        let cache = BlocksCache::open(dir);
        let blocks = |page: &Page<'_>| {
            let bytes = std::fs::read(page.abs).ok()?;
            let hash = content_hash(page.rel, &bytes);
            cache.get(page, &hash, || {
                super::prepare::parse_file(page.abs, &bytes, opts).ok()
            })
        };
        let found = Boilerplate::learn(&pages, &blocks, on_read);
        let walked: Vec<&str> = self
            .roots
            .iter()
            .filter(|(_, is_dir)| *is_dir)
            .map(|(root, _)| root.as_str())
            .collect();
        cache.save(dir, &walked);
        found
    }

    /// `learn_boilerplate` for a run over one page (`for_document`): its folder's other
    /// pages counted as the cache has them from the last ingest, so the page loses what
    /// it lost then.
    pub(super) fn learn_boilerplate_of_one(&self, opts: &IngestOptions) -> Boilerplate {
        let dir = self.writer.dir();
        let cache = BlocksCache::open(dir);
        let [file] = &self.files[..] else {
            return Boilerplate::default();
        };
        let others: HashMap<String, HashSet<u64>> = cache
            .pages_under(&file.root)
            .into_iter()
            .filter(|(rel, _)| *rel != file.candidate.rel)
            .collect();
        let paths: Vec<(String, PathBuf)> = others
            .keys()
            .map(|rel| (rel.clone(), Path::new(&file.root).join(rel)))
            .chain([(file.candidate.rel.clone(), file.candidate.abs.clone())])
            .collect();
        let pages: Vec<Page<'_>> = paths
            .iter()
            .map(|(rel, abs)| Page {
                root: &file.root,
                rel,
                abs,
            })
            .collect();
        let blocks = |page: &Page<'_>| match others.get(page.rel) {
            Some(blocks) => Some(blocks.clone()),
            None => {
                let bytes = std::fs::read(page.abs).ok()?;
                let hash = content_hash(page.rel, &bytes);
                cache.get(page, &hash, || {
                    super::prepare::parse_file(page.abs, &bytes, opts).ok()
                })
            }
        };
        let found = Boilerplate::learn(&pages, &blocks, &|_, _| {});
        cache.save(dir, &[]);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::ingest::boilerplate::tests::page;

    #[test]
    fn the_cache_parses_a_page_again_only_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let doc = page("A block of enough words to count.");
        let at = |root: &'static str, rel: &'static str| Page {
            root,
            rel,
            abs: Path::new(rel),
        };
        let cache = BlocksCache::open(dir.path());
        let first = cache.get(&at("/a", "x.html"), "h1", || Some(doc.clone()));
        assert_eq!(first.as_ref().map(HashSet::len), Some(1));
        assert!(cache
            .get(&at("/a", "y.html"), "h2", || Some(doc.clone()))
            .is_some());
        assert!(cache
            .get(&at("/b", "z.html"), "h3", || Some(doc.clone()))
            .is_some());
        cache.save(dir.path(), &["/a", "/b"]);

        let cache = BlocksCache::open(dir.path());
        // Same hash: from the cache, not parsed.
        assert_eq!(cache.get(&at("/a", "x.html"), "h1", || None), first);
        // Changed: parsed again.
        assert_eq!(cache.get(&at("/a", "y.html"), "h9", || None), None);
        // /a was walked and y.html could not be parsed: only x.html of /a stays; /b was
        // not walked, so z.html stays.
        cache.save(dir.path(), &["/a"]);
        let cache = BlocksCache::open(dir.path());
        assert_eq!(cache.get(&at("/b", "z.html"), "h3", || None), first);
        assert_eq!(cache.get(&at("/a", "y.html"), "h2", || None), None);

        // A file that is not a cache is ignored.
        std::fs::write(dir.path().join(PAGE_BLOCKS), b"sxblk002\x05\0\0").unwrap();
        assert!(BlocksCache::open(dir.path()).known.is_empty());
    }
}
