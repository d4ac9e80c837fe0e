// The Ask screen's "Earlier conversations": each kept conversation, to reopen, rename,
// delete (with Undo: its turns are kept) or export as Markdown with its citations as
// links (shown to copy, and in a browser also downloaded as a file).
import { api, inTauri } from "../client.js";
import { $, actionButton, el, run } from "../dom.js";

let open = async () => {};

/** The conversation's title swapped for a field that renames it on Enter or Save. */
function startRename(row, c) {
  const input = el("input", { type: "text", value: c.title, "data-testid": "conversation-rename-input", "aria-label": "New title" });
  const form = el(
    "form",
    {
      class: "row",
      onsubmit: (ev) => {
        ev.preventDefault();
        run(null, async () => {
          await api("POST", "/api/conversation/rename", { id: c.id, title: input.value.trim() });
          await loadConversations();
        });
      },
    },
    input,
    el("button", { type: "submit", class: "small primary", "data-testid": "conversation-rename-save", text: "Save" }),
  );
  row.replaceChildren(form);
  input.focus();
  input.select();
}

async function exportConversation(c) {
  const v = await api("GET", `/api/conversation/export?id=${encodeURIComponent(c.id)}`);
  const text = el("textarea", { readonly: true, rows: 12, "data-testid": "conversation-export-text", "aria-label": "The conversation as Markdown" });
  text.value = v.markdown;
  const copy = el("button", {
    type: "button",
    class: "small",
    "data-testid": "conversation-export-copy",
    text: "Copy",
    onclick: () => {
      text.select();
      navigator.clipboard?.writeText(v.markdown).catch(() => document.execCommand("copy"));
    },
  });
  const close = el("button", { type: "button", class: "small", text: "Close", onclick: () => $("sx-conversation-export").replaceChildren() });
  $("sx-conversation-export").replaceChildren(el("div", { class: "muted small", text: `${v.title}: Markdown, citations as links` }), text, el("div", { class: "row" }, copy, close));
  if (!inTauri()) {
    const a = el("a", { href: URL.createObjectURL(new Blob([v.markdown], { type: "text/markdown" })), download: `${v.title.replace(/[^\w .-]+/g, "_").slice(0, 60) || "conversation"}.md` });
    a.click();
    URL.revokeObjectURL(a.href);
  }
}

async function deleteConversation(c) {
  await api("POST", "/api/conversation/delete", { id: c.id });
  await loadConversations();
  const undo = el("button", {
    type: "button",
    class: "small",
    "data-testid": "conversation-undo",
    text: "Undo",
    onclick: (ev) =>
      run(ev.currentTarget, async () => {
        await api("POST", "/api/conversation/restore", { id: c.id });
        $("sx-conversation-notice").replaceChildren();
        await loadConversations();
      }),
  });
  $("sx-conversation-notice").replaceChildren(el("span", { text: `Deleted “${c.title}”. ` }), undo);
}

export async function loadConversations() {
  const v = await api("GET", "/api/conversations");
  const list = $("sx-conversations");
  if (!v.conversations.length) {
    list.replaceChildren(el("li", { class: "muted", text: "No conversations yet." }));
    return;
  }
  list.replaceChildren(
    ...v.conversations.map((c) => {
      const row = el("li", { "data-testid": "conversation-row", dataset: { id: c.id } });
      row.append(
        el("button", {
          type: "button",
          class: "link",
          "data-testid": "conversation-item",
          dataset: { id: c.id },
          text: `${c.title} (${c.turns} ${c.turns === 1 ? "question" : "questions"})`,
          onclick: () => run(null, () => open(c.id)),
        }),
        actionButton("Rename", "conversation-rename", "Give it another title", async () => startRename(row, c)),
        actionButton("Export", "conversation-export", "As Markdown, its citations as links", () => exportConversation(c)),
        actionButton("Delete", "conversation-delete", "Take it off the list (Undo brings it back)", () => deleteConversation(c)),
      );
      return row;
    }),
  );
}

/** `openConversation(id)` reopens one in the thread. */
export function setupConversations(openConversation) {
  open = openConversation;
}
