// The Models screen: the models in the store with their size, family and purpose, the
// ones in use, switching the answer model, and importing a GGUF file (the system's file
// chooser in the desktop app; a typed path in a browser). The engine checks every file
// (sha256, architecture, quantization) and says what it cannot run.
import { api, inTauri, pickModelFile } from "../client.js";
import { $, el, run } from "../dom.js";

let onChange = async () => {};

function size(bytes) {
  if (!bytes) return "—";
  const mb = bytes / 1e6;
  return mb >= 1000 ? `${(mb / 1000).toFixed(1)} GB` : `${mb.toFixed(0)} MB`;
}

function row(m) {
  const [word, ...rest] = (m.purpose || "").split(":");
  const meaning = rest.join(":").trim();
  const usable = m.role === "llm" && m.state === "verified" && !m.in_use;
  const use = usable
    ? el("button", {
        type: "button",
        class: "small primary",
        "data-testid": "model-use",
        title: `Answer with ${m.name} from now on`,
        text: "Use",
        onclick: (ev) =>
          run(ev.currentTarget, async () => {
            render(await api("POST", "/api/models/use", { name: m.name }));
            await onChange();
          }),
      })
    : null;
  const state = m.in_use ? "in use" : m.state === "verified" ? "" : m.state;
  return el(
    "li",
    { class: `model-row${m.in_use ? " current" : ""}`, "data-testid": "model-row", dataset: { name: m.name, role: m.role } },
    el("div", { class: "model-name" }, el("strong", { text: m.name }), state ? el("span", { class: "badge", "data-testid": "model-state", text: state }) : null),
    el("div", { class: "model-meta", "data-testid": "model-meta", text: [word, m.family, m.quantization, size(m.bytes)].filter(Boolean).join(" · ") }),
    meaning ? el("div", { class: "model-purpose", text: meaning }) : null,
    m.state !== "verified" ? el("div", { class: "model-detail", text: m.detail }) : null,
    use,
  );
}

function render(data) {
  const list = $("sx-model-list");
  list.replaceChildren(...data.models.map(row));
  $("sx-models-dir").textContent = `Models are kept in ${data.dir}. The embedder is the knowledge base's own; switching it means re-ingesting.`;
}

async function importPath(path) {
  const body = { path };
  const name = $("sx-model-import-name").value.trim();
  if (name) body.name = name;
  const data = await api("POST", "/api/models/import", body);
  render(data);
  $("sx-model-import-status").textContent = `Imported ${data.imported}: verified and listed below; press Use to answer with it.`;
}

export async function loadModels() {
  render(await api("GET", "/api/models"));
}

export function setupModels(changed) {
  onChange = changed;
  const desktop = inTauri();
  $("sx-model-import-path").hidden = desktop;
  $("sx-model-import-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    run($("sx-model-import"), async () => {
      $("sx-model-import-status").textContent = "";
      if (desktop) {
        const path = await pickModelFile();
        if (path) await importPath(path);
      } else {
        const path = $("sx-model-import-path").value.trim();
        if (!path) throw new Error("Type the full path of a GGUF file on this computer.");
        await importPath(path);
      }
    });
  });
}
