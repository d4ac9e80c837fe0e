//! `sextant-desktop`: the Tauri window over the engine. Commands are thin wrappers over
//! `sextant::service::Service` (the same typed requests the HTTP server makes), so the UI
//! in `ui/` gets the same JSON from `invoke` as from `fetch`. Long work runs on blocking
//! threads; ingest progress arrives as events, an answer's draft on a channel.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use clap::Parser;
use serde_json::{json, Value};
use sextant::kb::parse::worker;
use sextant::service::{OpenOptions, Request, Service, ServiceError};
use tauri::ipc::Channel;
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
    /// Default flow file for the router console (default: the built-in example).
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    /// Where routing decision logs go (default: <data dir>/sextant/runs).
    #[arg(long, value_name = "DIR")]
    run_base: Option<PathBuf>,
}

/// The engine, or why it could not start (missing models, unreadable KB): the window
/// opens either way and the UI's first-run panel shows the error, which names the fix.
/// While it is not started, each request tries again (failing fast on a missing file), so
/// pulling the models in a terminal and pressing "Check again" starts it.
struct Engine {
    state: Mutex<Result<Arc<Service>, String>>,
    options: OpenOptions,
}

impl Engine {
    fn open(options: OpenOptions) -> Self {
        let state = Mutex::new(Self::start(&options));
        Engine { state, options }
    }

    fn start(options: &OpenOptions) -> Result<Arc<Service>, String> {
        let store = sextant::models::ModelStore::open(None);
        Service::open(&store, options)
            .map(Service::shared)
            .map_err(|e| {
                eprintln!("error: {e:#}");
                format!("{e:#}")
            })
    }

    fn get(&self) -> Result<Arc<Service>, Value> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.is_err() {
            *state = Self::start(&self.options);
        }
        state
            .clone()
            .map_err(|message| error_body(&message, "not_ready"))
    }
}

/// The error shape the UI reads (the same fields as the HTTP API's error bodies).
fn error_body(message: &str, code: &str) -> Value {
    json!({"error": {"message": message, "code": code}})
}

fn service_error(e: &ServiceError) -> Value {
    error_body(&e.to_string(), e.code())
}

fn task_failed(e: impl std::fmt::Display) -> Value {
    error_body(&format!("the request's task failed: {e}"), "internal")
}

/// With SEXTANT_DESKTOP_TRACE set, one stderr line per command and its outcome: the
/// desktop test reads them to know each click reached the engine.
fn trace<T>(what: &str, result: &Result<T, ServiceError>) {
    if std::env::var_os("SEXTANT_DESKTOP_TRACE").is_some() {
        match result {
            Ok(_) => eprintln!("{what} -> ok"),
            Err(e) => eprintln!("{what} -> {}", e.code()),
        }
    }
}

/// Every protocol request of docs/API.md, as `invoke("api", {request: {op, ...}})`.
#[tauri::command]
async fn api(engine: State<'_, Engine>, request: Value) -> Result<Value, Value> {
    let svc = engine.get().inspect_err(|_| {
        if std::env::var_os("SEXTANT_DESKTOP_TRACE").is_some() {
            eprintln!("api {} -> not_ready", request["op"].as_str().unwrap_or("?"));
        }
    })?;
    tauri::async_runtime::spawn_blocking(move || {
        let op = request["op"].as_str().unwrap_or("?").to_string();
        let r = Request::from_json(request).and_then(|req| svc.handle(req));
        trace(&format!("api {op}"), &r);
        r.map_err(|e| service_error(&e))
    })
    .await
    .map_err(task_failed)?
}

/// The answers being written, by the id the UI gave each (`ask_stop` sets its flag).
#[derive(Default)]
struct Asking(Mutex<HashMap<String, Arc<AtomicBool>>>);

/// `POST /api/ask/stream` for the window: the model's draft of the answer arrives on
/// `on_text` as it is written; resolves to what `api` answers for an ask.
#[tauri::command]
async fn ask_stream(
    engine: State<'_, Engine>,
    asking: State<'_, Asking>,
    id: String,
    mut request: Value,
    on_text: Channel<String>,
) -> Result<Value, Value> {
    let svc = engine.get()?;
    request["op"] = json!("ask");
    let params = match Request::from_json(request) {
        Ok(Request::Ask(params)) => params,
        Ok(_) => {
            return Err(error_body(
                "an ask request did not parse as one",
                "internal",
            ))
        }
        Err(e) => return Err(service_error(&e)),
    };
    let cancel = Arc::new(AtomicBool::new(false));
    asking
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), cancel.clone());
    let result = tauri::async_runtime::spawn_blocking(move || {
        let r = svc.ask_watched(
            params,
            &mut |text| {
                let _ = on_text.send(text.to_string());
            },
            cancel,
        );
        trace("ask_stream", &r);
        r.map_err(|e| service_error(&e))
    })
    .await
    .map_err(task_failed);
    asking
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id);
    result?
}

