// Sextant web UI: five screens over the local API (see docs/API.md). All engine
// calls go through client.js.
import { api, ingest, inTauri, setToken } from "./client.js";

const $ = (id) => document.getElementById(id);

/** Creates an element; `attrs` keys: class, text, dataset, on<event>, or attributes. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const state = {
  screen: "library",
  lastFolder: storageGet("sextant.lastFolder") || "",
  doc: null, // the document open in the Reader
  iv: { session: null, done: false },
  routerLoaded: false,
};

function storageGet(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function storageSet(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* storage disabled */
  }
}

// ---------------------------------------------------------------- errors, busy state

function showError(message) {
  $("sx-error-text").textContent = message;
  $("sx-error").hidden = false;
}

function clearError() {
  $("sx-error").hidden = true;
  $("sx-error-text").textContent = "";
}

/** Runs an action from a button: disables it, clears the banner, reports failures. */
async function run(button, fn) {
  if (button) {
    button.disabled = true;
    button.classList.add("busy");
  }
  clearError();
  try {
    return await fn();
  } catch (e) {
    console.warn(e);
    showError(e && e.message ? e.message : String(e));
    return undefined;
  } finally {
    if (button) {
      button.disabled = false;
      button.classList.remove("busy");
    }
  }
}

// ---------------------------------------------------------------- screens

const SCREENS = ["library", "ask", "reader", "interview", "router"];

