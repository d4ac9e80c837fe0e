// The Reader screen: a document with its outline, opened at a highlighted section from the
// Library, a citation, a link in another document, or the Navigate box. A PDF is shown as
// its pages (pdf.js, vendored), opened at the cited page with the cited passage marked; its
// extracted text is the fallback when the pages cannot be shown.
import { api } from "../client.js";
import { $, el, run, showError } from "../dom.js";
import { highlightCode } from "../highlight.js";

// Screen switching lives in app.js, which imports this module; it is handed over in
// setupReader so that this module need not import app.js back (an import cycle).
let showScreen = null;

let current = null; // the document open in the Reader
let pdf = null; // {doc: pdf.js document, page: shown page number} while a PDF is open

let pdfjs = null;
/** pdf.js, loaded on the first PDF (it is large); the worker runs from the same origin. */
async function pdfLib() {
  if (!pdfjs) {
    pdfjs = await import("../vendor/pdfjs/pdf.min.mjs");
    pdfjs.GlobalWorkerOptions.workerSrc = new URL("../vendor/pdfjs/pdf.worker.min.mjs", import.meta.url).href;
  }
  return pdfjs;
}

function base64Bytes(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

/** Opens the current PDF's pages in the Reader; false (with the reason shown) if it cannot. */
async function openPdfPages(path) {
  try {
    const file = await api("GET", `/api/document/file?path=${encodeURIComponent(path)}`);
    const lib = await pdfLib();
    const doc = await lib.getDocument({ data: base64Bytes(file.base64), isEvalSupported: false }).promise;
    pdf = { doc, page: 0 };
    return true;
  } catch (e) {
    pdf = null;
    showError(`The pages of ${path} cannot be shown, so its text is: ${e.message || e}`);
    return false;
  }
}

const squash = (s) => s.toLowerCase().replace(/\s+/g, " ").trim();

/** Shows page `n` of the open PDF, marking the text runs that belong to `quote`. */
async function showPdfPage(n, quote = null) {
  const count = pdf.doc.numPages;
  n = Math.min(Math.max(1, n || 1), count);
  const page = await pdf.doc.getPage(n);
  const docEl = $("sx-doc");
  const width = Math.max(320, docEl.clientWidth - 32);
  const viewport = page.getViewport({ scale: width / page.getViewport({ scale: 1 }).width });
  const canvas = el("canvas", { "data-testid": "pdf-canvas" });
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.floor(viewport.width * ratio);
  canvas.height = Math.floor(viewport.height * ratio);
  canvas.style.width = `${Math.floor(viewport.width)}px`;
  canvas.style.height = `${Math.floor(viewport.height)}px`;
  const text = el("div", { class: "textLayer" });
  const sheet = el("div", { class: "pdf-page", "data-testid": "pdf-page", dataset: { page: String(n) } }, canvas, text);
  sheet.style.setProperty("--scale-factor", String(viewport.scale));
  sheet.style.setProperty("--total-scale-factor", String(viewport.scale));
  const go = (to) => () => run(null, () => showPdfPage(to));
  const bar = el(
    "div",
    { class: "pdf-bar" },
    el("button", { type: "button", class: "small", text: "‹ Previous", disabled: n <= 1, onclick: go(n - 1) }),
    el("span", { "data-testid": "pdf-page-label", text: `Page ${n} of ${count}` }),
    el("button", { type: "button", class: "small", text: "Next ›", disabled: n >= count, onclick: go(n + 1) }),
  );
  docEl.replaceChildren(bar, sheet);
  pdf.page = n;
  await page.render({
    canvas,
    canvasContext: canvas.getContext("2d"),
    viewport,
    transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null,
  }).promise;
  const layer = new pdfjs.TextLayer({ textContentSource: page.streamTextContent(), container: text, viewport });
  await layer.render();
  const wanted = quote ? squash(quote) : "";
  const hits = [];
  if (wanted) {
    for (const span of text.querySelectorAll("span")) {
      const line = squash(span.textContent || "");
      if (line.length >= 4 && wanted.includes(line)) {
        span.classList.add("hit");
        hits.push(span);
      }
    }
  }
  sheet.dataset.hits = String(hits.length);
  (hits[0] || sheet).scrollIntoView({ block: hits.length ? "center" : "start", behavior: "auto" });
}

async function loadDocument(file) {
  const doc = await api("GET", `/api/document?path=${encodeURIComponent(file)}`);
  current = doc;
  pdf = null;
  $("sx-reader-title").textContent = doc.title || doc.path || file;
  const docEl = $("sx-doc");
  // Trusted: rendered by the local server from the user's own files (raw HTML is never
  // passed through by the renderer).
  docEl.innerHTML = doc.html || "";
  addCopyButtons(docEl);
  highlightCode(docEl);
  docEl.dataset.path = doc.path || file;
  docEl.scrollTop = 0;
  if (doc.format === "pdf") await openPdfPages(doc.path || file);
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
            onclick: () => (pdf ? run(null, () => showPdfPage(o.page)) : focusAnchor(o.anchor)),
          },
          o.text || o.anchor,
          o.page != null && doc.format === "pdf" ? el("span", { class: "muted", text: ` p. ${o.page}` }) : null,
        ),
      ),
    ),
  );
}

