//! The vector side of the store: the usearch index, its atomic saves, and the check that
//! chunks, vectors and the keyword index agree after a crash.

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::OptionalExtension;
use usearch::{IndexOptions, MetricKind, ScalarKind};

use super::{Consistency, Store, INDEX_FILE};

/// Candidates a vector search explores. usearch's default, 64, found 0.75 of the exact
/// ten nearest at 1 M synthetic chunks; 256 finds 0.96 (0.999 at 100 k) for 2 ms more
/// at p99 (`bench kb`, docs/PERFORMANCE.md).
pub const SEARCH_EXPANSION: usize = 256;
/// From this many vectors on, searches explore `LARGE_SEARCH_EXPANSION` candidates.
/// Real documentation is harder for the graph than `bench kb`'s synthetic chunks: at
/// 113 k chunks of six Debian doc packages, 256 found 0.96 of the exact ten nearest
/// (the synthetic 100 k: 0.998).
pub const LARGE_INDEX: usize = 50_000;
/// The expansion of a large index: 0.989 and 0.994 of the exact ten nearest for the two
/// eval sets' questions at 113 k real chunks (512: 0.973 and 0.986), for 1.5 ms more at
/// p50 (docs/PERFORMANCE.md).
pub const LARGE_SEARCH_EXPANSION: usize = 768;

/// The search expansion for an index of `vectors` vectors: recall falls as the graph
/// grows, so a larger index explores more.
pub fn search_expansion_for(vectors: usize) -> usize {
    if vectors >= LARGE_INDEX {
        LARGE_SEARCH_EXPANSION
    } else {
        SEARCH_EXPANSION
    }
}

pub(super) fn index_options(dim: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        // Set explicitly: the binding's default is BF16.
        quantization: ScalarKind::F16,
        connectivity: 0,
        expansion_add: 0,
        expansion_search: SEARCH_EXPANSION,
        multi: false,
    }
}

impl Store {
    pub(super) fn remove_vector(&mut self, key: u64) -> Result<()> {
        if self.index.contains(key) {
            self.index
                .remove(key)
                .map_err(|e| anyhow!("usearch remove: {e}"))?;
            self.dirty = true;
        }
        Ok(())
    }

    /// Adds (or replaces) vectors; in parallel on every core for large batches.
    pub(in crate::kb) fn add_vectors(&mut self, keys: &[u64], vectors: &[Vec<f32>]) -> Result<()> {
        use rayon::prelude::*;
        if let Some(v) = vectors.iter().find(|v| v.len() != self.dim) {
            bail!("vector of {} dimensions, expected {}", v.len(), self.dim);
        }
        let need = self.index.size() + keys.len();
        if need > self.index.capacity() {
            self.index
                .reserve_capacity_and_threads(
                    need.next_power_of_two().max(1024),
                    rayon::current_num_threads(),
                )
                .map_err(|e| anyhow!("usearch reserve: {e}"))?;
        }
        for k in keys {
            if self.index.contains(*k) {
                self.index.remove(*k).map_err(|e| anyhow!("usearch: {e}"))?;
            }
        }
        let index = &self.index;
        keys.par_iter()
            .zip(vectors.par_iter())
            .with_min_len(64)
            .try_for_each(|(k, v)| index.add(*k, v))
            .map_err(|e| anyhow!("usearch add: {e}"))?;
        self.dirty |= !keys.is_empty();
        self.index
            .change_expansion_search(search_expansion_for(self.index.size()));
        Ok(())
    }

    /// Writes the vector index if it changed: to a temp file, fsynced, then renamed over
    /// the old one, so a crash leaves either the old or the new file, never half of one.
    pub(super) fn save_index(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let path = self.dir.join(INDEX_FILE);
        // Per-process temp name: two processes saving at once each rename a whole file.
        let tmp = self
            .dir
            .join(format!("{INDEX_FILE}.{}.tmp", std::process::id()));
        self.index
            .save(tmp.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?)
            .map_err(|e| anyhow!("cannot write {}: {e}", tmp.display()))?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        self.dirty = false;
        Ok(())
    }

    /// Compares the chunks with the vectors; removes vectors whose chunk is gone and
    /// returns the chunks that have no vector.
    pub(in crate::kb) fn check(&mut self) -> Result<Consistency> {
        let mut stmt = self.conn.prepare("SELECT id FROM chunks")?;
        let ids: Vec<u64> = stmt
            .query_map([], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .map(|k| k as u64)
            .collect();
        drop(stmt);
        let missing: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|k| !self.index.contains(*k))
            .collect();
        let present = ids.len() - missing.len();
        let mut removed = 0;
        if self.index.size() > present {
            // usearch cannot list its keys, but every key ever used is a chunk rowid up to
            // the AUTOINCREMENT high-water mark: probe those that are no longer chunks.
            let max_key: i64 = self
                .conn
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'chunks'",
                    [],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or(0);
            let live: std::collections::HashSet<u64> = ids.iter().copied().collect();
            for k in 1..=max_key as u64 {
                if !live.contains(&k) && self.index.contains(k) {
                    self.remove_vector(k)?;
                    removed += 1;
                }
            }
        }
        Ok(Consistency {
            chunks: ids.len(),
            vectors: self.index.size(),
            missing_vectors: missing,
            orphan_vectors_removed: removed,
            keywords_pending: self.pending_keywords()?,
        })
    }
}