function show(name) {
  if (!SCREENS.includes(name)) name = "library";
  state.screen = name;
  for (const s of SCREENS) $(`sx-screen-${s}`).hidden = s !== name;
  for (const b of document.querySelectorAll(".nav-btn")) {
    const on = b.dataset.screen === name;
    b.classList.toggle("active", on);
    if (on) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  document.body.dataset.screen = name;
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  if (name === "router" && !state.routerLoaded) {
    state.routerLoaded = true;
    run(null, loadLog);
  }
}

// ---------------------------------------------------------------- library

function setProgress(done, total, file) {
  $("sx-ingest-progress").hidden = false;
  const pct = total > 0 ? Math.min(100, Math.round((done / total) * 100)) : 0;
  $("sx-ingest-bar").style.width = `${pct}%`;
  $("sx-ingest-label").textContent = `${done} / ${total}${file ? ` ${file}` : ""}`;
}

function describeSummary(s) {
  if (!s || typeof s !== "object") return "Done.";
  const parts = [];
  const count = (v) => (Array.isArray(v) ? v.length : v);
  for (const key of ["added", "changed", "removed", "unchanged"]) {
    if (s[key] != null) parts.push(`${count(s[key])} ${key}`);
  }
  if (s.skipped != null) parts.push(`${count(s.skipped)} skipped`);
  if (s.chunks_embedded != null) parts.push(`${s.chunks_embedded} chunks embedded`);
  if (typeof s.seconds === "number") parts.push(`${s.seconds.toFixed(1)} s`);
  return parts.length ? `Done: ${parts.join(", ")}.` : "Done.";
}

function renderSkipped(s) {
  const skipped = s && Array.isArray(s.skipped) ? s.skipped : [];
  if (!skipped.length) return null;
  return el(
    "ul",
    { class: "skipped" },
    skipped.map((x) => {
      const [file, why] = Array.isArray(x) ? x : [x.file ?? x.path ?? String(x), x.reason ?? ""];
      return el("li", {}, el("code", { text: file }), why ? ` — ${why}` : "");
    }),
  );
}

async function ingestFolder(path) {
  path = path.trim();
  if (!path) throw new Error("Enter the absolute path of a folder to add.");
  state.lastFolder = path;
  storageSet("sextant.lastFolder", path);
  $("sx-ingest-summary").hidden = true;
  delete $("sx-ingest-progress").dataset.state;
  setProgress(0, 0, "scanning…");
  let summary;
  try {
    summary = await ingest(path, (p) => setProgress(p.done ?? 0, p.total ?? 0, p.file ?? ""));
  } catch (e) {
    $("sx-ingest-progress").hidden = true;
    throw e;
  }
  const box = $("sx-ingest-summary");
  box.replaceChildren(el("div", { text: describeSummary(summary) }), renderSkipped(summary) || "");
  box.hidden = false;
  $("sx-ingest-progress").dataset.state = "done";
  await loadKb();
}

async function loadKb() {
  const kb = await api("GET", "/api/kb");
  const stats = (kb && kb.stats) || {};
  const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
  const statParts = [
    stats.documents != null ? `${stats.documents} documents` : null,
    stats.sections != null ? `${stats.sections} sections` : null,
    stats.chunks != null ? `${stats.chunks} chunks` : null,
    stats.bytes_on_disk != null ? mb(stats.bytes_on_disk) : null,
    stats.embedder ? `embeddings: ${stats.embedder}` : null,
    stats.consistent === false ? "needs repair (reopen to fix)" : null,
  ].filter(Boolean);
  $("sx-kb-stats").textContent =
    `${kb && kb.kb ? `Knowledge base ${kb.kb}` : "Knowledge base"}` +
    (statParts.length ? ` · ${statParts.join(" · ")}` : "");
  const docs = (kb && kb.documents) || [];
  const list = $("sx-doc-list");
  if (!docs.length) {
    list.replaceChildren(el("li", { class: "muted empty", text: "No documents yet — add a folder." }));
    return;
  }
  list.replaceChildren(
    ...docs.map((d) =>
      el(
        "li",
        {},
        el(
          "button",
          {
            type: "button",
            class: "doc-item",
            "data-testid": "doc-item",
            dataset: { path: d.path },
            onclick: () => run(null, () => openReader(d.path)),
          },
          el("span", { class: "doc-title", text: d.title || d.path }),
          el("span", { class: "doc-path", text: d.path }),
          el("span", { class: "doc-meta", text: `${d.format || ""} · ${d.chunks ?? "?"} chunks` }),
        ),
      ),
    ),
  );
}

// ---------------------------------------------------------------- ask

function confidenceClass(format, c) {
  if (typeof c === "number") return c >= 0.78 ? "high" : c >= 0.63 ? "medium" : "low";
  const s = String(c || "").toLowerCase();
  return ["high", "medium", "low"].includes(s) ? s : "low";
}

function setBadge(node, level, text) {
  node.className = `badge conf-${level}`;
  node.textContent = text;
}

/** The anchor to open for a citation: its anchor, else the PDF page's section. */
function citationAnchor(c) {
  if (c.anchor) return c.anchor;
  if (c.page != null) return `pdfpage_${c.page}`;
  return null;
}

async function ask(question, format, mode) {
  question = question.trim();
  if (!question) throw new Error("Type a question first.");
  const out = await api("POST", "/api/ask", { question, format, mode });
  renderAnswer(out || {}, format);
}

function renderAnswer(out, askedFormat) {
  const format = out.format || askedFormat;
  const r = out.response || {};
  const citations = Array.isArray(out.citations) ? out.citations : [];
  const answer = format === "navigator" ? r.answer : r.final_answer;
  $("sx-answer").textContent = answer ?? "(no answer)";
  $("sx-ask-result").dataset.format = format;

  const badge = $("sx-confidence");
  if (typeof r.confidence === "number") {
    setBadge(badge, confidenceClass(format, r.confidence), `confidence ${Math.round(r.confidence * 100)} %`);
  } else if (r.confidence != null) {
    setBadge(badge, confidenceClass(format, r.confidence), `confidence ${r.confidence}`);
  } else {
    setBadge(badge, "low", "confidence ?");
  }
  const meta = [format, out.mode].filter(Boolean);
  if (r.outOfDomain) meta.push("out of domain");
  $("sx-answer-meta").textContent = meta.join(" · ");
  $("sx-confidence-reason").textContent = r.confidenceReason || "";

  const sources = format === "navigator" && Array.isArray(r.sources) ? r.sources : [];
  const chunks = format !== "navigator" && Array.isArray(r.retrieved_chunks) ? r.retrieved_chunks : [];
  const list = $("sx-citations");
  if (!citations.length) {
    list.replaceChildren(el("li", { class: "muted empty", text: "No sources cited." }));
  } else {
    list.replaceChildren(
      ...citations.map((c, i) => {
        const anchor = citationAnchor(c);
        const src = sources[i] && sources[i].file === c.file ? sources[i] : null;
        const chunk = chunks[i];
        const where = `${c.file}${anchor ? `#${anchor}` : ""}${c.page != null && !c.anchor ? ` (p. ${c.page})` : ""}`;
        return el(
          "li",
          {},
          el(
            "button",
            {
              type: "button",
              class: "citation",
              "data-testid": "citation",
              dataset: { file: c.file, anchor: anchor || "", page: c.page ?? "" },
              onclick: () => run(null, () => openReader(c.file, anchor)),
            },
            el("span", { class: "cite-label", text: c.label || c.file }),
            el("span", { class: "cite-where", text: where }),
          ),
          src && src.relevance ? el("div", { class: "cite-note", text: src.relevance }) : null,
          chunk && typeof chunk.score === "number"
            ? el("div", { class: "cite-note", text: `score ${chunk.score.toFixed(3)} · ${chunk.id}` })
            : null,
        );
      }),
    );
  }

  const related = Array.isArray(r.relatedTopics) ? r.relatedTopics : [];
  $("sx-related").replaceChildren(
    ...(related.length ? [el("span", { class: "muted", text: "Related: " })] : []),
    ...related.map((t) =>
      el("button", {
        type: "button",
        class: "chip",
        text: t,
        onclick: () => {
          $("sx-question").value = t;
          $("sx-ask-form").requestSubmit();
        },
      }),
    ),
  );
  $("sx-ask-raw").textContent = JSON.stringify(out, null, 2);
  $("sx-ask-result").hidden = false;
  // Keyboard users land on the first source: Enter opens it in the Reader.
  const first = list.querySelector("button.citation");
  if (first) first.focus({ preventScroll: true });
}

// ---------------------------------------------------------------- reader

async function loadDocument(file) {
  const doc = await api("GET", `/api/document?path=${encodeURIComponent(file)}`);
  state.doc = doc;
  $("sx-reader-title").textContent = doc.title || doc.path || file;
  const docEl = $("sx-doc");
  // Trusted: rendered by the local server from the user's own files (raw HTML is never
  // passed through by the renderer).
  docEl.innerHTML = doc.html || "";
  docEl.dataset.path = doc.path || file;
  docEl.scrollTop = 0;
  const outline = Array.isArray(doc.outline) ? doc.outline : [];
  $("sx-outline").replaceChildren(
    ...outline.map((o) =>
      el(
        "li",
        { class: `lvl-${Math.min(6, Math.max(1, o.level || 1))}` },
        el(
          "button",
          {
            type: "button",
            class: "outline-item",
            "data-testid": "outline-item",
            dataset: { anchor: o.anchor || "" },
            title: o.text,
            onclick: () => focusAnchor(o.anchor),
          },
          o.text || o.anchor,
          o.page != null && doc.format === "pdf" ? el("span", { class: "muted", text: ` p. ${o.page}` }) : null,
        ),
      ),
    ),
  );
}

/** Scrolls the Reader to the element whose id is `anchor` and highlights it. */
function focusAnchor(anchor) {
  const docEl = $("sx-doc");
  for (const h of docEl.querySelectorAll(".highlight")) h.classList.remove("highlight");
  for (const o of document.querySelectorAll(".outline-item.active")) o.classList.remove("active");
  if (!anchor) {
    docEl.scrollTop = 0;
    return true;
  }
  const target = docEl.querySelector(`#${CSS.escape(anchor)}`);
  if (!target) {
    showError(`Section "${anchor}" was not found in ${docEl.dataset.path || "this document"}.`);
    return false;
  }
  target.classList.add("highlight");
  target.scrollIntoView({ block: "start", behavior: "auto" });
  const item = document.querySelector(`.outline-item[data-anchor="${CSS.escape(anchor)}"]`);
  if (item) {
    item.classList.add("active");
    item.scrollIntoView({ block: "nearest" });
  }
  return true;
}

/** Opens `file` in the Reader, scrolled to and highlighting `anchor` (optional). */
export async function openReader(file, anchor = null) {
  show("reader");
  if (!state.doc || state.doc.path !== file) await loadDocument(file);
  // Wait one frame so layout exists before scrolling.
  await new Promise((r) => requestAnimationFrame(() => r()));
  focusAnchor(anchor);
}

/** Links inside a document: same-page anchors and other KB files open in the Reader. */
function onDocClick(ev) {
  const a = ev.target.closest("a[href]");
  if (!a || !$("sx-doc").contains(a)) return;
  const href = a.getAttribute("href");
  ev.preventDefault();
  if (href.startsWith("#")) {
    focusAnchor(decodeURIComponent(href.slice(1)));
    return;
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
    showError(`External link not opened (Sextant is offline): ${href}`);
    return;
  }
  const [rel, frag] = href.split("#");
  const base = (state.doc && state.doc.path) || "";
  const parts = base.split("/").slice(0, -1);
  for (const seg of rel.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg && seg !== ".") parts.push(seg);
  }
  run(null, () => openReader(parts.join("/"), frag ? decodeURIComponent(frag) : null));
}

