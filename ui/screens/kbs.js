// The knowledge bases, at the top of the Library: each with its documents and folders;
// the open one with its live status (its folders followed, the last sync and what it
// changed). Open, create, rename and remove them here.
import { api } from "../client.js";
import { $, actionButton, el, run } from "../dom.js";

let onSwitch = async () => {};
// The open KB's document count last shown, to reload the list when a sync changes it.
let shownDocuments = null;

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** The open KB's live status as a sentence. */
function describeLive(live) {
  if (!live) return "";
  const folders = live.folders || [];
  const failed = (live.failed || []).map((f) => `cannot follow ${f.folder}: ${f.reason}`);
  let text;
  switch (live.state) {
    case "syncing":
      text = "Syncing changes…";
      break;
    case "following": {
      text = `Following ${plural(folders.length, "folder")} for changes`;
      if (live.last_sync) {
        const c = live.last_changes || {};
        const when = new Date(live.last_sync * 1000).toLocaleTimeString();
        text += ` · last sync ${when}: ${c.added ?? 0} added, ${c.changed ?? 0} changed, ${c.removed ?? 0} removed`;
      }
      break;
    }
    case "no_folders":
      text = "Folders added to it will be followed for changes";
      break;
    case "unavailable":
      text = "Not following folders (start sextant serve with --watch)";
      break;
    default:
      text = "Not following folders (paused)";
  }
  return [text, ...failed, live.error].filter(Boolean).join(" · ");
}

/** The open KB's name swapped for a field that renames it on Enter or Save. */
function startRename(row, name) {
  const input = el("input", { type: "text", value: name, "data-testid": "kb-rename-input", "aria-label": "New name" });
  const save = el("button", { type: "submit", class: "small primary", "data-testid": "kb-rename-save", text: "Save" });
  const form = el("form", { class: "row kb-rename" }, input, save);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    run(save, async () => {
      const to = input.value.trim();
      if (to && to !== name) await api("POST", "/api/kbs/rename", { name, to });
      await loadKbs();
    });
  });
  row.querySelector(".kb-name").replaceWith(form);
  input.select();
}

function renderRow(kb) {
  const meta = [
    plural(kb.documents ?? 0, "document"),
    kb.folders && kb.folders.length ? `from ${kb.folders.join(", ")}` : "no folders yet",
    kb.error ? `unreadable: ${kb.error}` : null,
  ].filter(Boolean);
  const row = el(
    "li",
    { class: `kb-row${kb.current ? " current" : ""}`, "data-testid": "kb-row", dataset: { name: kb.name } },
    el("span", { class: "kb-name", text: kb.name }),
    kb.current ? el("span", { class: "badge", "data-testid": "kb-current", text: "open" }) : null,
    el("span", { class: "kb-meta muted", text: meta.join(" · ") }),
  );
  if (kb.current) {
    const live = kb.live || {};
    row.append(el("div", { class: "kb-live", "data-testid": "kb-live", dataset: { state: live.state || "" }, text: describeLive(live) }));
    if (kb.in_home) row.append(actionButton("Rename", "kb-rename", `Rename ${kb.name}`, async () => startRename(row, kb.name)));
    if (live.state && live.state !== "unavailable") {
      const on = live.state === "off";
      row.append(
        actionButton(on ? "Follow folders" : "Pause following", "kb-watch", "Re-ingest when files change in its folders", async () => {
          await api("POST", "/api/kbs/watch", { on });
          await loadKbs();
        }),
      );
    }
    return row;
  }
  row.append(
    actionButton("Open", "kb-open", `Open ${kb.name}`, async () => {
      await api("POST", "/api/kbs/switch", { name: kb.in_home ? kb.name : kb.path });
      await loadKbs();
      await onSwitch();
    }),
  );
  if (kb.in_home) {
    row.append(
      actionButton("Remove", "kb-remove", `Remove ${kb.name}`, async () => {
        if (!window.confirm(`Remove the knowledge base ${kb.name}? Its index is moved aside; your documents stay where they are.`)) return;
        await api("POST", "/api/kbs/remove", { name: kb.name });
        await loadKbs();
      }),
    );
  }
  return row;
}

/** Fills the list; reloads the documents (`onSwitch`) when a sync changed the open KB. */
export async function loadKbs() {
  const out = await api("GET", "/api/kbs");
  const kbs = (out && out.kbs) || [];
  $("sx-kb-list").replaceChildren(...kbs.map(renderRow));
  const open = kbs.find((k) => k.current);
  const docs = open ? open.documents : null;
  const changed = shownDocuments !== null && docs !== shownDocuments;
  shownDocuments = docs;
  return { open, changed };
}

/** Wires the create form and the live refresh; `switched` reloads the documents. */
export function setupKbs(switched) {
  onSwitch = async () => {
    // The last ingest's progress and summary belong to the KB that was open.
    $("sx-ingest-progress").hidden = true;
    $("sx-ingest-summary").hidden = true;
    await switched();
  };
  $("sx-kb-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-kb-create"), async () => {
      const name = $("sx-kb-new-name").value.trim();
      if (!name) throw new Error("Name the new knowledge base first.");
      await api("POST", "/api/kbs/create", { name });
      $("sx-kb-new-name").value = "";
      await api("POST", "/api/kbs/switch", { name });
      await loadKbs();
      await onSwitch();
    });
  });
  // While the Library is shown, the live status (and the documents, when a sync changed
  // them) stays current.
  setInterval(() => {
    if (document.body.dataset.screen !== "library" || document.hidden) return;
    loadKbs()
      .then(({ changed }) => (changed ? switched() : null))
      .catch(() => {});
  }, 2000);
}
