// The Ask screen: a question in either answer format, the answer with its confidence,
// and citations that open the Reader at the cited section.
import { api } from "../client.js";
import { $, el, run, confidenceClass, setBadge } from "../dom.js";
import { openReader } from "./reader.js";

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

export function setupAsk() {
  $("sx-ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const format = document.querySelector('input[name="format"]:checked').value;
    run($("sx-ask-btn"), () => ask($("sx-question").value, format, $("sx-mode").value));
  });
  // Enter asks, as in a chat box; Shift+Enter still makes a new line.
  $("sx-question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("sx-ask-form").requestSubmit();
    }
  });
}
