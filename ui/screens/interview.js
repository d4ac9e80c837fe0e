// The Interview screen: a guided interview, one question per turn, with its stage, depth
// and completeness.
import { api } from "../client.js";
import { $, el, run } from "../dom.js";

let iv = { session: null, done: false };

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
  iv.session = out.session ?? iv.session;
  iv.done = !!out.done;
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
  $("sx-iv-session").textContent = iv.session ? `session ${iv.session}` : "";
  const done = iv.done;
  $("sx-iv-answer").disabled = done;
  $("sx-iv-send").disabled = done;
  $("sx-screen-interview").dataset.done = String(done);
  if (done) addTurn("note", "Interview complete.");
  else $("sx-iv-answer").focus();
}

async function startInterview() {
  iv = { session: null, done: false };
  $("sx-transcript").replaceChildren();
  const out = await api("POST", "/api/interview", { session: null, answer: null });
  renderInterview(out || {});
}

async function sendAnswer() {
  const answer = $("sx-iv-answer").value.trim();
  if (!iv.session) throw new Error("Start an interview first.");
  if (iv.done) throw new Error("The interview is over; start a new one.");
  if (!answer) throw new Error("Type an answer first.");
  addTurn("user", answer);
  $("sx-iv-answer").value = "";
  $("sx-iv-answer").disabled = true;
  try {
    const out = await api("POST", "/api/interview", { session: iv.session, answer });
    renderInterview(out || {});
  } catch (e) {
    $("sx-transcript").lastElementChild?.remove();
    $("sx-iv-answer").value = answer; // keep the text so it can be sent again
    throw e;
  } finally {
    if (!iv.done) $("sx-iv-answer").disabled = false;
  }
}

export function setupInterview() {
  $("sx-iv-start").addEventListener("click", () => run($("sx-iv-start"), startInterview));
  $("sx-iv-form").addEventListener("submit", (e) => {
    e.preventDefault();
    // run() re-enables Send when it finishes; it must stay off once the interview is over.
    run($("sx-iv-send"), sendAnswer).then(() => {
      $("sx-iv-send").disabled = iv.done || !iv.session;
    });
  });
  // Enter makes a new line in an answer, so Ctrl/Cmd+Enter sends it.
  $("sx-iv-answer").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      $("sx-iv-form").requestSubmit();
    }
  });
}
