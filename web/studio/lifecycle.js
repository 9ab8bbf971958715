// RLDS Studio, the designer's page: a study's lifecycle (activate, pause, resume, close,
// delete) and its permalink (copy, rotate).

import { el, toast } from "../shared/api.js";
import { STATE_LABELS, confirmAction } from "./ui.js";

const $ = (selector) => document.querySelector(selector);
const ctx = { api: null, selected: () => null, withDetailErrors: null, refreshAfterWrite: null, deleted: null };

/** ``api``, ``selected()``, ``withDetailErrors(work)``, ``refreshAfterWrite(study)``, ``deleted()``. */
export function initLifecycle(options) {
  Object.assign(ctx, options);
}

export function lifecycleButtons(study) {
  const move = (label, target, cls = "btn") =>
    el("button", { type: "button", class: cls, onclick: () => changeState(target) }, label);
  const close = el("button", { type: "button", class: "btn btn-danger-outline", onclick: closeStudy }, "Close study");
  switch (study.state) {
    case "draft":
      return [
        move("Activate", "active", "btn btn-primary"),
        el("button", { type: "button", class: "btn btn-danger-outline", onclick: deleteStudy }, "Delete draft"),
      ];
    case "active":
      return [move("Pause", "paused"), close];
    case "paused":
      return [move("Resume", "active", "btn btn-primary"), close];
    default:
      return [el("p", { class: "muted small" }, "This study is closed: its episodes are kept, nobody can play it.")];
  }
}

function changeState(target) {
  const study = ctx.selected();
  return ctx.withDetailErrors(async () => {
    const updated = await ctx.api("POST", `/api/studies/${study.id}/state`, { json: { state: target } });
    await ctx.refreshAfterWrite(updated);
    toast(`“${updated.name}” is now ${STATE_LABELS[updated.state].toLowerCase()}.`, "success");
  });
}

async function closeStudy() {
  const study = ctx.selected();
  const ok = await confirmAction(
    "Close this study?",
    `Nobody will be able to play “${study.name}” any more. Its episodes are kept. This cannot be undone.`,
    "Close study",
  );
  if (ok) await changeState("closed");
}

async function deleteStudy() {
  const study = ctx.selected();
  const ok = await confirmAction(
    "Delete this draft?",
    `“${study.name}” will be deleted for good.`,
    "Delete draft",
  );
  if (!ok) return;
  await ctx.withDetailErrors(async () => {
    await ctx.api("DELETE", `/api/studies/${study.id}`);
    await ctx.deleted();
    toast(`Deleted “${study.name}”.`, "success");
  });
}

export function rotateLink() {
  const study = ctx.selected();
  return ctx.withDetailErrors(async () => {
    const updated = await ctx.api("POST", `/api/studies/${study.id}/permalink`);
    await ctx.refreshAfterWrite(updated);
    toast("A new link was made; the old one no longer works.", "success");
  });
}

export async function copyLink() {
  const input = $("#permalink-url");
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    // No clipboard permission (e.g. plain http): fall back to selecting the text.
    input.select();
    if (!document.execCommand("copy")) {
      toast("Copy the selected link with Ctrl+C.", "info");
      return;
    }
  }
  toast("Link copied.", "success");
}
