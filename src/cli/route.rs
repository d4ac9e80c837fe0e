//! `sextant route`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use sextant::service::{OpenOptions, Service};

use super::{Ctx, KbArg};

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
    let text = if args.forensics == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        s
    } else {
        std::fs::read_to_string(&args.forensics)
            .with_context(|| format!("cannot read {}", args.forensics))?
    };
    let svc = Service::open(
        &ctx.store,
        &OpenOptions {
            flow: args.flow,
            run_base: args.run_base,
            ..ctx.open_options(&KbArg::default())
        },
    )?;
    let routed = svc
        .route(&text, None)
        .with_context(|| format!("forensic summary {}", args.forensics))?;
    if args.explain {
        eprintln!("decided by: {}", routed.decision.decided_by);
        super::ask::explain(&routed.report)?;
        eprintln!("logged to {}", routed.log.display());
    }
    println!("{}", serde_json::to_string_pretty(&routed.decision)?);
    Ok(())
}
