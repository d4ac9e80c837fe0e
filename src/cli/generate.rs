//! `sextant generate`: output under a JSON Schema, Lark grammar or regex.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;

use sextant::constrain::bounds::Bounds;
use sextant::llm::chat_template::Message;
use sextant::llm::sampling::SamplingParams;
use sextant::llm::Llm;
use sextant::structured::{self, OutputSpec, StructuredRequest};

use super::Ctx;

#[derive(Args)]
pub struct GenerateArgs {
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
    /// Token budget (default: 1024, raised up to 4096 for a schema whose required
    /// structure needs more; `--explain` says which).
    #[arg(long)]
    max_tokens: Option<usize>,
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

pub fn run(ctx: &Ctx, args: GenerateArgs) -> Result<()> {
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
    let mut llm = ctx.load_llm()?;
    let mut messages = Vec::new();
    if let Some(s) = &system {
        messages.push(Message::new("system", s));
    }
    messages.push(Message::new("user", prompt.as_deref().unwrap_or_default()));
    let bounds = Bounds {
        max_string_len: args.max_string_len,
        max_item_string_len: args.max_item_string_len,
        max_items: args.max_items,
        ..Bounds::default()
    };
    let max_tokens = match (&output, args.max_tokens) {
        (_, Some(n)) => n,
        (OutputSpec::JsonSchema(schema), None) => {
            let n = structured::default_budget(schema, &bounds);
            if args.explain && n > structured::DEFAULT_MAX_TOKENS {
                eprintln!("budget: {n} tokens (the default {} raised: this schema's required structure needs more)", structured::DEFAULT_MAX_TOKENS);
            }
            n
        }
        (_, None) => structured::DEFAULT_MAX_TOKENS,
    };
    let req = StructuredRequest {
        messages,
        output,
        max_tokens,
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
        bounds,
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

pub fn explain(llm: &Llm, out: &structured::StructuredOutput) {
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
        if !b.narrowed.is_empty() {
            eprintln!("the grammar's copy narrowed so that the output ends (still valid):");
            for n in &b.narrowed {
                eprintln!("  {n}");
            }
        }
        match b.worst_case_chars {
            Some(w) => eprintln!("longest output the bounded schema admits: {w} characters"),
            None => eprintln!("longest output: unbounded (only --max-tokens stops it)"),
        }
    }
    let masks = out.mask_us.len();
    let mean = sextant::stats::mean(&out.mask_us);
    let p99 = sextant::stats::percentile(out.mask_us.clone(), 0.99);
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
        out.compile_ms, masks, mean, p99
    );
    if !out.approximations.is_empty() {
        eprintln!("the grammar could not enforce exactly (checked by validation instead):");
        for a in &out.approximations {
            eprintln!("  {a}");
        }
    }
    if out.value.is_some() {
        eprintln!(
            "validation: parsed and valid against the full schema (jsonschema crate){}",
            if out.attempts > 1 {
                format!(", after {} tries", out.attempts)
            } else {
                String::new()
            }
        );
    }
}
