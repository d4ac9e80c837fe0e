//! `sextant-desktop`: the Tauri window over the engine. Commands are thin wrappers over
//! `sextant::service::Service` (the same calls the HTTP server makes), so the UI in `ui/`
//! gets the same JSON from `invoke` as from `fetch`. Long work runs on blocking threads;
//! ingest progress arrives as events.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use serde_json::{json, Value};
use sextant::service::{OpenOptions, Service};
use tauri::{Emitter, State};

#[derive(Parser)]
#[command(
    name = "sextant-desktop",
    about = "Sextant: offline answers from your own documentation"
)]
struct Args {
    /// Knowledge base: a folder path, or a name under <data dir>/sextant/kb.
    #[arg(long, value_name = "DIR|NAME")]
    kb: Option<String>,
    /// LLM by name in the model store.
    #[arg(long, value_name = "NAME")]
    llm: Option<String>,
    /// Flow for the router console.
    #[arg(long, default_value = "examples/flow.toml")]
    flow: PathBuf,
    /// Where routing decision logs go.
    #[arg(long, value_name = "DIR", default_value = "runs")]
    run_base: PathBuf,
}

/// The engine, or why it could not start (missing models, unreadable KB): the window
/// opens either way and the UI shows the error, which names the fix, in its banner.
struct Engine(Result<Arc<Service>, String>);

impl Engine {
    fn get(&self) -> Result<Arc<Service>, Value> {
        self.0.clone().map_err(|message| {
            json!({"error": {"message": message, "type": "server_error", "code": "not_ready"}})
        })
    }
}

fn task_failed(e: impl std::fmt::Display) -> Value {
    json!({"error": {"message": format!("the request's task failed: {e}"), "type": "server_error"}})
}

/// With SEXTANT_DESKTOP_TRACE set, one stderr line per command and its outcome: the
/// desktop test reads them to know each click reached the engine.
fn trace(what: &str, result: &Result<Value, sextant::service::ApiError>) {
    if std::env::var_os("SEXTANT_DESKTOP_TRACE").is_some() {
        match result {
            Ok(_) => eprintln!("{what} -> ok"),
            Err(e) => eprintln!("{what} -> {}", e.status),
        }
    }
}

/// Every protocol route of docs/API.md, as `invoke("api", {method, path, body})`.
#[tauri::command]
async fn api(
    engine: State<'_, Engine>,
    method: String,
    path: String,
    body: Option<Value>,
) -> Result<Value, Value> {
    let svc = engine.get()?;
    tauri::async_runtime::spawn_blocking(move || {
        let r = svc.call(&method, &path, body.as_ref());
        // The desktop smoke test reads this to know the UI reached the engine.
        if std::env::var_os("SEXTANT_DESKTOP_TRACE").is_some() {
            let outcome = match &r {
                Ok(_) => "ok".to_string(),
                Err(e) => format!("{}", e.status),
            };
            eprintln!(
                "api {method} {} -> {outcome}",
                path.split('?').next().unwrap_or("")
            );
        }
        r.map_err(|e| e.body())
    })
    .await
    .map_err(task_failed)?
}

/// Ingests a folder; progress as `ingest://progress`, then `ingest://done` or
/// `ingest://error` (the same payloads as the server's event stream).
#[tauri::command]
async fn ingest(
    app: tauri::AppHandle,
    engine: State<'_, Engine>,
    path: Option<String>,
) -> Result<Value, Value> {
    let svc = engine.get()?;
    tauri::async_runtime::spawn_blocking(move || {
        let path = match path.filter(|p| !p.trim().is_empty()) {
            Some(p) => PathBuf::from(p.trim()),
            None => svc.last_ingested().ok_or_else(|| {
                json!({"error": {"message": "missing field: path (the folder to add)", "type": "invalid_request_error"}})
            })?,
        };
        let result = svc.ingest(&path, &mut |done, total, file| {
            let _ = app.emit(
                "ingest://progress",
                json!({"done": done, "total": total, "file": file}),
            );
        });
        trace("ingest", &result);
        match result {
            Ok(v) => {
                let _ = app.emit("ingest://done", v.clone());
                Ok(v)
            }
            Err(e) => {
                let _ = app.emit("ingest://error", e.body());
                Err(e.body())
            }
        }
    })
    .await
    .map_err(task_failed)?
}

fn main() {
    let args = Args::parse();
    sextant::llm::configure_threads(None);
    let store = sextant::models::ModelStore::open(None);
    let engine = match Service::open(
        &store,
        &OpenOptions {
            kb: args.kb,
            llm: args.llm,
            embedder: None,
            flow: Some(args.flow),
            run_base: Some(args.run_base),
        },
    ) {
        Ok(s) => Engine(Ok(Arc::new(s))),
        Err(e) => {
            eprintln!("error: {e:#}");
            Engine(Err(format!("{e:#}")))
        }
    };
    tauri::Builder::default()
        .manage(engine)
        .invoke_handler(tauri::generate_handler![api, ingest])
        .run(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("error: the window could not start: {e}");
            std::process::exit(1);
        });
}
