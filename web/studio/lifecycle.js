// RLDS Studio, the designer's page: a study's lifecycle (activate, pause, resume, close,
// delete), the pre-launch checklist when activating is refused or has warnings, and its
// permalink (copy, rotate after asking).

import { ApiError, el, toast } from "../shared/api.js";
import { STATE_LABELS, confirmAction } from "./ui.js";
import { renderChecklist } from "../editor/checklist.js";
import { showField } from "../editor/editor.js";

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

function changeState(target, acknowledge = false) {
  const study = ctx.selected();
  const panel = $("#launch-checklist");
  return ctx.withDetailErrors(async () => {
    let updated;
    try {
      const json = acknowledge ? { state: target, acknowledge_warnings: true } : { state: target };
      updated = await ctx.api("POST", `/api/studies/${study.id}/state`, { json });
    } catch (error) {
      // the pre-launch checklist refused it: its items, each with the way to its field
      const code = error instanceof ApiError ? error.body?.code : null;
      if (code !== "not_ready" && code !== "unacknowledged_warnings") throw error;
      showLaunchChecklist(study, target, error.body.detail, code === "not_ready");
      return;
    }
    panel.hidden = true;
    await ctx.refreshAfterWrite(updated);
    toast(`“${updated.name}” is now ${STATE_LABELS[updated.state].toLowerCase()}.`, "success");
  });
}

/** Why activating was refused (errors), or what to check first (warnings: asked once). */
function showLaunchChecklist(study, target, items, blocked) {
  const panel = $("#launch-checklist");
  const verb = target === "active" && study.state === "paused" ? "Resume" : "Activate";
  const anyway = el("button", { type: "button", class: "btn btn-primary", onclick: () => changeState(target, true) }, `${verb} anyway`);
  const cancel = el("button", { type: "button", class: "btn btn-ghost", onclick: () => { panel.hidden = true; } }, "Not now");
  renderChecklist(panel, items, {
    title: blocked ? `“${study.name}” cannot start yet` : `Check before you ${verb.toLowerCase()}`,
    intro: blocked ? "Fix each item below (Go to opens the form at its field), save, and activate again."
      : "These will not stop the study, but may cost you participants or data.",
    goTo: (item) => { showField(item); },
    actions: blocked ? [cancel] : [anyway, cancel],
  });
  panel.scrollIntoView({ block: "nearest" });
  (blocked ? panel.querySelector(".checklist-go") : anyway)?.focus();
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

export async function rotateLink() {
  const study = ctx.selected();
  const ok = await confirmAction(
    "Make a new link?",
    "The current link stops working at once: anyone who opens it is told it is no longer valid, so people who "
      + "hold it (on Prolific, MTurk or in an email) can no longer join. Participants playing now keep their open game, "
      + "but to reload, reconnect or get their completion code they need the new link; with the same id they go on "
      + "where they were (their episodes are kept). Give the new link to your platform right away.",
    "Make a new link",
  );
  if (!ok) return;
  return ctx.withDetailErrors(async () => {
    const updated = await ctx.api("POST", `/api/studies/${study.id}/permalink`);
    await ctx.refreshAfterWrite(updated);
    toast("A new link was made; the old one no longer works. Update it on your platform.", "success");
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
