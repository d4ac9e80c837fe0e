//! `sextant route`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use sextant::protocols::routing::{self, Flow, ForensicSummary};

use super::Ctx;

#[derive(Args)]
pub struct RouteArgs {
    /// The flow file (TOML or JSON): steps, detour catalogue, limits, charter (default:
    /// the built-in example flow "build", examples/flow.toml).
    #[arg(long, value_name = "FLOW")]
    flow: Option<PathBuf>,
    /// Where decision logs go: RUN_BASE/<flow>/routing/decisions.jsonl (default:
    /// <data dir>/sextant/runs).
    #[arg(long, value_name = "DIR")]
    run_base: Option<PathBuf>,
    #[arg(long)]
    explain: bool,
    /// The forensic summary (JSON file), or - for stdin.
    forensics: String,
}

pub fn run(ctx: &Ctx, args: RouteArgs) -> Result<()> {
    let flow = match &args.flow {
        Some(path) => Flow::load(path)?,
        None => Flow::example(),
    };
    let text = if args.forensics == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        s
    } else {
        std::fs::read_to_string(&args.forensics)
            .with_context(|| format!("cannot read {}", args.forensics))?
    };
    let summary = ForensicSummary::parse(&text, &flow)
        .with_context(|| format!("forensic summary {}", args.forensics))?;
    let (decision, report) = ctx.finish(routing::prepare(&flow, &summary))?;
    let run_base = args
        .run_base
        .unwrap_or_else(|| sextant::data_dir().join("runs"));
    let log = routing::record(&run_base, &flow, &summary, &decision)?;
    if args.explain {
        eprintln!("decided by: {}", decision.decided_by);
        super::ask::explain(&report)?;
        eprintln!("logged to {}", log.display());
    }
    println!("{}", serde_json::to_string_pretty(&decision)?);
    Ok(())
}
