// The Library screen: add or re-index a folder with live progress, and list the documents
// of the knowledge base.
import { api, inTauri, ingest, onDrop, pickFolder } from "../client.js";
import { $, el, run, storageGet, storageSet } from "../dom.js";
import { loadKbs, setupKbs } from "./kbs.js";
import { openReader } from "./reader.js";

// Remembered across launches so Re-index works without typing the path again.
let lastFolder = storageGet("sextant.lastFolder") || "";

/** "about 3 min left" from the engine's estimate (seconds; null for the first seconds). */
export function timeLeft(seconds) {
  if (typeof seconds !== "number") return "";
  const s = Math.round(seconds);
  if (s < 60) return `about ${s} s left`;
  if (s < 5400) return `about ${Math.round(s / 60)} min left`;
  return `about ${(s / 3600).toFixed(1)} h left`;
}

function setProgress(done, total, file, etaSeconds) {
  $("sx-ingest-progress").hidden = false;
  const pct = total > 0 ? Math.min(100, Math.round((done / total) * 100)) : 0;
  $("sx-ingest-bar").style.width = `${pct}%`;
  const left = timeLeft(etaSeconds);
  $("sx-ingest-label").textContent =
    `${done} / ${total}${left ? ` · ${left}` : ""}${file ? ` ${file}` : ""}`;
  $("sx-ingest-label").dataset.eta = left;
}

function describeSummary(s) {
  if (!s || typeof s !== "object") return "Done.";
  const parts = [];
  const count = (v) => (Array.isArray(v) ? v.length : v);
  for (const key of ["added", "changed", "removed", "unchanged"]) {
    if (s[key] != null) parts.push(`${count(s[key])} ${key}`);
  }
  if (s.skipped != null) parts.push(`${count(s.skipped)} skipped`);
  if (count(s.excluded) > 0) parts.push(`${count(s.excluded)} left out (removed by you)`);
  if (s.chunks_embedded != null) parts.push(`${s.chunks_embedded} chunks embedded`);
  if (typeof s.seconds === "number") parts.push(`${s.seconds.toFixed(1)} s`);
  return parts.length ? `Done: ${parts.join(", ")}.` : "Done.";
}

/** The files skipped, and those read in part (scanned pages without OCR), with why. */
function renderSkipped(s) {
  const item = (prefix) => (x) => {
    const [file, why] = Array.isArray(x) ? x : [x.file ?? x.path ?? String(x), x.reason ?? ""];
    return el("li", {}, prefix, el("code", { text: file }), why ? ` — ${why}` : "");
  };
  const skipped = s && Array.isArray(s.skipped) ? s.skipped : [];
  const notes = s && Array.isArray(s.notes) ? s.notes : [];
  if (!skipped.length && !notes.length) return null;
  return el("ul", { class: "skipped" }, [...skipped.map(item("")), ...notes.map(item("in part: "))]);
}

