//! `sextant search` and `sextant kb stats`.

use anyhow::Result;
use clap::{Args, Subcommand};

use sextant::kb::search::SearchMode;

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
}

pub fn search(ctx: &Ctx, args: SearchArgs) -> Result<()> {
    let kb = ctx.open_kb(&args.kb)?;
    let hits = sextant::kb::search::search(&kb, &args.query, args.k, args.mode)?;
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
    let KbCommand::Stats { kb, json } = command;
    let mut kb = ctx.open_kb(&kb)?;
    let stats = kb.stats()?;
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
