//! `sextant ingest [--watch]`: the progress bar, the summary and the watch loop.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use std::time::Duration;

use sextant::kb::ingest::IngestReport;
use sextant::service::Service;

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
    let timeout = Duration::from_secs(args.parse_timeout.max(1));
    let svc = ctx.isolated_service(&args.kb, Some(timeout))?;
    run_ingest(&svc, &args.paths, args.images, args.json)?;
    if !args.watch {
        return Ok(());
    }
    watch(&svc, &args.paths, args.images, args.json)
}

pub fn run_ingest(
    svc: &Service,
    paths: &[PathBuf],
    images: bool,
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
    let report = svc.ingest(paths, images, &mut |p| {
        bar.set_length(p.total as u64);
        if let Some([read, of]) = p.pages_read {
            bar.set_message(format!(
                "reading {read}/{of} pages for blocks repeated across them"
            ));
        }
        if p.file.is_empty() {
            return;
        }
        chunks += p.chunks;
        let rate = chunks as f64 / start.elapsed().as_secs_f64().max(1e-3);
        let left = p.eta_s.map(time_left).unwrap_or_default();
        bar.set_message(format!("{chunks} chunks ({rate:.0}/s){left} {}", p.file));
        bar.set_position(p.done as u64);
    })?;
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {} added, {} changed, {} removed, {} unchanged, {} skipped; {} chunks embedded in {:.1} s",
            svc.kb_dir().display(),
            report.added.len(),
            report.changed.len(),
            report.removed.len(),
            report.unchanged,
            report.skipped.len(),
            report.chunks_embedded,
            report.seconds
        );
        if report.repeated_blocks > 0 {
            println!(
                "  left out {} copies of blocks repeated across a folder's pages (footers, copyright lines); one page keeps each",
                report.repeated_blocks
            );
        }
        if let Some(first) = report.page_sources.first() {
            println!(
                "  left out {} text sources of pages the folder also holds as HTML (such as {first}); the HTML pages are read",
                report.page_sources.len()
            );
        }
        if let Some(first) = report.generated_pages.first() {
            println!(
                "  left out {} pages the documentation generator builds from the others (such as {first}: an index of links, a search form)",
                report.generated_pages.len()
            );
        }
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

fn watch(svc: &Service, paths: &[PathBuf], images: bool, json: bool) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = sextant::kb::follow::follow(paths, move || {
        let _ = tx.send(());
    })?;
    if let Some((path, why)) = watcher.failed.first() {
        anyhow::bail!("cannot watch {}: {why}", path.display());
    }
    eprintln!("watching {} path(s); Ctrl-C to stop", paths.len());
    while rx.recv().is_ok() {
        run_ingest(svc, paths, images, json)?;
    }
    Ok(())
}

/// ", about 3 min left": an ingest's estimate, as rounded as it is reliable.
fn time_left(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!(", about {s} s left"),
        60..=5399 => format!(", about {} min left", (s + 30) / 60),
        _ => format!(", about {:.1} h left", s as f64 / 3600.0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_left_is_rounded_to_its_unit() {
        assert_eq!(super::time_left(12.4), ", about 12 s left");
        assert_eq!(super::time_left(150.0), ", about 3 min left");
        assert_eq!(super::time_left(9000.0), ", about 2.5 h left");
    }
}