async function ingestFolder(path) {
  path = path.trim();
  if (!path) throw new Error("Enter the absolute path of a folder to add.");
  lastFolder = path;
  storageSet("sextant.lastFolder", path);
  $("sx-ingest-summary").hidden = true;
  delete $("sx-ingest-progress").dataset.state;
  setProgress(0, 0, "scanning…");
  let summary;
  try {
    summary = await ingest(path, (p) => {
      // Before the first file, every page is read once to find footers repeated across them.
      const [read, of] = Array.isArray(p.pages_read) ? p.pages_read : [];
      const file = of ? `reading pages for repeated footers: ${read} of ${of}` : p.file ?? "";
      setProgress(p.done ?? 0, p.total ?? 0, file, p.eta_s);
    }, {
      images: $("sx-images").checked,
    });
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

/** Fills the stats line and the documents list from the knowledge base. */
export async function loadKb() {
  const [kb] = await Promise.all([api("GET", "/api/kb"), loadKbs()]);
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
    `${kb && kb.name ? `Knowledge base ${kb.name}` : "Knowledge base"}` +
    (statParts.length ? ` · ${statParts.join(" · ")}` : "");
  const docs = (kb && kb.documents) || [];
  const removed = (kb && kb.removed) || [];
  const list = $("sx-doc-list");
  if (!docs.length && !removed.length) {
    showFirstRun(
      "Welcome to Sextant",
      "Add a folder of your own documentation above (Markdown, HTML, PDF, Word DOCX, EPUB or text; " +
        "nothing leaves this machine), or try Sextant first on the sample knowledge base: " +
        "an operations handbook of 20 documents.",
      { sample: true },
    );
    list.replaceChildren(el("li", { class: "muted empty", text: "No documents yet — add a folder." }));
    return;
  }
  $("sx-first-run").hidden = true;
  // Re-index reads one document again; Remove takes it out (ingests of its folder then
  // leave it out); a removed document is listed with Restore (a re-index).
  const action = (label, testid, title, fn) =>
    el("button", {
      type: "button",
      class: "small doc-action",
      "data-testid": testid,
      title,
      text: label,
      onclick: (ev) => run(ev.currentTarget, fn),
    });
  const reindex = (path) => async () => {
    await api("POST", "/api/document/reindex", { path });
    await loadKb();
  };
  list.replaceChildren(
    ...docs.map((d) =>
      el(
        "li",
        { class: "doc-row" },
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
        action("Re-index", "doc-reindex", `Read ${d.path} again`, reindex(d.path)),
        action("Remove", "doc-remove", `Take ${d.path} out of the knowledge base`, async () => {
          if (!window.confirm(`Remove ${d.path} from the knowledge base? The file itself stays.`)) return;
          await api("POST", "/api/document/remove", { path: d.path });
          await loadKb();
        }),
      ),
    ),
    ...removed.map((path) =>
      el(
        "li",
        { class: "doc-row removed", "data-testid": "doc-removed", dataset: { path } },
        el("span", { class: "doc-path", text: path }),
        el("span", { class: "muted", text: "removed" }),
        action("Restore", "doc-restore", `Add ${path} back`, reindex(path)),
      ),
    ),
  );
}

/**
 * The first-run panel: what to do on an empty knowledge base (with the sample offered), or
 * why the engine cannot start (missing models: the message names the fix) with a retry.
 */
export function showFirstRun(title, text, { sample = false, retry = null } = {}) {
  $("sx-first-run-title").textContent = title;
  $("sx-first-run-text").textContent = text;
  $("sx-add-sample").hidden = !sample;
  const again = $("sx-first-run-retry");
  again.hidden = !retry;
  again.onclick = retry ? () => run(again, retry) : null;
  $("sx-first-run").hidden = false;
}

async function addSample() {
  const out = await api("POST", "/api/sample-kb", {});
  $("sx-folder").value = out.path;
  await ingestFolder(out.path);
}

/** Wires the folder form and Re-index; the list itself is loaded by the caller. */
export function setupLibrary() {
  setupKbs(loadKb);
  $("sx-folder").value = lastFolder;
  $("sx-add-sample").addEventListener("click", () => run($("sx-add-sample"), addSample));
  $("sx-ingest-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-add-folder"), () => ingestFolder($("sx-folder").value));
  });
  // The desktop app has the system's folder chooser and takes dropped folders.
  if (inTauri()) {
    const pick = $("sx-pick-folder");
    pick.hidden = false;
    pick.addEventListener("click", () =>
      run(pick, async () => {
        const path = await pickFolder();
        if (!path) return;
        $("sx-folder").value = path;
        await ingestFolder(path);
      }),
    );
    onDrop((paths) =>
      run(null, async () => {
        document.querySelector('.nav-btn[data-screen="library"]')?.click();
        for (const path of paths) {
          $("sx-folder").value = path;
          await ingestFolder(path);
        }
      }),
    );
  }
  $("sx-reindex").addEventListener("click", () =>
    run($("sx-reindex"), () => {
      if (!lastFolder) throw new Error("No folder added yet: add one first.");
      $("sx-folder").value = lastFolder;
      return ingestFolder(lastFolder);
    }),
  );
}
