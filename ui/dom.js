// Small helpers every screen shares: element lookup and creation, storage, the error
// banner, busy buttons and confidence badges.

export const $ = (id) => document.getElementById(id);

/** Creates an element; `attrs` keys: class, text, dataset, on<event>, or attributes. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function storageGet(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

export function storageSet(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* storage disabled */
  }
}

// ---------------------------------------------------------------- errors, busy state

export function showError(message) {
  $("sx-error-text").textContent = message;
  $("sx-error").hidden = false;
}

export function clearError() {
  $("sx-error").hidden = true;
  $("sx-error-text").textContent = "";
}

/** Runs an action from a button: disables it, clears the banner, reports failures. */
export async function run(button, fn) {
  if (button) {
    button.disabled = true;
    button.classList.add("busy");
  }
  clearError();
  try {
    return await fn();
  } catch (e) {
    console.warn(e);
    showError(e && e.message ? e.message : String(e));
    return undefined;
  } finally {
    if (button) {
      button.disabled = false;
      button.classList.remove("busy");
    }
  }
}

/** A small button that runs `fn` through `run` (busy while it runs, failures to the banner). */
export function actionButton(label, testid, title, fn) {
  return el("button", {
    type: "button",
    class: "small",
    "data-testid": testid,
    title,
    text: label,
    onclick: (ev) => run(ev.currentTarget, fn),
  });
}

// ---------------------------------------------------------------- confidence badges

export function confidenceClass(format, c) {
  if (typeof c === "number") return c >= 0.78 ? "high" : c >= 0.63 ? "medium" : "low";
  const s = String(c || "").toLowerCase();
  return ["high", "medium", "low"].includes(s) ? s : "low";
}

export function setBadge(node, level, text) {
  node.className = `badge conf-${level}`;
  node.textContent = text;
}