async function navigate(question) {
  question = question.trim();
  if (!question) throw new Error("Type where you want to go first.");
  const out = await api("POST", "/api/navigate", { question });
  const call = (out && out.call) || {};
  const args = call.arguments || {};
  const target = (out && out.target) || {};
  const box = $("sx-nav-result");
  const path = [args.section, args.subsection, ...(Array.isArray(args.path) ? args.path : [])].filter(Boolean);
  box.replaceChildren(
    el("span", { class: "call", text: `${call.name || "navigate_to_section"}(${path.map((p) => JSON.stringify(p)).join(" › ")})` }),
    el("span", { class: "decided-by small", "data-testid": "navigate-decided-by", text: out.decided_by || "?" }),
    el("span", { class: "muted", text: `→ ${target.file || "?"}${target.anchor ? `#${target.anchor}` : ""}` }),
  );
  box.dataset.file = target.file || "";
  box.dataset.anchor = target.anchor || "";
  box.hidden = false;
  if (!target.file) throw new Error("The navigator returned no target file.");
  await openReader(target.file, target.anchor || null);
}

// ---------------------------------------------------------------- interview

function addTurn(who, text) {
  const t = el(
    "div",
    { class: `turn turn-${who}`, "data-testid": `turn-${who}` },
    who === "note" ? null : el("div", { class: "turn-who", text: who === "interviewer" ? "Interviewer" : "You" }),
    el("div", { class: "turn-text", text }),
  );
  $("sx-transcript").append(t);
  t.scrollIntoView({ block: "nearest" });
}

function renderInterview(out) {
  state.iv.session = out.session ?? state.iv.session;
  state.iv.done = !!out.done;
  const turn = out.turn || {};
  const md = turn.metadata || {};
  // The answer to the wrap-up question ends the interview with no further turn.
  if (turn.response) addTurn("interviewer", turn.response);
  if (turn.error) addTurn("note", `The interviewer reported ${turn.error}.`);
  $("sx-iv-status").hidden = false;
  $("sx-iv-stage").textContent = (turn.interview_stage || "?").replace(/_/g, " ");
  $("sx-iv-depth").textContent = md.question_depth ?? "?";
  $("sx-iv-engagement").textContent = md.engagement_level ?? "?";
  const pct = Math.max(0, Math.min(100, Number(md.completeness) || 0));
  $("sx-iv-bar").style.width = `${pct}%`;
  $("sx-iv-complete").textContent = `${pct} %`;
  $("sx-iv-session").textContent = state.iv.session ? `session ${state.iv.session}` : "";
  const done = state.iv.done;
  $("sx-iv-answer").disabled = done;
  $("sx-iv-send").disabled = done;
  $("sx-screen-interview").dataset.done = String(done);
  if (done) addTurn("note", "Interview complete.");
  else $("sx-iv-answer").focus();
}

async function startInterview() {
  state.iv = { session: null, done: false };
  $("sx-transcript").replaceChildren();
  const out = await api("POST", "/api/interview", { session: null, answer: null });
  renderInterview(out || {});
}

async function sendAnswer() {
  const answer = $("sx-iv-answer").value.trim();
  if (!state.iv.session) throw new Error("Start an interview first.");
  if (state.iv.done) throw new Error("The interview is over; start a new one.");
  if (!answer) throw new Error("Type an answer first.");
  addTurn("user", answer);
  $("sx-iv-answer").value = "";
  $("sx-iv-answer").disabled = true;
  try {
    const out = await api("POST", "/api/interview", { session: state.iv.session, answer });
    renderInterview(out || {});
  } catch (e) {
    $("sx-transcript").lastElementChild?.remove();
    $("sx-iv-answer").value = answer; // keep the text so it can be sent again
    throw e;
  } finally {
    if (!state.iv.done) $("sx-iv-answer").disabled = false;
  }
}

// ---------------------------------------------------------------- router console

const SAMPLE_FORENSICS = {
  step_completed: "build-step-3",
  agent: "code-implementer",
  status: "UNVERIFIED",
  forensics: {
    tests: { passed: 42, failed: 2, skip: 0 },
    lint: { errors: 0 },
    diff: { files: 5, additions: 120, deletions: 45 },
    concerns: [{ severity: "HIGH", description: "Missing error handling", location: "src/auth.py:42" }],
  },
  iteration: { current: 2, max: 3 },
  previous_failure_signature: null,
};

async function route() {
  let forensics;
  try {
    forensics = JSON.parse($("sx-forensics").value);
  } catch (e) {
    throw new Error(`The forensic summary is not valid JSON: ${e.message}`);
  }
  const body = { forensics };
  const flow = $("sx-flow-path").value.trim();
  if (flow) body.flow = flow;
  const d = (await api("POST", "/api/route", body)) || {};
  $("sx-decision-kind").textContent = d.decision || "?";
  $("sx-decision-kind").className = `decision-kind kind-${String(d.decision || "").toLowerCase()}`;
  const conf = String(d.confidence || "?");
  setBadge($("sx-decision-conf"), confidenceClass("route", conf), `confidence ${conf}`);
  $("sx-decided-by").textContent = `decided by ${d.decided_by || "?"}`;
  $("sx-decided-by").dataset.value = d.decided_by || "";
  $("sx-next-step").textContent = d.next_step_id ?? "—";
  $("sx-detour").textContent = d.detour_target ?? "—";
  $("sx-reason").textContent = d.reason || "";
  $("sx-decision").hidden = false;
  await loadLog();
}

async function loadLog() {
  const id = $("sx-flow-id").value.trim() || "build";
  const out = await api("GET", `/api/route/log?flow=${encodeURIComponent(id)}`);
  const rows = ((out && out.decisions) || []).slice().reverse();
  const body = $("sx-log-body");
  if (!rows.length) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "muted", text: "No decisions logged for this flow yet." })));
    return;
  }
  body.replaceChildren(
    ...rows.map((r) =>
      el(
        "tr",
        { "data-testid": "log-row" },
        el("td", { class: "nowrap", text: (r.timestamp || "").replace("T", " ").replace("Z", "") }),
        el("td", { text: r.step_id || (r.forensic_summary && r.forensic_summary.step_completed) || "" }),
        el("td", {}, el("b", { text: r.decision || "" })),
        el("td", { text: r.next_step_id || r.detour_target || "" }),
        el("td", { text: r.decided_by || r.stage || "" }),
        el("td", { text: r.confidence || "" }),
        el("td", { class: "reason", text: r.reason || "" }),
      ),
    ),
  );
}

