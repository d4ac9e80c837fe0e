//! `sextant search` and `sextant kb stats|list|remove|reindex`.

use anyhow::Result;
use clap::{Args, Subcommand};

use sextant::kb::search::SearchMode;
use sextant::service::DocumentList;

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct SearchArgs {
    #[command(flatten)]
    kb: KbArg,
    #[arg(short, default_value_t = 5)]
    k: usize,
    #[arg(long, value_enum, default_value_t = SearchMode::Hybrid)]
    mode: SearchMode,
    #[arg(long)]
    json: bool,
    query: String,
}

#[derive(Subcommand)]
pub enum KbCommand {
    /// Documents, sections, chunks, vectors, size, and whether the stores agree.
    Stats {
        #[command(flatten)]
        kb: KbArg,
        #[arg(long)]
        json: bool,
    },
    /// The documents (path, format, title, chunks) and those removed.
    List {
        #[command(flatten)]
        kb: KbArg,
        #[arg(long)]
        json: bool,
    },
    /// Remove one document (a path as `kb list` shows it); ingesting its folder again
    /// leaves it out until `kb reindex` restores it.
    Remove {
        #[command(flatten)]
        kb: KbArg,
        path: String,
    },
    /// Read, parse and embed one document again, even if unchanged (restores a removed one).
    Reindex {
        #[command(flatten)]
        kb: KbArg,
        path: String,
    },
}

pub fn search(ctx: &Ctx, args: SearchArgs) -> Result<()> {
    let svc = ctx.service(&args.kb)?;
    let hits = svc.search(&args.query, args.k, Some(args.mode))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "hits": hits }))?
        );
        return Ok(());
    }
    if hits.is_empty() {
        println!("no results (is the knowledge base empty? see `sextant kb stats`)");
    }
    for (i, h) in hits.iter().enumerate() {
        let page = h.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        println!(
            "{}. [{:.3}] {}{} § {}  ({})",
            i + 1,
            h.score,
            h.file,
            page,
            h.section_path.join(" > "),
            h.id
        );
        let snippet: String = h.text.chars().take(200).collect();
        println!("   {}", snippet.replace('\n', " "));
    }
    Ok(())
}

pub fn run(ctx: &Ctx, command: KbCommand) -> Result<()> {
    match command {
        KbCommand::Stats { kb, json } => stats(ctx, &kb, json),
        KbCommand::List { kb, json } => {
            let DocumentList { documents, removed } = ctx.service(&kb)?.documents()?;
            if json {
                let out = serde_json::json!({"documents": documents, "removed": removed});
                println!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            for d in &documents {
                println!(
                    "{:<48} {:<5} {:>5} chunks  {}",
                    d.path, d.kind, d.chunks, d.title
                );
            }
            for p in &removed {
                println!("{p:<48} removed (sextant kb reindex restores it)");
            }
            Ok(())
        }
        KbCommand::Remove { kb, path } => {
            ctx.service(&kb)?.remove_document(&path)?;
            println!("removed {path}; ingesting its folder leaves it out until `sextant kb reindex {path}`");
            Ok(())
        }
        KbCommand::Reindex { kb, path } => {
            let report = ctx.isolated_service(&kb, None)?.reindex_document(&path)?;
            if let Some((file, why)) = report.skipped.first() {
                anyhow::bail!("{file}: {why}");
            }
            println!("re-indexed {path}: {} chunks", report.chunks_embedded);
            Ok(())
        }
    }
}

fn stats(ctx: &Ctx, kb: &KbArg, json: bool) -> Result<()> {
    let stats = ctx.service(kb)?.kb_stats()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(());
    }
    println!("knowledge base  {}", stats.path.display());
    println!("documents       {}", stats.documents);
    println!("sections        {}", stats.sections);
    println!("chunks          {}", stats.chunks);
    println!("vectors         {}", stats.vectors);
    println!("size on disk    {:.1} MB", stats.bytes_on_disk as f64 / 1e6);
    println!("embedder        {}", stats.embedder);
    println!(
        "consistent      {}",
        if stats.consistent {
            "yes"
        } else {
            "NO (reopen to repair)"
        }
    );
    Ok(())
}
