// The Router console: route a forensic summary through a flow and browse the decisions log.
import { api } from "../client.js";
import { $, el, run, confidenceClass, setBadge } from "../dom.js";

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

let logLoaded = false;

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
  // The forensic facts the decision was made on: what to check it against.
  $("sx-rests-on").replaceChildren(...(d.rests_on || []).map((f) => el("li", { "data-testid": "rests-on-fact", text: f })));
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

/** Called each time the console is shown: the log is fetched on the first visit only. */
export function enterRouter() {
  if (logLoaded) return;
  logLoaded = true;
  run(null, loadLog);
}

export function setupRouter() {
  $("sx-forensics").value = JSON.stringify(SAMPLE_FORENSICS, null, 2);
  $("sx-route-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-route-btn"), route);
  });
  $("sx-log-form").addEventListener("submit", (e) => {
    e.preventDefault();
    run($("sx-log-btn"), loadLog);
  });
}