/// Stops the answer `ask_stream` is writing under `id` (the Stop button, Esc).
#[tauri::command]
fn ask_stop(asking: State<'_, Asking>, id: String) {
    let flags = asking.0.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(flag) = flags.get(&id) {
        flag.store(true, Ordering::Relaxed);
    }
}

/// What a chooser picks: a folder, or a file of these extensions.
enum Pick {
    Folder,
    File(&'static str, &'static [&'static str]),
}

/// The system's chooser (Tauri's dialog plugin), opened in the home folder (GTK otherwise
/// opens on "Recent", which lists files only); the chosen path, or None when the user
/// cancels. Traced as `<what> -> ok|cancelled`.
async fn choose(
    app: tauri::AppHandle,
    title: &str,
    pick: Pick,
    what: &str,
) -> Result<Option<String>, Value> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut chooser = app.dialog().file().set_title(title);
    if let Some(home) = std::env::var_os("HOME") {
        chooser = chooser.set_directory(home);
    }
    match pick {
        Pick::Folder => chooser.pick_folder(move |p| {
            let _ = tx.send(p);
        }),
        Pick::File(kind, extensions) => chooser.add_filter(kind, extensions).pick_file(move |p| {
            let _ = tx.send(p);
        }),
    }
    let picked = tauri::async_runtime::spawn_blocking(move || rx.recv().ok().flatten())
        .await
        .map_err(task_failed)?;
    let path = picked
        .and_then(|f| f.into_path().ok())
        .map(|p| p.display().to_string());
    if std::env::var_os("SEXTANT_DESKTOP_TRACE").is_some() {
        eprintln!(
            "{what} -> {}",
            if path.is_some() { "ok" } else { "cancelled" }
        );
    }
    Ok(path)
}

/// The folder chooser, for a folder to add to the knowledge base.
#[tauri::command]
async fn pick_folder(app: tauri::AppHandle) -> Result<Option<String>, Value> {
    choose(
        app,
        "Add a folder to the knowledge base",
        Pick::Folder,
        "pick_folder",
    )
    .await
}

/// The file chooser for a model file (GGUF); the engine checks and imports it
/// (`import_model`).
#[tauri::command]
async fn pick_model_file(app: tauri::AppHandle) -> Result<Option<String>, Value> {
    choose(
        app,
        "Import a model (GGUF file)",
        Pick::File("GGUF model", &["gguf"]),
        "pick_model_file",
    )
    .await
}

/// Ingests a folder; progress as `ingest://progress`, then `ingest://done` or
/// `ingest://error` (the same payloads as the server's event stream).
#[tauri::command]
async fn ingest(
    app: tauri::AppHandle,
    engine: State<'_, Engine>,
    path: Option<String>,
    images: Option<bool>,
) -> Result<Value, Value> {
    let svc = engine.get()?;
    tauri::async_runtime::spawn_blocking(move || {
        let path = path
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let result = svc.ingest_target(path.as_deref()).and_then(|path| {
            let report = svc.ingest(&[path], images.unwrap_or(false), &mut |p| {
                let _ = app.emit("ingest://progress", json!(p));
            })?;
            Ok(json!({ "summary": report }))
        });
        trace("ingest", &result);
        match result {
            Ok(v) => {
                let _ = app.emit("ingest://done", v.clone());
                Ok(v)
            }
            Err(e) => {
                let _ = app.emit("ingest://error", service_error(&e));
                Err(service_error(&e))
            }
        }
    })
    .await
    .map_err(task_failed)?
}

fn main() {
    // A parse worker for ingest (see `sextant::kb::parse::worker`), not the window.
    let raw: Vec<String> = std::env::args().collect();
    if raw.get(1).map(String::as_str) == Some(worker::WORKER_ARG) {
        std::process::exit(worker::run_worker(
            &raw[2..],
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
        ));
    }
    let args = Args::parse();
    sextant::llm::configure_threads(None);
    sextant::llm::tune_allocator();
    let engine = Engine::open(OpenOptions {
        // The knowledge base open when the app last closed, unless one is named.
        kb: args
            .kb
            .or_else(|| sextant::kb::home::KbHome::user().last_used()),
        llm: args.llm,
        embedder: None,
        flow: args.flow,
        run_base: args.run_base,
        parse_isolation: worker::Isolation::current_exe().ok(),
        lazy_llm: false,
        watch: true,
    });
    tauri::Builder::default()
        .manage(engine)
        .manage(Asking::default())
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(tauri::generate_handler![
            api,
            ingest,
            ask_stream,
            ask_stop,
            pick_folder,
            pick_model_file
        ])
        .run(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("error: the window could not start: {e}");
            std::process::exit(1);
        });
}