// ---------------------------------------------------------------- start-up

async function health() {
  const h = await api("GET", "/api/health");
  const parts = [h.version ? `v${h.version}` : null, h.llm, h.embedder, inTauri() ? "desktop" : null];
  $("sx-health").textContent = parts.filter(Boolean).join(" · ");
  $("sx-health").title = h.kb ? `knowledge base: ${h.kb}` : "";
}

function init() {
  // A token can be handed over once in the URL: http://127.0.0.1:7878/#token=SECRET
  const m = location.hash.match(/^#token=(.+)$/);
  if (m) {
    setToken(decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }

  for (const b of document.querySelectorAll(".nav-btn")) {
    b.addEventListener("click", () => show(b.dataset.screen));
  }
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  $("sx-error-close").addEventListener("click", clearError);

  $("sx-folder").value = state.lastFolder;
  $("sx-ingest-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-add-folder"), () => ingestFolder($("sx-folder").value));
  });
  $("sx-reindex").addEventListener("click", () =>
    run($("sx-reindex"), () => {
      if (!state.lastFolder) throw new Error("No folder added yet: add one first.");
      $("sx-folder").value = state.lastFolder;
      return ingestFolder(state.lastFolder);
    }),
  );

  $("sx-ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const format = document.querySelector('input[name="format"]:checked').value;
    run($("sx-ask-btn"), () => ask($("sx-question").value, format, $("sx-mode").value));
  });
  $("sx-question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("sx-ask-form").requestSubmit();
    }
  });

  $("sx-doc").addEventListener("click", onDocClick);
  $("sx-navigate-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-nav-go"), () => navigate($("sx-nav-question").value));
  });

  $("sx-iv-start").addEventListener("click", () => run($("sx-iv-start"), startInterview));
  $("sx-iv-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-iv-send"), sendAnswer).then(() => {
      $("sx-iv-send").disabled = state.iv.done || !state.iv.session;
    });
  });
  $("sx-iv-answer").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      $("sx-iv-form").requestSubmit();
    }
  });

  $("sx-forensics").value = JSON.stringify(SAMPLE_FORENSICS, null, 2);
  $("sx-route-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-route-btn"), route);
  });
  $("sx-log-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-log-btn"), loadLog);
  });

  show(location.hash.slice(1) || "library");
  run(null, health);
  run(null, loadKb);
  document.body.dataset.ready = "true";
}

window.sextant = { openReader, show };
init();
