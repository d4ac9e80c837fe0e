//! Sextant's engine: local models, grammar-constrained generation, knowledge bases, the
//! response-format protocols and the service the server and desktop shells call. Knows
//! nothing of Tauri, HTTP or terminals. See ARCHITECTURE.md for the map.

pub mod constrain;
pub mod embed;
pub mod eval;
pub mod jsonl;
pub mod kb;
pub mod llm;
pub mod models;
pub mod protocols;
pub mod schemas;
pub mod service;
pub mod stats;
pub mod structured;

/// Sextant's folder in the user's data directory (`~/.local/share/sextant` on Linux):
/// knowledge bases, models, decision logs, interviews and flows live under it, never
/// relative to the working directory.
pub fn data_dir() -> std::path::PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("sextant")
}
