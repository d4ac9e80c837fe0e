//! `sextant serve`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use sextant::kb::parse::worker::Isolation;

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Address to listen on. Anything but loopback exposes your documents and models to
    /// the network: it needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Port (0 picks a free one; the address is printed on stderr).
    #[arg(long, default_value_t = 7878)]
    port: u16,
    /// Listen on a non-loopback --host.
    #[arg(long)]
    allow_remote: bool,
    /// Require `Authorization: Bearer TOKEN` on /api and /v1 (also SEXTANT_TOKEN).
    #[arg(long, env = "SEXTANT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Flow file used by the router console when a request names none (default: the
    /// built-in example flow "build"). Others are named by requests from
    /// <data dir>/sextant/flows/NAME.toml.
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    /// Where routing decision logs go: RUN_BASE/<flow>/routing/decisions.jsonl (default:
    /// <data dir>/sextant/runs).
    #[arg(long, value_name = "DIR")]
    run_base: Option<PathBuf>,
    /// Ingest these folders before serving (only new or changed files are embedded).
    #[arg(long, value_name = "DIR")]
    ingest: Vec<PathBuf>,
    /// Follow the knowledge base's folders while serving: a file added, changed or
    /// deleted there is ingested again within a second or so (the desktop app always
    /// follows; the Library turns it off per knowledge base).
    #[arg(long)]
    watch: bool,
}

pub fn run(ctx: &Ctx, args: ServeArgs) -> Result<()> {
    use sextant::service::{OpenOptions, Service};
    if !args.host.is_loopback() {
        if !args.allow_remote {
            bail!(
                "--host {} is not a loopback address: anyone on the network could read your \
                 documents; add --allow-remote and --token if that is what you want",
                args.host
            );
        }
        if args.token.is_none() {
            bail!(
                "--allow-remote needs --token (or SEXTANT_TOKEN): without one, anyone on the \
                 network could read your documents and drive the model"
            );
        }
        eprintln!(
            "warning: listening on {}, reachable from the network (token required)",
            args.host
        );
    }
    let svc = Service::open(
        &ctx.store,
        &OpenOptions {
            flow: args.flow,
            run_base: args.run_base,
            parse_isolation: Some(Isolation::current_exe()?),
            lazy_llm: false,
            watch: args.watch,
            ..ctx.open_options(&args.kb)
        },
    )?;
    if !args.ingest.is_empty() {
        super::ingest::run_ingest(&svc, &args.ingest, false, false)?;
    }
    let svc = svc.shared();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(crate::server::serve(
        svc,
        crate::server::ServeOptions {
            addr: std::net::SocketAddr::new(args.host, args.port),
            token: args.token,
        },
    ))
}
