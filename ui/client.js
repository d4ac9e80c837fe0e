// The one module that talks to the Sextant engine.
//
// In the desktop app (Tauri, `withGlobalTauri`) every call goes through IPC:
//   invoke("api", {request: {op, ...}})  -> the same JSON the HTTP route answers; the op
//                                            is the route's (ROUTE_OPS), its fields the
//                                            route's query and body; rejects with
//                                            {error: {message, code}} or a string.
//   invoke("ask_stream", {id, request, onText: Channel}) -> the ask answer; the draft's
//                                            pieces arrive on the channel
//   invoke("ask_stop", {id})             -> stops that answer
//   invoke("pick_folder")                -> the folder chosen in the system's chooser, or null
//   invoke("pick_model_file")            -> the GGUF file chosen in the system's chooser, or null
//   event "tauri://drag-drop" {paths}    -> folders dropped on the window
//   invoke("ingest", {path, images})     -> progress arrives as events
//       "ingest://progress" {done, total, file}
//       "ingest://done"     {summary}
//       "ingest://error"    {error: {message, ...}}
// In a browser the same routes are fetched from the origin that served the page
// (`sextant serve`), with `Authorization: Bearer` when localStorage "sextant.token" is set.

const TOKEN_KEY = "sextant.token";

// The protocol routes and the engine request each one makes. src/server/mod.rs keeps the
// same table for HTTP; its test `the_ui_route_table_is_the_servers` fails when they differ.
const ROUTE_OPS = {
  "GET /api/health": "health",
  "GET /api/kb": "kb",
  "GET /api/kbs": "kbs",
  "POST /api/kbs/create": "create_kb",
  "POST /api/kbs/switch": "switch_kb",
  "POST /api/kbs/rename": "rename_kb",
  "POST /api/kbs/remove": "remove_kb",
  "POST /api/kbs/watch": "watch_kb",
  "GET /api/models": "models",
  "POST /api/models/use": "use_model",
  "POST /api/models/import": "import_model",
  "GET /api/document": "document",
  "GET /api/document/file": "document_file",
  "POST /api/document/remove": "remove_document",
  "POST /api/sample-kb": "sample_kb",
  "POST /api/document/reindex": "reindex_document",
  "GET /api/section": "section",
  "POST /api/search": "search",
  "POST /api/ask": "ask",
  "POST /api/navigate": "navigate",
  "POST /api/route": "route",
  "GET /api/route/log": "route_log",
  "POST /api/interview": "interview",
  "GET /api/conversations": "conversations",
  "GET /api/conversation": "conversation",
  "POST /api/conversation/rename": "rename_conversation",
  "POST /api/conversation/delete": "delete_conversation",
  "POST /api/conversation/restore": "restore_conversation",
  "GET /api/conversation/export": "export_conversation",
};

/** The engine request for a route: its op, the query string's fields, then the body's. */
function routeRequest(method, path, body) {
  const url = new URL(path, "http://sextant.invalid");
  const op = ROUTE_OPS[`${method} ${url.pathname}`];
  if (!op) throw new Error(`no route ${method} ${url.pathname}`);
  const request = { op };
  for (const [k, v] of url.searchParams) request[k] = v;
  return Object.assign(request, body || {});
}

function tauri() {
  const t = window.__TAURI__;
  return t && t.core && typeof t.core.invoke === "function" ? t : null;
}

export function inTauri() {
  return tauri() !== null;
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: run without a token */
  }
}

/** The message inside whatever an engine call failed with. */
function errorMessage(e, fallback) {
  if (e == null) return fallback;
  if (typeof e === "string") {
    try {
      return errorMessage(JSON.parse(e), e);
    } catch {
      return e;
    }
  }
  if (e instanceof Error) return e.message;
  if (e.error) return typeof e.error === "string" ? e.error : errorMessage(e.error, fallback);
  if (typeof e.message === "string") return e.message;
  return fallback;
}

function toError(e, fallback) {
  const err = new Error(errorMessage(e, fallback));
  if (e && e.error && e.error.type) err.type = e.error.type;
  if (e && e.error && e.error.code) err.code = e.error.code;
  return err;
}