/** A "Copy" button on every code block: people come to the Reader to copy a command. */
export function addCopyButtons(root) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.querySelector(".copy")) continue;
    const button = el("button", {
      type: "button",
      class: "copy small",
      "data-testid": "copy-code",
      title: "Copy this code",
      text: "Copy",
      onclick: () =>
        run(null, async () => {
          const code = pre.querySelector("code") || pre;
          await copyText(code.textContent);
          button.textContent = "Copied";
          setTimeout(() => (button.textContent = "Copy"), 1500);
        }),
    });
    pre.prepend(button);
  }
}

/** The clipboard API where the page may use it; a selection copy where it may not. */
async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el("textarea", { class: "offscreen" });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("Copying was refused; select the code and press Ctrl+C.");
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

/** The page a PDF anchor stands for: `pdfpage_N`, or the page of an outline heading. */
function pageOfAnchor(anchor) {
  const m = /^pdfpage_(\d+)$/.exec(anchor || "");
  if (m) return Number(m[1]);
  const o = ((current && current.outline) || []).find((x) => x.anchor === anchor);
  return o && o.page != null ? o.page : null;
}

/**
 * Opens `file` in the Reader, scrolled to and highlighting `anchor` (optional). A PDF opens
 * at `page` (else the anchor's page) with `quote`'s text runs marked on it.
 */
export async function openReader(file, anchor = null, { page = null, quote = null } = {}) {
  showScreen("reader");
  if (!current || current.path !== file) await loadDocument(file);
  // Wait one frame so layout exists before scrolling.
  await new Promise((r) => requestAnimationFrame(() => r()));
  if (pdf) {
    await showPdfPage(page ?? pageOfAnchor(anchor) ?? 1, quote);
    return;
  }
  focusAnchor(anchor);
}

/** Links inside a document: same-page anchors and other KB files open in the Reader. */
function onDocClick(ev) {
  const a = ev.target.closest("a[href]");
  if (!a || !$("sx-doc").contains(a)) return;
  const href = a.getAttribute("href");
  ev.preventDefault();
  if (href.startsWith("#")) {
    const anchor = decodeURIComponent(href.slice(1));
    if (pdf) run(null, () => showPdfPage(pageOfAnchor(anchor)));
    else focusAnchor(anchor);
    return;
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
    showError(`External link not opened (Sextant is offline): ${href}`);
    return;
  }
  const [rel, frag] = href.split("#");
  const base = (current && current.path) || "";
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

/** Wires document links and the Navigate box; `show(name)` switches screens. */
export function setupReader(show) {
  showScreen = show;
  $("sx-doc").addEventListener("click", onDocClick);
  $("sx-navigate-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-nav-go"), () => navigate($("sx-nav-question").value));
  });
}
