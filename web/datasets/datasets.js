// Datasets page: a designer's datasets (named selections of episodes across their studies,
// each with a seeded train/validation/test split), the form that makes and changes one,
// the preview of what it holds now and its export (export.js). /datasets.html[?dataset=<id>] (the preview shown).

import { ApiError, createApi, el, showError, toast as showToast } from "../shared/api.js";
import { STUDIES, renderTopbar } from "../shared/topbar.js";
import { confirmAction, timeElement } from "../studio/ui.js";
import { createDatasetEdits } from "./edits.js";
import { createDatasetExport } from "./export.js";
import { createForm } from "./form.js";
import { renderPreview } from "./preview.js";

const $ = (id) => document.getElementById(id);
renderTopbar({ crumbs: [STUDIES, "Datasets"] });

// --- state ------------------------------------------------------------------------------
const state = { me: null, studies: [], datasets: [], editing: null, shown: null };
const specs = new Map();  // study id -> spec (its environments' tasks)

const api = createApi({ onUnauthorized: () => { location.href = "/"; throw new Error("Log in first."); } });
const toast = (text, kind = "success") =>
  showToast(text, kind, kind === "error" ? { duration: 0, role: "alert" } : { duration: 4000, role: "status" });
const guard = (fn) => async (...args) => {
  try { await fn(...args); } catch (err) { toast(err.message, "error"); }
};

async function loadSpec(studyId) {
  if (!specs.has(studyId)) specs.set(studyId, (await api("GET", `/api/studies/${studyId}`)).spec);
  return specs.get(studyId);
}

let theForm = null;  // the form, once the designer's studies are in (start)
const exporter = createDatasetExport({ api, toast, guard });
// the Edits section (edits.js): after an edit, the preview's counts are drawn again
const editor = createDatasetEdits({ api, toast, guard, onChange: () => refreshPreview() });

async function refreshPreview() {
  const out = await api("GET", `/api/datasets/${state.shown.id}/preview`);
  renderPreview($("preview"), state.shown.name, out);
  return out;
}

// --- rendering ----------------------------------------------------------------------------
const studyName = (id) => state.studies.find((s) => s.id === id)?.name ?? `study ${id}`;

function splitText(split) {
  if (split.by === "none") return "not split";
  const f = [split.train, split.validation, split.test].map((x) => Math.round(x * 100)).join(" / ");
  return `by ${split.by}, ${f}, seed ${split.seed}`;
}

function renderList() {
  const rows = state.datasets;
  $("datasets-table").hidden = rows.length === 0;
  $("datasets-empty").hidden = rows.length > 0;
  $("datasets-body").replaceChildren(...rows.map((d) => el("tr", { dataset: { id: d.id } },
    el("th", { scope: "row" }, d.name),
    el("td", {}, d.sources.map((s) => studyName(s.study_id)).join(", ")),
    el("td", {}, splitText(d.split)),
    el("td", {}, timeElement(d.updated_at)),
    el("td", { class: "ds-actions" },
      el("button", { type: "button", class: "btn btn-small", onclick: guard(() => showPreview(d)) }, "Preview"),
      el("button", { type: "button", class: "btn btn-small", onclick: guard(() => openForm(d)) }, "Edit"),
      el("button", { type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Delete ${d.name}`,
                     onclick: guard(() => remove(d)) }, "Delete")))));
}

// --- handlers -----------------------------------------------------------------------------
async function loadDatasets() {
  state.datasets = await api("GET", "/api/datasets");
  renderList();
}

async function openForm(dataset) {
  if (!theForm) return;
  state.editing = dataset;
  $("form-title").textContent = dataset ? `Edit ${dataset.name}` : "New dataset";
  showError($("form-error"), null);
  await theForm.fill(dataset);
  $("form-section").hidden = false;
  $("ds-name").focus();
}

function closeForm() {
  $("form-section").hidden = true;
  state.editing = null;
}

async function save(event) {
  event.preventDefault();
  const body = theForm.body();
  let saved;
  try {
    saved = state.editing
      ? await api("PATCH", `/api/datasets/${state.editing.id}`, { json: body })
      : await api("POST", "/api/datasets", { json: body });
  } catch (err) {
    if (err instanceof ApiError && err.status === 422) {
      const placed = theForm.showErrors(err.body.detail);
      // the message above the form; the field problems are beside their fields
      showError($("form-error"), placed ? new Error(err.body.message || "The dataset is not valid.") : err);
      return;
    }
    throw err;
  }
  theForm.clearErrors();
  showError($("form-error"), null);
  toast(state.editing ? `Saved ${saved.name}.` : `Created ${saved.name}.`);
  closeForm();
  await loadDatasets();
  await showPreview(saved);
}

async function showPreview(dataset) {
  state.shown = dataset;
  $("preview-section").hidden = false;
  $("preview-title").textContent = `Preview: ${dataset.name}`;
  $("preview").replaceChildren(el("p", { class: "muted" }, "Counting…"));
  showError($("preview-error"), null);
  history.replaceState(null, "", `${location.pathname}?dataset=${dataset.id}`);
  try {
    await editor.show(dataset, await refreshPreview());
  } catch (err) {
    editor.hide();
    $("preview").replaceChildren();
    const envs = err.body?.detail?.[0]?.environments;
    const fields = err.body?.detail?.[0]?.fields;
    const more = envs ? ` Environments: ${envs.join(", ")}${fields?.length ? `; differing: ${fields.join(", ")}` : ""}.` : "";
    showError($("preview-error"), new Error(`${err.message}${more}`));
  }
  $("preview-section").scrollIntoView({ block: "nearest" });
  await exporter.show(dataset);
}

async function remove(dataset) {
  if (!(await confirmAction(`Delete ${dataset.name}?`, "The dataset goes; its studies and their episodes stay.", "Delete"))) return;
  await api("DELETE", `/api/datasets/${dataset.id}`);
  if (state.shown?.id === dataset.id) {
    $("preview-section").hidden = true;
    exporter.hide();
    editor.hide();
    history.replaceState(null, "", location.pathname);
  }
  if (state.editing?.id === dataset.id) closeForm();
  toast(`Deleted ${dataset.name}.`);
  await loadDatasets();
}

// --- start ----------------------------------------------------------------------------------
async function start() {
  state.me = await api("GET", "/api/auth/me");
  const all = await api("GET", "/api/studies");
  // oldest first, as the preview counts them (by study id)
  state.studies = all.filter((s) => s.kind === "play" && s.owner_id === state.me.id).sort((a, b) => a.id - b.id);
  theForm = createForm({ studies: state.studies, loadSpec, guard });
  await loadDatasets();
  const wanted = Number(new URLSearchParams(location.search).get("dataset"));
  const found = state.datasets.find((d) => d.id === wanted);
  if (found) await showPreview(found);
}

$("new-dataset").addEventListener("click", guard(() => openForm(null)));
document.querySelector("[data-action=new-dataset]").addEventListener("click", guard(() => openForm(null)));
$("cancel-form").addEventListener("click", closeForm);
$("dataset-form").addEventListener("submit", guard(save));
$("form-section").addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeForm(); });
start().catch((err) => showError($("page-error"), err));
