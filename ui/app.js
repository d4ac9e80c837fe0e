// Sextant web UI bootstrap: screen switching, the health line, and wiring of the six
// screens in screens/ over the local API (see docs/API.md). All engine calls go through
// client.js.
import { api, inTauri, setToken } from "./client.js";
import { $, run, clearError } from "./dom.js";
import { setupAsk } from "./screens/ask.js";
import { setupInterview } from "./screens/interview.js";
import { loadKb, setupLibrary, showFirstRun } from "./screens/library.js";
import { openReader, setupReader } from "./screens/reader.js";
import { loadModels, setupModels } from "./screens/models.js";
import { enterRouter, setupRouter } from "./screens/router.js";

const SCREENS = ["library", "ask", "reader", "interview", "router", "models"];

function show(name) {
  if (!SCREENS.includes(name)) name = "library";
  for (const s of SCREENS) $(`sx-screen-${s}`).hidden = s !== name;
  for (const b of document.querySelectorAll(".nav-btn")) {
    const on = b.dataset.screen === name;
    b.classList.toggle("active", on);
    if (on) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  document.body.dataset.screen = name;
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  if (name === "router") enterRouter();
  if (name === "models") run(null, loadModels);
}

/** The engine's health line; when it cannot start (the desktop app without its models), the
 * first-run panel says why and what to run, and checks again on request. */
async function health() {
  let h;
  try {
    h = await api("GET", "/api/health");
  } catch (e) {
    if (e.code !== "not_ready") throw e;
    show("library");
    const retry = async () => {
      if (await health()) await loadKb();
    };
    showFirstRun("Sextant cannot start yet", `${e.message}\n\nSextant checks again every few seconds.`, { retry });
    // Checked again until it starts (the models pulled in a terminal, say).
    clearTimeout(health.again);
    health.again = setTimeout(() => run(null, retry), 3000);
    return false;
  }
  const parts = [h.version ? `v${h.version}` : null, h.llm, h.embedder, inTauri() ? "desktop" : null];
  $("sx-health").textContent = parts.filter(Boolean).join(" · ");
  $("sx-health").title = h.kb ? `knowledge base: ${h.kb}` : "";
  return true;
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

  setupLibrary();
  setupAsk();
  setupReader(show);
  setupInterview();
  setupRouter();
  setupModels(health);

  show(location.hash.slice(1) || "library");
  run(null, async () => {
    if (await health()) await loadKb();
  });
  document.body.dataset.ready = "true";
}

window.sextant = { openReader, show };
init();