function headers(json) {
  const h = { Accept: "application/json" };
  if (json) h["Content-Type"] = "application/json";
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function httpError(res) {
  let text = "";
  try {
    text = await res.text();
  } catch {
    /* body unreadable */
  }
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  const fallback = `${res.status} ${res.statusText || "error"}${text && !parsed ? `: ${text.slice(0, 200)}` : ""}`;
  const err = toError(parsed, fallback);
  err.status = res.status;
  if (res.status === 401 && !inTauri()) {
    err.message += " — open this page once as /#token=YOUR_TOKEN to store the server's token";
  }
  const retry = res.headers.get("Retry-After");
  if (retry) err.message += ` (retry after ${retry} s)`;
  return err;
}

/**
 * Calls one API route. `path` includes any query string ("/api/document?path=a.md").
 * Resolves to the parsed JSON answer; rejects with an Error carrying the server's
 * error.message on a non-2xx status.
 */
export async function api(method, path, body = null) {
  method = method.toUpperCase();
  const t = tauri();
  if (t) {
    try {
      return await t.core.invoke("api", { request: routeRequest(method, path, body) });
    } catch (e) {
      throw toError(e, `${method} ${path} failed`);
    }
  }
  const hasBody = body != null && method !== "GET" && method !== "HEAD";
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headers(hasBody),
      body: hasBody ? JSON.stringify(body) : undefined,
      cache: "no-store",
    });
  } catch (e) {
    throw new Error(`cannot reach the Sextant server (${method} ${path}): ${e.message}`);
  }
  if (!res.ok) throw await httpError(res);
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${method} ${path}: the server answered something that is not JSON`);
  }
}

/** Desktop only: the system's folder chooser; resolves to the chosen path, or null. */
export async function pickFolder() {
  const t = tauri();
  if (!t) throw new Error("Choosing a folder needs the desktop app; type its path here.");
  try {
    return await t.core.invoke("pick_folder");
  } catch (e) {
    throw toError(e, "the folder chooser failed");
  }
}

/** Desktop only: the system's file chooser for a GGUF model; the chosen path, or null. */
export async function pickModelFile() {
  const t = tauri();
  if (!t) throw new Error("Choosing a file needs the desktop app; type its full path here.");
  try {
    return await t.core.invoke("pick_model_file");
  } catch (e) {
    throw toError(e, "the file chooser failed");
  }
}

/** Desktop only: `cb(paths)` when files or folders are dropped on the window. */
export function onDrop(cb) {
  const t = tauri();
  if (!t || !t.event || typeof t.event.listen !== "function") return;
  t.event.listen("tauri://drag-drop", (e) => cb((e.payload && e.payload.paths) || []));
}

/** What a stopped answer rejects with (`err.stopped` is true). */
function stoppedError() {
  const err = new Error("Stopped.");
  err.stopped = true;
  return err;
}

/**
 * Asks with the answer streamed (POST /api/ask/stream): `onText(piece)` receives the
 * model's draft of the answer as it is written; resolves to the response POST /api/ask
 * gives. Aborting `signal` stops the generation (rejects with `err.stopped`). In the
 * desktop app the same comes through invoke("ask_stream", {id, request, onText: Channel})
 * and invoke("ask_stop", {id}).
 */
export async function askStream(body, onText, signal) {
  const t = tauri();
  if (t) {
    const id = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const channel = new t.core.Channel();
    channel.onmessage = (text) => onText(text);
    const stop = () => t.core.invoke("ask_stop", { id });
    signal.addEventListener("abort", stop);
    try {
      return await t.core.invoke("ask_stream", { id, request: body, onText: channel });
    } catch (e) {
      if (e && e.error && e.error.code === "cancelled") throw stoppedError();
      throw toError(e, "POST /api/ask failed");
    } finally {
      signal.removeEventListener("abort", stop);
    }
  }
  let res;
  try {
    res = await fetch("/api/ask/stream", {
      method: "POST",
      headers: headers(true),
      body: JSON.stringify(body),
      cache: "no-store",
      signal,
    });
  } catch (e) {
    if (e.name === "AbortError") throw stoppedError();
    throw new Error(`cannot reach the Sextant server (POST /api/ask/stream): ${e.message}`);
  }
  if (!res.ok) throw await httpError(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const sse = sseParser();
  let result = null;
  const handle = (records) => {
    for (const r of records) {
      const v = JSON.parse(r.data);
      if (r.event === "answer") onText(v.text);
      else if (r.event === "done") result = v;
      else if (r.event === "error") throw toError(v, "the answer failed");
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      handle(sse.feed(decoder.decode(value, { stream: true })));
    }
    handle(sse.end());
  } catch (e) {
    if (e.name === "AbortError") throw stoppedError();
    throw e;
  }
  if (!result) throw new Error("the answer stream ended without an answer");
  return result;
}

/** Splits a text/event-stream into {event, data} records; `feed` returns complete ones. */
export function sseParser() {
  let buf = "";
  let event = "message";
  let data = [];
  const out = [];
  function line(l) {
    if (l === "") {
      if (data.length) out.push({ event, data: data.join("\n") });
      event = "message";
      data = [];
      return;
    }
    if (l.startsWith(":")) return; // comment / keep-alive
    const i = l.indexOf(":");
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? "" : l.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value || "message";
    else if (field === "data") data.push(value);
  }
  return {
    feed(chunk) {
      buf += chunk;
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        // A lone "\r" at the end may be the first half of "\r\n": wait for more.
        if (nl === buf.length - 1 && buf[nl] === "\r") break;
        const sep = buf.startsWith("\r\n", nl) ? 2 : 1;
        line(buf.slice(0, nl));
        buf = buf.slice(nl + sep);
      }
      return out.splice(0);
    },
    end() {
      if (buf) line(buf.replace(/\r$/, ""));
      buf = "";
      line("");
      return out.splice(0);
    },
  };
}

/**
 * Ingests a folder. `onProgress({done, total, file})` is called for each file; the
 * promise resolves to the done summary (the `summary` of the done event) or rejects with
 * the error event's message.
 */
export function ingest(path, onProgress = () => {}, { images = false } = {}) {
  const t = tauri();
  return t ? ingestTauri(t, path, images, onProgress) : ingestHttp(path, images, onProgress);
}

async function ingestTauri(t, path, images, onProgress) {
  const listen = t.event && t.event.listen;
  if (typeof listen !== "function") {
    throw new Error("Tauri event API missing (window.__TAURI__.event.listen)");
  }
  const unlisten = [];
  try {
    return await new Promise((resolve, reject) => {
      Promise.all([
        listen("ingest://progress", (e) => onProgress(e.payload || {})),
        listen("ingest://done", (e) => resolve(summaryOf(e.payload))),
        listen("ingest://error", (e) => reject(toError(e.payload, "ingest failed"))),
      ])
        .then((fns) => {
          unlisten.push(...fns);
          return t.core.invoke("ingest", { path, images });
        })
        .then((ret) => {
          // The command may also return the summary itself; the done event usually wins.
          if (ret && typeof ret === "object" && ret.summary) resolve(ret.summary);
        })
        .catch((e) => reject(toError(e, "ingest failed")));
    });
  } finally {
    for (const f of unlisten) {
      try {
        f();
      } catch {
        /* already gone */
      }
    }
  }
}

function summaryOf(payload) {
  return payload && typeof payload === "object" && "summary" in payload ? payload.summary : payload;
}

async function ingestHttp(path, images, onProgress) {
  let res;
  try {
    res = await fetch("/api/ingest", {
      method: "POST",
      headers: { ...headers(true), Accept: "text/event-stream" },
      body: JSON.stringify({ path, images }),
      cache: "no-store",
    });
  } catch (e) {
    throw new Error(`cannot reach the Sextant server (POST /api/ingest): ${e.message}`);
  }
  if (!res.ok) throw await httpError(res);
  if (!res.body) throw new Error("ingest: the response has no body stream");

  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = sseParser();
  const handle = (records) => {
    for (const r of records) {
      let payload;
      try {
        payload = JSON.parse(r.data);
      } catch {
        throw new Error(`ingest: malformed event data: ${r.data.slice(0, 200)}`);
      }
      if (r.event === "progress") onProgress(payload);
      else if (r.event === "done") return { done: summaryOf(payload) };
      else if (r.event === "error") throw toError(payload, "ingest failed");
    }
    return null;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const got = done
        ? handle(parser.feed(decoder.decode()).concat(parser.end()))
        : handle(parser.feed(decoder.decode(value, { stream: true })));
      if (got) return got.done;
      if (done) throw new Error("ingest: the stream ended without a result");
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
