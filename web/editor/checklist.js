// RLDS Studio: the pre-launch checklist (server/services/studies/launch_check.py) as a list:
// each error and warning in the designer's words, with its fix and a link that opens the
// editor at its field. Shown beside Validate in the editor and at Activate.

import { el } from "../shared/api.js";
import { placeOf } from "./fieldmarks.js";

const count = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;

/** One item: its level, where, what goes wrong, the fix, and "Go to <field>". */
function itemRow(item, goTo) {
  const where = placeOf(item.loc);
  return el("li", { class: `checklist-item checklist-${item.level}`, dataset: { code: item.code, field: item.field } },
    el("span", { class: `badge ${item.level === "error" ? "badge-problem" : "badge-paused"}` },
      item.level === "error" ? "Must fix" : "Check"),
    el("div", { class: "checklist-text" },
      el("p", { class: "checklist-message" }, item.message),
      item.fix ? el("p", { class: "checklist-fix" }, el("strong", {}, "Fix: "), item.fix) : null,
      el("button", { type: "button", class: "link-button checklist-go", onclick: () => goTo(item) }, `Go to ${where}`)));
}

/**
 * Draw ``items`` in ``box`` under a heading; ``goTo(item)`` opens the editor at the item's
 * field. ``actions`` (elements) go under the list. ``emptyText``: what an empty list says.
 */
export function renderChecklist(box, items, { title, intro, goTo, actions = [], emptyText } = {}) {
  const errors = items.filter((i) => i.level === "error");
  const warnings = items.filter((i) => i.level !== "error");
  const summary = !items.length ? emptyText
    : errors.length ? `${count(errors.length, "thing")} to fix before activating${warnings.length ? `, ${count(warnings.length, "warning")} to check` : ""}.`
      : `${count(warnings.length, "warning")} to check: you may activate anyway.`;
  box.replaceChildren(...[
    el("h4", { class: "checklist-title" }, title),
    el("p", { class: `checklist-summary ${errors.length ? "checklist-blocked" : ""}` }, summary),
    intro ? el("p", { class: "muted small" }, intro) : null,
    items.length ? el("ul", { class: "checklist-items", "aria-label": title }, [...errors, ...warnings].map((i) => itemRow(i, goTo))) : null,
    actions.length ? el("div", { class: "actions" }, actions) : null].filter(Boolean));
  box.hidden = false;
}
