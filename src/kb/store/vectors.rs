//! The vector side of the store: the usearch index, its atomic saves, and the check that
//! chunks and vectors agree after a crash.

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::OptionalExtension;
use usearch::{IndexOptions, MetricKind, ScalarKind};

use super::{Consistency, Store, INDEX_FILE};

pub(super) fn index_options(dim: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        // Set explicitly: the binding's default is BF16.
        quantization: ScalarKind::F16,
        connectivity: 0,
        expansion_add: 0,
        expansion_search: 0,
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
        Ok(())
    }

    /// Writes the vector index if it changed: to a temp file, fsynced, then renamed over
    /// the old one, so a crash leaves either the old or the new file, never half of one.
    pub(in crate::kb) fn save_index(&mut self) -> Result<()> {
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
        })
    }
}
