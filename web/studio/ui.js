// RLDS Studio, the designer's page: small UI helpers (state badges, times, confirmation).

import { el } from "../shared/api.js";

const $ = (selector) => document.querySelector(selector);

export const STATE_LABELS = { draft: "Draft", active: "Active", paused: "Paused", closed: "Closed" };

export function badge(studyState) {
  return el("span", { class: `badge badge-${studyState}` }, STATE_LABELS[studyState] || studyState);
}

function parseTime(value) {
  // The API sends UTC times without an offset.
  return new Date(/[zZ]|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
}

function relativeTime(value) {
  const date = parseTime(value);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

export function timeElement(value) {
  const date = parseTime(value);
  return el("time", { datetime: date.toISOString(), title: date.toLocaleString() }, relativeTime(value));
}

/** The confirmation dialog: the page's own, else one made once at the end of its body. */
function confirmDialog() {
  let dialog = $("#confirm-dialog");
  if (dialog) return dialog;
  dialog = el("dialog", { id: "confirm-dialog", class: "dialog dialog-small", "aria-labelledby": "confirm-title",
                          "aria-describedby": "confirm-text" },
    el("form", { method: "dialog", class: "form" },
      el("h2", { id: "confirm-title" }, "Are you sure?"), el("p", { id: "confirm-text" }),
      el("div", { class: "actions end" },
        el("button", { type: "submit", class: "btn btn-ghost", value: "cancel" }, "Cancel"),
        el("button", { type: "submit", class: "btn btn-danger", value: "ok", id: "confirm-ok" }, "Confirm"))));
  document.body.append(dialog);
  return dialog;
}

/** Ask for confirmation in a modal dialog; resolves true when confirmed. */
export function confirmAction(title, text, okLabel) {
  const dialog = confirmDialog();
  $("#confirm-title").textContent = title;
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  dialog.returnValue = "";
  dialog.showModal();
  $("#confirm-ok").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}
