//! What the test crates on the real MiniLM share: the embedder, loaded once per crate,
//! and the sample KB's folder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sextant::embed::Embedder;
use sextant::models::{ModelStore, Role};

pub fn embedder() -> Arc<Embedder> {
    static E: OnceLock<Arc<Embedder>> = OnceLock::new();
    E.get_or_init(|| {
        let m = ModelStore::open(None)
            .resolve(Role::Embedding, None)
            .unwrap_or_else(|e| panic!("{e}"));
        Arc::new(Embedder::load(&m).unwrap())
    })
    .clone()
}

pub fn sample_kb() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kb")
}
