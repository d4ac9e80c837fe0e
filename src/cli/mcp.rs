//! `sextant mcp`.

use anyhow::Result;
use clap::Args;

use sextant::kb::parse::worker::Isolation;
use sextant::service::{OpenOptions, Service};

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    kb: KbArg,
}

pub fn run(ctx: &Ctx, args: McpArgs) -> Result<()> {
    // The knowledge base and the embedder open now (searches answer at once); the LLM is
    // verified now and loaded by the first request that needs it.
    let svc = Service::open(
        &ctx.store,
        &OpenOptions {
            parse_isolation: Some(Isolation::current_exe()?),
            ..ctx.open_options(&args.kb)
        },
    )?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(crate::mcp::serve_stdio(svc.shared()))
}
