// Study versions in the studies page: "version of …" links in the list and the study panel,
// and "Save as a new version" when a change alters what recorded episodes mean
// (the server answers 409 with code needs_new_version; see docs/study-format.md).

import { el } from "../shared/api.js";

export const NEEDS_NEW_VERSION = "needs_new_version";

/** True for the server's refusal of an in-place change that needs a new version. */
export function needsNewVersion(error) {
  return Boolean(error && error.status === 409 && error.body && error.body.code === NEEDS_NEW_VERSION);
}

function studyLink(ref, open) {
  return el("a", {
    href: `#study=${ref.id}`,
    class: "version-link",
    onclick: (event) => { event.preventDefault(); open(ref.id); },
  }, ref.name);
}

/** The list row's note under a study's name: "version of …" (null for an original). */
export function versionNote(study, open) {
  if (!study.parent_study_id) return null;
  const parent = study.parent || { id: study.parent_study_id, name: `study #${study.parent_study_id}` };
  return el("div", { class: "muted small version-note" }, "version of ", studyLink(parent, open));
}

/**
 * The study panel's version facts, shown after ``#detail-meta``: the study it is a version of
 * and the versions made from it, each a link that opens that study.
 */
export function renderVersions(study, open) {
  let box = document.getElementById("detail-versions");
  if (!box) {
    box = el("p", { id: "detail-versions", class: "muted small" });
    document.getElementById("detail-meta").after(box);
  }
  const parts = [];
  if (study.parent_study_id) {
    const parent = study.parent || { id: study.parent_study_id, name: `study #${study.parent_study_id}` };
    parts.push(["Version of ", studyLink(parent, open)]);
  }
  const versions = study.versions || [];
  if (versions.length) {
    const links = versions.flatMap((v, i) => (i ? [", ", studyLink(v, open)] : [studyLink(v, open)]));
    parts.push([versions.length === 1 ? "Newer version: " : "Newer versions: ", ...links]);
  }
  box.replaceChildren(...parts.flatMap((p, i) => (i ? [" · ", ...p] : p)));
  box.hidden = parts.length === 0;
}

/**
 * The "Save as a new version" button beside the editor's Save, for studies that have left
 * the draft state (a draft saves anything in place); ``onSave`` posts the editor's study
 * (web/editor/editor.js ``saveAsVersion``).
 */
export function renderVersionButton(study, onSave) {
  let button = document.getElementById("save-version");
  if (!button) {
    button = el("button", { type: "button", class: "btn", id: "save-version" }, "Save as a new version");
    button.addEventListener("click", () => onSave());
    document.getElementById("save-spec").after(" ", button);
  }
  button.hidden = study.state === "draft" || study.state === "active";
  button.title = study.state === "closed"
    ? "A new draft with this study's file, to run it again"
    : "A new draft with the edited study, linked to this one";
}

/**
 * After a refused save: explain in the error box why, and point at (and focus) the
 * "Save as a new version" button beside Save.
 */
export function offerNewVersion(box) {
  box.append(
    el("p", { class: "version-offer" },
      "Participants have played this study: a change to an environment's source, settings, "
      + "controls, mode, fps or camera is saved as a new study (a draft linked to this one), "
      + "so that each study's episodes share one meaning. Use “Save as a new version” below."),
  );
  const button = document.getElementById("save-version");
  // after the panel's buttons are enabled again (they are disabled while a request runs)
  if (button && !button.hidden) setTimeout(() => button.focus({ preventScroll: true }), 0);
  box.scrollIntoView({ block: "nearest" }); // the explanation, above the form
}
