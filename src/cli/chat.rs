//! `sextant chat`: a conversation in the terminal. Each line read is a question, answered
//! as `sextant ask` answers it but read with the conversation's earlier turns; the
//! conversation is kept in the KB (the desktop and `GET /api/conversations` list it).

use std::io::{BufRead, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use sextant::protocols::{AnswerFormat, AnswerMode};
use sextant::service::{AskParams, Request, Service};

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct ChatArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Continue this conversation (an id from `/list`); default: a new one.
    #[arg(long)]
    conversation: Option<String>,
    /// The response format (default: rag).
    #[arg(long, value_enum)]
    format: Option<AnswerFormat>,
    /// How the answer text is made (default: reader when the LLM is pulled, else
    /// extractive).
    #[arg(long, value_enum)]
    mode: Option<AnswerMode>,
    /// Print each answer as one JSON line (the `POST /api/ask` response) instead of text.
    #[arg(long)]
    json: bool,
}

const HELP: &str = "Ask a question, then follow it up (\"and how do I undo that?\"). \
Commands: /new starts a new conversation, /list lists them, /open ID continues one, \
/export FILE writes this one as Markdown, /quit (or end of input) stops.";

pub fn run(ctx: &Ctx, args: ChatArgs) -> Result<()> {
    let svc = ctx.service(&args.kb)?;
    svc.require_chunks()?;
    let mut conversation = args.conversation.clone();
    if let Some(id) = &conversation {
        svc.handle(Request::Conversation { id: id.clone() })?;
    }
    let interactive = !args.json;
    if interactive {
        eprintln!("{HELP}");
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            std::io::stderr().flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
            match name {
                "quit" | "exit" => break,
                "new" => {
                    conversation = None;
                    eprintln!("(a new conversation starts with the next question)");
                }
                "list" => list(&svc)?,
                "open" => {
                    let id = rest.trim().to_string();
                    match svc.handle(Request::Conversation { id: id.clone() }) {
                        Ok(v) => {
                            eprintln!("continuing {id}: {}", v["conversation"]["title"]);
                            conversation = Some(id);
                        }
                        Err(e) => eprintln!("error: {e}"),
                    }
                }
                "export" => export(&svc, conversation.as_deref(), rest.trim())?,
                _ => eprintln!("{HELP}"),
            }
            continue;
        }
        let params = AskParams {
            question: line.to_string(),
            format: args.format,
            mode: args.mode,
            conversation: Some(conversation.clone().unwrap_or_else(|| "new".into())),
            ..AskParams::default()
        };
        let answer = match svc.ask_watched(params, &mut |_| {}, Arc::new(AtomicBool::new(false))) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("error: {e}");
                continue;
            }
        };
        conversation = answer["conversation"].as_str().map(str::to_string);
        if args.json {
            println!("{answer}");
        } else {
            print_answer(&answer);
        }
        std::io::stdout().flush()?;
    }
    Ok(())
}

fn print_answer(answer: &Value) {
    let r = &answer["response"];
    let text = r["final_answer"].as_str().or(r["answer"].as_str());
    println!("{}", text.unwrap_or_default().trim());
    let sources: Vec<&str> = answer["citations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["label"].as_str())
        .collect();
    if !sources.is_empty() {
        println!("Sources: {}", sources.join("; "));
    }
    let follow_up = answer["decision"]
        .as_str()
        .is_some_and(|d| d.starts_with("Read as a follow-up"));
    if let Some(q) = answer["standalone"].as_str().filter(|_| follow_up) {
        eprintln!("(read as: {q})");
    }
    println!();
}

fn list(svc: &Service) -> Result<()> {
    let v = svc.handle(Request::Conversations)?;
    for c in v["conversations"].as_array().into_iter().flatten() {
        println!(
            "{}  {:>3} turns  {}  {}",
            c["id"].as_str().unwrap_or_default(),
            c["turns"],
            c["updated"].as_str().unwrap_or_default(),
            c["title"].as_str().unwrap_or_default()
        );
    }
    Ok(())
}

fn export(svc: &Service, conversation: Option<&str>, file: &str) -> Result<()> {
    let Some(id) = conversation else {
        eprintln!("nothing to export yet: ask a question first");
        return Ok(());
    };
    let v = svc.handle(Request::ExportConversation { id: id.into() })?;
    let md = v["markdown"].as_str().unwrap_or_default();
    if file.is_empty() {
        print!("{md}");
    } else {
        std::fs::write(file, md)?;
        eprintln!("wrote {file}");
    }
    Ok(())
}
