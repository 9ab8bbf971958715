// RLDS Studio: browser helpers shared by the studio pages (index.html, episodes.html):
// the JSON API client, error texts, DOM building and toasts.

/** The value of cookie ``name`` ("" when it is not set). */
export function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return "";
}

// --- errors -------------------------------------------------------------------------------

/** A non-2xx answer (status 0: the server could not be reached). */
export class ApiError extends Error {
  constructor(status, body, message) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

const UNREACHABLE = "The server cannot be reached. Check your connection.";

/** An error body's own message: its text ``detail``, else its ``message``; "" when neither. */
export function errorMessage(body) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && body.message) return body.message;
  return "";
}

/** The message of an error answer (the field problems are listed apart, see ``problems``). */
export function describeError(status, body) {
  const message = errorMessage(body);
  if (message) return message;
  if (status === 422) return "The request is not valid.";
  return `The server answered ${status}.`;
}

/** Field path of a validation error, e.g. ``environments.0.source.id``. */
function fieldPath(loc) {
  const parts = Array.isArray(loc) ? [...loc] : [];
  if (parts.length > 1 && parts[0] === "body") parts.shift();
  return parts.join(".");
}

/** Lines describing a validation error's problems (one per field). */
export function problems(body) {
  if (!body || !Array.isArray(body.detail)) return [];
  return body.detail.map((item) => {
    const path = fieldPath(item.loc);
    return path ? `${path}: ${item.msg}` : String(item.msg);
  });
}

// --- the API ------------------------------------------------------------------------------

/**
 * Make the page's API function: ``api(method, path, { json, text, contentType })``.
 *
 * Writes carry the CSRF header (the ``studio_csrf`` cookie); ``json`` is sent as JSON,
 * ``text`` as ``contentType`` (text/plain by default). Resolves to the parsed JSON answer,
 * the text of a non-JSON one, or null for 204. Throws ApiError on a non-2xx answer, with
 * ``describe(status, body, isJson)`` as its message (``body`` is ``{detail: text}`` for a
 * non-JSON answer). ``onUnauthorized(error, path)`` runs on a 401 before the error is
 * thrown; it may throw an error of its own instead.
 */
export function createApi({ describe = describeError, onUnauthorized } = {}) {
  return async function api(method, path, { json, text, contentType } = {}) {
    const headers = {};
    let body;
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (text !== undefined) {
      headers["Content-Type"] = contentType || "text/plain";
      body = text;
    }
    if (!["GET", "HEAD"].includes(method)) headers["X-CSRF-Token"] = cookie("studio_csrf");
    let res;
    try {
      res = await fetch(path, { method, headers, body, credentials: "same-origin" });
    } catch {
      throw new ApiError(0, { detail: UNREACHABLE }, UNREACHABLE);
    }
    if (res.status === 204) return null;
    const isJson = (res.headers.get("content-type") || "").includes("json");
    const payload = isJson ? await res.json() : await res.text();
    if (!res.ok) {
      const errorBody = isJson ? payload : { detail: payload };
      const error = new ApiError(res.status, errorBody, describe(res.status, errorBody, isJson));
      if (res.status === 401 && onUnauthorized) onUnauthorized(error, path);
      throw error;
    }
    return payload;
  };
}

// --- DOM ----------------------------------------------------------------------------------

/**
 * Build an element: ``class``, ``dataset``, ``style`` (an object of CSS properties),
 * ``on<event>`` listeners, other attributes (left out when undefined, null or false);
 * children may be nested arrays, null ones are skipped. Styles go through the CSSOM: the
 * Content-Security-Policy refuses style attributes.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") Object.assign(node.style, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** Show an error (message plus one line per field problem) in an alert box; null hides it. */
export function showError(box, error) {
  box.replaceChildren();
  if (!error) {
    box.hidden = true;
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  box.append(el("p", { class: "alert-message" }, message));
  const lines = error instanceof ApiError ? problems(error.body) : [];
  if (lines.length) box.append(el("ul", { class: "problems" }, lines.map((line) => el("li", {}, line))));
  box.hidden = false;
}

/**
 * Show a message in the page's ``#toasts`` box for ``duration`` ms; ``duration: 0`` keeps it
 * until its × is pressed. A message already on screen is not shown a second time.
 */
export function toast(message, kind = "info", { duration = 4000, role } = {}) {
  const box = document.getElementById("toasts");
  for (const shown of box.querySelectorAll(".toast")) {
    if (shown.dataset.message === message && shown.dataset.kind === kind) return shown;
  }
  const item = el("div", { class: `toast toast-${kind}`, role, dataset: { message, kind } },
    el("span", { class: "toast-text" }, message));
  if (duration) setTimeout(() => item.remove(), duration);
  else {
    item.classList.add("toast-sticky");
    item.append(el("button", { type: "button", class: "toast-close", "aria-label": "Dismiss",
                               onclick: () => item.remove() }, "×"));
  }
  box.append(item);
  return item;
}
