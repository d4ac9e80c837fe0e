// The Ask screen: a conversation. Each question is asked in the current conversation (a
// follow-up is read with the turns before it, by the engine), its answer shown with its
// confidence and citations that open the Reader at the cited section; earlier turns stay
// above it as a thread. Earlier conversations (conversations.js) can be reopened, renamed,
// deleted and exported; the answer format and mode sit behind "Answer options".
import { api, askStream } from "../client.js";
import { $, el, run, confidenceClass, setBadge } from "../dom.js";
import { highlightCode } from "../highlight.js";
import { loadConversations, setupConversations } from "./conversations.js";
import { addCopyButtons, openReader } from "./reader.js";

/** The anchor to open for a citation: its anchor, else the PDF page's section. */
function citationAnchor(c) {
  if (c.anchor) return c.anchor;
  if (c.page != null) return `pdfpage_${c.page}`;
  return null;
}

let asking = null; // the AbortController of the answer being generated
let conversation = null; // the current conversation's id; null: the next question starts one
let shown = null; // the answer on screen ({question, out}), moved into the thread by the next

/** One earlier turn in the thread: the question, the answer's text, its sources. */
function threadItem(question, answer, citations, readAs) {
  return el(
    "li",
    { "data-testid": "thread-turn" },
    el("div", { class: "turn-q", text: question }),
    readAs ? el("div", { class: "muted small", text: `Read as: ${readAs}` }) : null,
    el("div", { class: "turn-a", text: answer || "" }),
    citations.length
      ? el(
          "div",
          { class: "turn-sources" },
          ...citations.map((c) =>
            el("button", {
              type: "button",
              text: c.label || c.file,
              onclick: () => run(null, () => openReader(c.file, citationAnchor(c), { page: c.page, quote: c.quote })),
            }),
          ),
        )
      : null,
  );
}

function answerText(format, response) {
  const r = response || {};
  return format === "navigator" ? r.answer : r.final_answer;
}

/** The follow-up's reading, when the engine read it with the turns before it. */
function readAs(out) {
  return typeof out.decision === "string" && out.decision.startsWith("Read as a follow-up") ? out.standalone : null;
}

function pushShownToThread() {
  if (!shown) return;
  const { question, out } = shown;
  $("sx-thread").append(
    threadItem(question, answerText(out.format, out.response), Array.isArray(out.citations) ? out.citations : [], readAs(out)),
  );
  shown = null;
}

/** Starts a new conversation: the thread and the answer are cleared. */
function newConversation() {
  conversation = null;
  shown = null;
  $("sx-thread").replaceChildren();
  $("sx-ask-result").hidden = true;
  $("sx-question").focus();
}

/** Reopens a kept conversation: its turns become the thread, the next question follows them. */
async function openConversation(id) {
  const v = await api("GET", `/api/conversation?id=${encodeURIComponent(id)}`);
  conversation = id;
  shown = null;
  $("sx-ask-result").hidden = true;
  $("sx-thread").replaceChildren(
    ...v.turns.map((t) =>
      threadItem(t.question, answerText(t.format, t.response), t.citations || [], t.standalone !== t.question && t.decision.startsWith("Read as a follow-up") ? t.standalone : null),
    ),
  );
  $("sx-history").open = false;
}

async function ask(question, format, mode) {
  question = question.trim();
  if (!question) throw new Error("Type a question first.");
  const controller = new AbortController();
  asking = controller;
  $("sx-ask-result").dataset.state = "asking";
  const answerEl = $("sx-answer");
  const stop = $("sx-stop-btn");
  stop.hidden = false;
  let draft = "";
  pushShownToThread();
  let out;
  try {
    out = await askStream(
      { question, format, mode, conversation: conversation || "new" },
      (piece) => {
        // The model's draft, shown as plain text until the checked answer replaces it.
        if (!draft) {
          $("sx-ask-result").hidden = false;
          $("sx-ask-result").dataset.state = "drafting";
          answerEl.classList.remove("rendered");
        }
        draft += piece;
        answerEl.textContent = draft;
      },
      controller.signal,
    );
    if (out && out.conversation) conversation = out.conversation;
    shown = { question, out: out || {} };
    renderAnswer(out || {}, format);
    $("sx-ask-result").dataset.state = "done";
  } catch (e) {
    if (!e.stopped) throw e;
    $("sx-ask-result").dataset.state = "stopped";
    if (draft) answerEl.textContent = `${draft} … (stopped)`;
  } finally {
    stop.hidden = true;
    if (asking === controller) asking = null;
  }
}

/** Stops the answer being generated, if any (the Stop button, Esc). */
function stopAsking() {
  if (asking) asking.abort();
}

function renderAnswer(out, askedFormat) {
  const format = out.format || askedFormat;
  const r = out.response || {};
  const citations = Array.isArray(out.citations) ? out.citations : [];
  const answer = format === "navigator" ? r.answer : r.final_answer;
  const answerEl = $("sx-answer");
  const reading = readAs(out);
  $("sx-read-as").hidden = !reading;
  $("sx-read-as").textContent = reading ? `Read as a follow-up: ${reading}` : "";
  if (typeof out.answer_html === "string" && out.answer_html) {
    // Rendered by the engine from the answer's Markdown; raw HTML in it is shown as text.
    answerEl.innerHTML = out.answer_html;
    answerEl.classList.add("rendered");
    addCopyButtons(answerEl);
    highlightCode(answerEl);
  } else {
    answerEl.textContent = answer ?? "(no answer)";
    answerEl.classList.remove("rendered");
  }
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
      ...citations.map((c) => {
        const anchor = citationAnchor(c);
        // Citations of one place are listed once: each finds its source or chunk by name.
        const src = sources.find((s) => s.file === c.file && `${s.file} › ${s.section}` === c.label) || null;
        const chunk = chunks.find((ch) => ch.id === c.id);
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
              onclick: () => run(null, () => openReader(c.file, anchor, { page: c.page, quote: c.quote })),
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

export function setupAsk() {
  $("sx-ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const format = document.querySelector('input[name="format"]:checked').value;
    run($("sx-ask-btn"), () => ask($("sx-question").value, format, $("sx-mode").value));
  });
  $("sx-stop-btn").addEventListener("click", stopAsking);
  $("sx-new-conversation").addEventListener("click", newConversation);
  setupConversations(openConversation);
  $("sx-history").addEventListener("toggle", () => {
    if ($("sx-history").open) run(null, loadConversations);
  });
  // Esc stops an answer; Ctrl+K (Cmd+K) goes to the question box from anywhere.
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && asking) {
      e.preventDefault();
      stopAsking();
    } else if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") {
      e.preventDefault();
      const nav = document.querySelector('.nav-btn[data-screen="ask"]');
      if (nav) nav.click();
      $("sx-question").focus();
      $("sx-question").select();
    }
  });
  // Enter asks, as in a chat box; Shift+Enter still makes a new line.
  $("sx-question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("sx-ask-form").requestSubmit();
    }
  });
}
