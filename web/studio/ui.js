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

/** Ask for confirmation in a modal dialog; resolves true when confirmed. */
export function confirmAction(title, text, okLabel) {
  const dialog = $("#confirm-dialog");
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
