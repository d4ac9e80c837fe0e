//! Ingest through the service: a folder or file added with progress, the KB held only to
//! check and commit each file.

use std::path::{Path, PathBuf};

use super::{Service, ServiceError};
use crate::kb::ingest::{Eta, IngestOptions, IngestReport, IngestRun, Work, PREPARE_GROUP};
use crate::kb::lock::WriterLock;

/// One file done (embedded, unchanged or skipped) of `total`, with the chunks it added;
/// the first report (`done` 0, no file) gives the total.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestProgress<'a> {
    pub done: usize,
    pub total: usize,
    pub file: &'a str,
    pub chunks: usize,
    /// Seconds left at the rate so far (by bytes); None for the first seconds.
    pub eta_s: Option<f64>,
    /// Before the first file: pages read of pages to read, as the blocks repeated across
    /// them are counted (`kb::ingest::boilerplate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_read: Option<[usize; 2]>,
}

impl Service {
    /// The folder an ingest request means (`None`: the one ingested last), checked to
    /// exist, absolute.
    pub fn ingest_target(&self, path: Option<&Path>) -> Result<PathBuf, ServiceError> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => self.last_ingested().ok_or_else(|| {
                ServiceError::BadRequest("missing field: path (the folder to add)".into())
            })?,
        };
        if !path.exists() {
            return Err(ServiceError::NotFound(format!(
                "{}: no such file or folder on the machine running sextant",
                path.display()
            )));
        }
        path.canonicalize()
            .map_err(|e| ServiceError::BadRequest(format!("{}: {e}", path.display())))
    }

    /// Ingests folders or files (each checked as `ingest_target` does; `images`: image
    /// files too, with OCR), reporting each file as it is done.
    pub fn ingest(
        &self,
        paths: &[PathBuf],
        images: bool,
        on_progress: &mut dyn FnMut(IngestProgress),
    ) -> Result<IngestReport, ServiceError> {
        let paths = paths
            .iter()
            .map(|p| self.ingest_target(Some(p)))
            .collect::<Result<Vec<_>, _>>()?;
        let opts = IngestOptions {
            isolation: self.config.parse_isolation.clone(),
            images,
            ..IngestOptions::default()
        };
        // The writer lock is taken under the KB's mutex, so the open KB cannot change while
        // this run holds it (see `kbs`). The KB itself is held only to check and to commit
        // each file, never while a file is parsed and embedded, so searches and reads go
        // on during an ingest.
        let writer = WriterLock::try_acquire(self.kb().store().dir())
            .map_err(|e| ServiceError::KbBusy(e.to_string()))?;
        let mut run = IngestRun::with_lock(writer, &paths, &opts)?;
        let tok = self.embedder.counting_tokenizer();
        let total = run.files.len();
        let mut eta = Eta::new(run.files.iter().map(|f| f.candidate.bytes).sum());
        let start = |pages_read| IngestProgress {
            done: 0,
            total,
            file: "",
            chunks: 0,
            eta_s: None,
            pages_read,
        };
        on_progress(start(None));
        // Every HTML page is read once to count the blocks repeated across them, before
        // the first file (minutes for tens of thousands of pages): that is reported too.
        let (tx, rx) = std::sync::mpsc::channel::<[usize; 2]>();
        std::thread::scope(|scope| {
            let counting = scope.spawn(|| {
                let tx = tx;
                run.count_repeated_blocks(&|read, of| {
                    let _ = tx.send([read, of]);
                });
            });
            for read in rx {
                on_progress(start(Some(read)));
            }
            counting
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        });
        let indices: Vec<usize> = (0..total).collect();
        for group in indices.chunks(PREPARE_GROUP) {
            let mut chunks = vec![0; group.len()];
            let mut works = Vec::new();
            for (slot, &i) in group.iter().enumerate() {
                if let Some(work) = run.check(&mut self.kb(), i) {
                    works.push((slot, work));
                }
            }
            let (slots, works): (Vec<usize>, Vec<Work>) = works.into_iter().unzip();
            let prepared = Work::prepare_group(works, &self.embedder, &tok, &opts);
            for (slot, p) in slots.into_iter().zip(prepared) {
                chunks[slot] = run.commit(&mut self.kb(), p)?;
            }
            for (slot, &i) in group.iter().enumerate() {
                let file = &run.files[i].candidate;
                on_progress(IngestProgress {
                    done: i + 1,
                    total,
                    file: &file.rel,
                    chunks: chunks[slot],
                    eta_s: eta.file_done(file.bytes),
                    pages_read: None,
                });
            }
        }
        let report = run.finish(&mut self.kb())?;
        *self.last_ingested.lock().unwrap_or_else(|p| p.into_inner()) = paths.last().cloned();
        // A new folder is followed from now on.
        self.refresh_live();
        Ok(report)
    }

    pub fn last_ingested(&self) -> Option<PathBuf> {
        self.last_ingested
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
