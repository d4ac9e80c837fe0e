//! `sextant ingest [--watch]`: the progress bar, the summary and the watch loop.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use sextant::kb::ingest::{IngestEvent, IngestOptions, IngestReport};
use sextant::kb::KnowledgeBase;

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct IngestArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Keep running and re-ingest when files change.
    #[arg(long)]
    watch: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also read image files (PNG, JPEG, TIFF, …) with OCR (needs Tesseract). Off by
    /// default: diagrams and screenshots would add noise and take seconds each.
    #[arg(long)]
    images: bool,
    /// Longest time one file may take to parse; a file that takes longer is skipped.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    parse_timeout: u64,
    /// Folders or files to ingest (paths in the KB are relative to each).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(ctx: &Ctx, args: IngestArgs) -> Result<()> {
    let mut kb = ctx.open_kb(&args.kb)?;
    let mut opts = IngestOptions::isolated()?;
    opts.images = args.images;
    if let Some(iso) = opts.isolation.as_mut() {
        iso.timeout = std::time::Duration::from_secs(args.parse_timeout.max(1));
    }
    run_ingest(&mut kb, &args.paths, &opts, args.json)?;
    if !args.watch {
        return Ok(());
    }
    watch(&mut kb, &args.paths, &opts, args.json)
}

pub fn run_ingest(
    kb: &mut KnowledgeBase,
    paths: &[PathBuf],
    opts: &IngestOptions,
    json: bool,
) -> Result<IngestReport> {
    use indicatif::{ProgressBar, ProgressStyle};
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} files {per_sec} {msg}",
        )
        .unwrap(),
    );
    let start = std::time::Instant::now();
    let mut chunks = 0usize;
    let report = sextant::kb::ingest::ingest(kb, paths, opts, &mut |ev| match ev {
        IngestEvent::Found(n) => bar.inc_length(n as u64),
        IngestEvent::File { path, chunks: c } => {
            chunks += c;
            let rate = chunks as f64 / start.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!("{chunks} chunks ({rate:.0}/s) {path}"));
            bar.inc(1);
        }
    })?;
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {} added, {} changed, {} removed, {} unchanged, {} skipped; {} chunks embedded in {:.1} s",
            kb.store().dir().display(),
            report.added.len(),
            report.changed.len(),
            report.removed.len(),
            report.unchanged,
            report.skipped.len(),
            report.chunks_embedded,
            report.seconds
        );
        for (file, why) in &report.skipped {
            println!("  skipped {file}: {why}");
        }
        for (file, note) in &report.notes {
            println!("  in part {file}: {note}");
        }
        for file in &report.excluded {
            println!(
                "  left out {file}: removed from the KB (`sextant kb reindex {file}` restores it)"
            );
        }
    }
    Ok(report)
}

fn watch(
    kb: &mut KnowledgeBase,
    paths: &[PathBuf],
    opts: &IngestOptions,
    json: bool,
) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = sextant::kb::follow::follow(paths, move || {
        let _ = tx.send(());
    })?;
    if let Some((path, why)) = watcher.failed.first() {
        anyhow::bail!("cannot watch {}: {why}", path.display());
    }
    eprintln!("watching {} path(s); Ctrl-C to stop", paths.len());
    while rx.recv().is_ok() {
        run_ingest(kb, paths, opts, json)?;
    }
    Ok(())
}
