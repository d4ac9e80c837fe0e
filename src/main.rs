//! The `sextant` command line: parses, dispatches to `cli::*`, and maps errors to exit
//! codes. Each command's arguments and printing live in its own file under `cli/`.

mod cli;
mod mcp;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use sextant::kb::parse;
use sextant::llm;
use sextant::structured::StructuredError;

use cli::Ctx;

#[derive(Parser)]
#[command(
    name = "sextant",
    version,
    about = "Offline answers from your own documents"
)]
struct Cli {
    /// Model directory (default: $SEXTANT_MODELS, else <data dir>/sextant/models).
    #[arg(long, global = true, value_name = "DIR")]
    models: Option<PathBuf>,
    /// LLM to use, by name in the model store (default: the embedded Qwen2.5-Coder-0.5B;
    /// smollm2-135m-instruct is the small, fast one).
    #[arg(long, global = true, env = "SEXTANT_LLM", value_name = "NAME")]
    llm: Option<String>,
    /// CPU threads for the model (default: all cores).
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Manage the local model store.
    Models {
        #[command(subcommand)]
        command: cli::models::ModelsCommand,
    },
    /// Generate output that matches a JSON Schema, Lark grammar or regex.
    Generate(cli::generate::GenerateArgs),
    /// Add or update documents in a knowledge base (only new or changed files are embedded).
    Ingest(cli::ingest::IngestArgs),
    /// Search a knowledge base.
    Search(cli::kb::SearchArgs),
    /// Answer a question from a knowledge base, as a RAG or navigator JSON object.
    Ask(cli::ask::AskArgs),
    /// Hold a conversation in the terminal: follow-up questions are read with the earlier
    /// turns, and the conversation is kept in the knowledge base.
    Chat(cli::chat::ChatArgs),
    /// Jump to the section a question is about (the navigate_to_section tool call).
    Navigate(cli::ask::NavigateArgs),
    /// Route a workflow step from its forensic summary (rules first, the LLM last).
    Route(cli::route::RouteArgs),
    /// Serve the UI and the local HTTP API (protocol routes and OpenAI-compatible routes).
    Serve(cli::serve::ServeArgs),
    /// Serve the knowledge base to MCP clients (editors, agents) over stdio: tools search,
    /// ask, read_section, navigate_to_section; each document as a resource.
    Mcp(cli::mcp::McpArgs),
    /// Run an interview in the terminal (answers read line by line from stdin).
    Interview(cli::interview::InterviewArgs),
    /// Knowledge base information.
    Kb {
        #[command(subcommand)]
        command: cli::kb::KbCommand,
    },
    /// Run a labelled question set against a knowledge base and print its figures.
    Eval(cli::eval::EvalArgs),
    /// Benchmarks (figures, not pass/fail).
    Bench {
        #[command(subcommand)]
        command: cli::bench::BenchCommand,
    },
}

fn main() -> ExitCode {
    // A parse worker (see `kb::parse::worker`): hidden from the command line help.
    let raw: Vec<String> = std::env::args().collect();
    if raw.get(1).map(String::as_str) == Some(parse::worker::WORKER_ARG) {
        let code = parse::worker::run_worker(
            &raw[2..],
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
        );
        return ExitCode::from(code as u8);
    }
    let args = Cli::parse();
    llm::configure_threads(args.threads);
    llm::tune_allocator();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SEXTANT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let ctx = Ctx::new(args.models, args.llm);
    let result = match args.command {
        Command::Models { command } => cli::models::run(&ctx, command),
        Command::Generate(a) => cli::generate::run(&ctx, a),
        Command::Ingest(a) => cli::ingest::run(&ctx, a),
        Command::Search(a) => cli::kb::search(&ctx, a),
        Command::Ask(a) => cli::ask::ask(&ctx, a),
        Command::Chat(a) => cli::chat::run(&ctx, a),
        Command::Navigate(a) => cli::ask::navigate(&ctx, a),
        Command::Route(a) => cli::route::run(&ctx, a),
        Command::Serve(a) => cli::serve::run(&ctx, a),
        Command::Mcp(a) => cli::mcp::run(&ctx, a),
        Command::Interview(a) => cli::interview::run(&ctx, a),
        Command::Kb { command } => cli::kb::run(&ctx, command),
        Command::Eval(a) => cli::eval::run(&ctx, a),
        Command::Bench { command } => cli::bench::run(&ctx, command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if matches!(
                e.downcast_ref::<StructuredError>(),
                Some(StructuredError::Incomplete { .. } | StructuredError::BudgetTooSmall { .. })
            ) {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