/// A dot product in eight lanes, so that it vectorizes (a plain sum is kept in order).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for (l, (p, q)) in lanes.iter_mut().zip(x.iter().zip(y)) {
            *l += p * q;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Exact nearest neighbours by brute force over f32 vectors offered one at a time: the
/// reference the index's recall is measured against (`bench kb`, tests), without keeping
/// the vectors.
pub struct ExactSearch {
    queries: Vec<Vec<f32>>,
    k: usize,
    /// Per query, its best (cosine, key) so far, best first.
    best: Vec<Vec<(f32, u64)>>,
}

impl ExactSearch {
    /// `queries` must be unit vectors, as the offered ones are.
    pub fn new(queries: Vec<Vec<f32>>, k: usize) -> Self {
        let best = vec![Vec::with_capacity(k + 1); queries.len()];
        ExactSearch { queries, k, best }
    }

    pub fn offer(&mut self, key: u64, vector: &[f32]) {
        for (q, best) in self.queries.iter().zip(&mut self.best) {
            let c = dot(q, vector);
            if best.len() == self.k && c <= best[self.k - 1].0 {
                continue;
            }
            let at = best.partition_point(|(b, _)| *b >= c);
            best.insert(at, (c, key));
            best.truncate(self.k);
        }
    }

    /// recall@k of the store's index: the share of the exact k nearest it returns.
    pub fn recall(&self, store: &Store) -> Result<f64> {
        Ok(self.recall_both(store)?.0)
    }

    /// recall@k, and the same with ties counted: a returned vector as near as the exact
    /// k-th counts, whichever key it has. Of equal vectors (a text repeated on two pages)
    /// the index and the exact search may each keep another key, which only the first
    /// figure counts as a miss. On 113 k chunks of real documentation the two differed by
    /// at most 0.001 (docs/PERFORMANCE.md).
    pub fn recall_both(&self, store: &Store) -> Result<(f64, f64)> {
        let (mut found, mut as_near, mut total) = (0usize, 0usize, 0usize);
        for (q, best) in self.queries.iter().zip(&self.best) {
            let got: Vec<u64> = store
                .dense(q, self.k)?
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            found += best.iter().filter(|(_, k)| got.contains(k)).count();
            let kth = best.last().map_or(f32::MIN, |(c, _)| *c);
            as_near += got
                .iter()
                .filter_map(|k| store.vector(*k))
                .filter(|v| dot(q, v) >= kth)
                .count()
                .min(best.len());
            total += best.len();
        }
        let total = total.max(1) as f64;
        Ok((found as f64 / total, as_near as f64 / total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_equal_vector_under_another_key_counts_only_with_ties() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 4, "test").unwrap();
        let a = vec![1.0, 0.0, 0.0, 0.0];
        let far = vec![0.0, 1.0, 0.0, 0.0];
        store
            .add_vectors(&[1, 3], &[a.clone(), far.clone()])
            .unwrap();
        // The exact search kept key 2, a copy of key 1's vector; the index returns key 1.
        let mut exact = ExactSearch::new(vec![a.clone()], 1);
        exact.offer(2, &a);
        exact.offer(3, &far);
        assert_eq!(exact.recall_both(&store).unwrap(), (0.0, 1.0));
        // A farther vector returned is not counted either way.
        let mut exact = ExactSearch::new(vec![far.clone()], 1);
        exact.offer(4, &far);
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 4, "test").unwrap();
        store.add_vectors(&[1], &[a]).unwrap();
        assert_eq!(exact.recall_both(&store).unwrap(), (0.0, 0.0));
    }

    #[test]
    fn a_large_index_searches_with_a_larger_expansion() {
        assert_eq!(search_expansion_for(0), SEARCH_EXPANSION);
        assert_eq!(search_expansion_for(LARGE_INDEX - 1), SEARCH_EXPANSION);
        assert_eq!(search_expansion_for(LARGE_INDEX), LARGE_SEARCH_EXPANSION);
        // A store sets it on open and again as vectors are added.
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 4, "test").unwrap();
        assert_eq!(store.index.expansion_search(), SEARCH_EXPANSION);
        store.set_search_expansion(64);
        store
            .add_vectors(
                &[1, 2],
                &[vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 1.0, 0.0, 0.0]],
            )
            .unwrap();
        assert_eq!(store.index.expansion_search(), SEARCH_EXPANSION);
    }
}
