// RLDS Studio, study editor: a study as forms (study fields, crowd settings, environments
// from the catalog, their tasks) and as YAML, kept in sync both ways through the server's
// own parser and writer; Validate and save; unsaved changes kept or warned about on leaving.
//
// The study is held as the values the designer set (``data``): a field left empty is not
// written, so its default applies; a value set equal to its default stays written.

import { ApiError, el, showError, toast } from "../shared/api.js";
import { entryFor, environmentFrom, freeId, loadCatalog, pickEnvironment } from "./catalog.js";
import { renderEnvCard } from "./env.js";
import { crowdSection } from "./crowd.js";
import { studySection } from "./study.js";
import { flushSettings } from "./settings.js";
import { clearMarks, markFields, problemLine, specPath } from "./fieldmarks.js";
import { renderChecklist } from "./checklist.js";
import { feedbackProblem, feedbackSection, forgetSources, setKind } from "./feedback.js";

const $ = (selector) => document.querySelector(selector);

const ed = {
  api: null,
  onSaved: null, // (study, created) after a save
  loaded: false, // a study (saved or new) is in the editor
  study: null, // the saved study (null: a new one)
  editable: true,
  data: { name: "", environments: [] },
  savedJson: "",
  savedYaml: "",
  view: "form",
  yamlSynced: "", // the YAML text that matches ``data``
  reports: new Map(), // environment id → its last validation report
  refused: new Map(), // environment index → problems ({loc, msg}) the server found when saving
  marked: [], // problems ({loc, msg}) last shown at their fields
  entries: [],
};

// --- dirty state -------------------------------------------------------------------------

/** True when the editor holds changes that are not saved. */
export function isDirty() {
  if (!ed.loaded || !ed.editable) return false;
  if (JSON.stringify(ed.data) !== ed.savedJson) return true;
  return ed.view === "yaml" && $("#spec-yaml").value !== ed.yamlSynced;
}

function refreshDirty() {
  $("#dirty-badge").hidden = !isDirty();
}

/** Ask before unsaved changes are dropped; resolves true when it is fine to leave. */
export async function confirmLeave(confirmAction) {
  if (!isDirty()) return true;
  return confirmAction("Discard your changes?", "This study has changes that are not saved. They will be lost.", "Discard changes");
}

// --- loading -----------------------------------------------------------------------------

/** Until the form shows the study just opened, its Save, Validate and Discard wait: a quick
 * click would send what the editor held before (another study, or nothing). */
function setLoading(loading) {
  ed.loaded = !loading;
  for (const button of document.querySelectorAll(".editor-actions button")) button.disabled = loading;
  $("#editor-form").setAttribute("aria-busy", String(loading));
  $("#validate-status").textContent = loading ? "Loading the study…" : "";
}
const whenLoaded = () => { if (!ed.loaded) throw new Error("The study is still loading: try again."); };

/** Show ``study`` (null: a new study) whose saved file is ``yaml``. */
export async function loadStudy(study, yaml, editable) {
  setLoading(true);
  ed.study = study;
  ed.editable = editable;
  ed.reports = new Map();
  ed.marked = [];
  forgetSources();
  $("#editor-checklist").hidden = true;
  $("#launch-checklist").hidden = true; // another study, or this one saved again: ask anew
  let data = { name: "", environments: [] };
  if (yaml) {
    try {
      data = (await ed.api("POST", "/api/studies/yaml/parse", { text: yaml, contentType: "application/yaml" })).spec;
    } catch (error) {
      showError($("#yaml-problems"), error);
    }
  }
  ed.data = data;
  ed.savedJson = JSON.stringify(data);
  ed.savedYaml = yaml || "";
  ed.yamlSynced = yaml || "";
  $("#spec-yaml").value = yaml || "";
  $("#spec-yaml").readOnly = !editable;
  showError($("#yaml-problems"), null);
  try {
    ed.entries = await loadCatalog(ed.api);
  } catch {
    ed.entries = [];
  }
  renderForm();
  setLoading(false);
  refreshDirty();
}

// --- the form ----------------------------------------------------------------------------

function changed() {
  refreshDirty();
}

function envCards() {
  const envs = ed.data.environments || (ed.data.environments = []);
  if (!envs.length) return [el("p", { class: "muted", id: "no-envs" }, "No environments yet: add one from the catalog.")];
  return envs.map((env, index) => renderEnvCard(env, index, envs.length, {
    api: ed.api,
    entry: entryFor(env, ed.entries),
    report: ed.reports.get(env.id) || null,
    refused: ed.refused.get(index) || [],
    onChange: changed,
    onMove: (delta) => {
      envs.splice(index + delta, 0, envs.splice(index, 1)[0]);
      renderEnvs(index + delta);
    },
    onDuplicate: () => {
      const copy = structuredClone(env);
      copy.id = freeId(`${env.id}-copy`, new Set(envs.map((e) => e.id)));
      copy.name = `${env.name} (copy)`;
      envs.splice(index + 1, 0, copy);
      renderEnvs(index + 1);
    },
    onRemove: () => {
      envs.splice(index, 1);
      renderEnvs();
    },
  }));
}

/** Redraw the environment cards (after a structural change); focus card ``focus``. */
function renderEnvs(focus) {
  $("#env-list").replaceChildren(...envCards());
  changed();
  if (focus !== undefined) $(`#env-list [data-env-index="${focus}"] h4`)?.scrollIntoView({ block: "nearest" });
}

async function addEnvironment() {
  const picked = await pickEnvironment(ed.api);
  if (!picked) return;
  const envs = ed.data.environments || (ed.data.environments = []);
  const taken = new Set(envs.map((e) => e.id));
  const env = picked.gymnasiumId
    ? { id: freeId(picked.gymnasiumId.split("/").pop(), taken), name: picked.gymnasiumId,
        source: { kind: "gymnasium", id: picked.gymnasiumId } }
    : environmentFrom(picked, taken);
  envs.push(env);
  renderEnvs(envs.length - 1);
  toast(`Added ${env.name}.`, "success");
}

function renderForm() {
  const feedback = ed.data.kind === "feedback"; // judges recorded episodes: no environments
  const onKind = (kind) => { setKind(ed.data, kind); renderForm(); changed(); };
  const fieldset = el("fieldset", { class: "form-sections", disabled: ed.editable ? undefined : "" },
    el("legend", { class: "sr-only" }, "Study settings"),
    studySection(ed.api, ed.data, changed, { kindLocked: Boolean(ed.study && ed.study.state !== "draft"), onKind }),
    crowdSection(ed.api, ed.data, changed),
    feedback ? feedbackSection(ed.api, ed.data, changed, { selfId: ed.study?.id }) : el("section", { class: "form-section", "aria-labelledby": "envs-title" },
      el("h3", { id: "envs-title" }, "Environments"),
      el("div", { id: "env-list", class: "env-list" }),
      el("button", { type: "button", class: "btn", id: "add-env", onclick: addEnvironment }, "+ Add environment")));
  $("#editor-form").replaceChildren(fieldset);
  if (!feedback) $("#env-list").replaceChildren(...envCards());
}

// --- YAML view, kept in sync -------------------------------------------------------------

/** Form → YAML: the server writes the form's data as a study file. */
async function formToYaml() {
  const out = await ed.api("POST", "/api/studies/yaml/render", { json: { spec: ed.data } });
  ed.yamlSynced = out.yaml;
  $("#spec-yaml").value = out.yaml;
  showError($("#yaml-problems"), out.problems.length
    ? new ApiError(422, { detail: out.problems }, "Not valid yet (the form has these problems):") : null);
}

/** YAML → form: the server parses the text (safe loader); true when it could. */
async function yamlToForm() {
  const text = $("#spec-yaml").value;
  if (text === ed.yamlSynced) return true;
  try {
    const out = await ed.api("POST", "/api/studies/yaml/parse", { text, contentType: "application/yaml" });
    ed.data = out.spec;
    ed.yamlSynced = text;
    showError($("#yaml-problems"), null);
    renderForm();
    return true;
  } catch (error) {
    showError($("#yaml-problems"), error);
    return false;
  }
}

async function showView(view) {
  if (view === ed.view) return;
  if (view === "yaml") {
    try {
      await formToYaml();
    } catch (error) {
      toast(error.message, "error");
      return;
    }
  } else if (!(await yamlToForm())) {
    toast("Fix the YAML to go back to the form.", "error");
    return;
  }
  ed.view = view;
  for (const [tab, panel, name] of [["#tab-form", "#editor-form", "form"], ["#tab-yaml", "#editor-yaml", "yaml"]]) {
    $(tab).setAttribute("aria-selected", String(view === name));
    $(tab).tabIndex = view === name ? 0 : -1;
    $(panel).hidden = view !== name;
  }
  refreshDirty();
}

// --- save, validate, discard -------------------------------------------------------------

/** Save the study (create it when new); then validate it. Errors go to ``errorBox``. */
export async function save(errorBox) {
  whenLoaded();
  try {
    await saveNow(errorBox);
  } catch (error) {
    showRefusal(error);
    throw error;
  }
}

/** A refused save's problems: at their fields (marked, the first scrolled to), beside the
 *  environments they are about, and in the designer's words in the error box. */
function showRefusal(error) {
  ed.refused = new Map();
  ed.marked = [];
  // a change that needs a new version is no problem to fix: the panel offers the new version
  if (error instanceof ApiError && error.body?.code === "needs_new_version") return;
  const detail = error instanceof ApiError && Array.isArray(error.body?.detail) ? error.body.detail : [];
  for (const item of detail) {
    const { loc, msg } = feedbackProblem(specPath(item.loc), item.msg);
    if (!loc.length || loc[0] === "path") continue;
    ed.marked.push({ loc, msg });
    if (loc[0] !== "environments" || typeof loc[1] !== "number") continue;
    const items = ed.refused.get(loc[1]) || [];
    items.push({ loc, msg });
    ed.refused.set(loc[1], items);
  }
  if (ed.view === "form") {
    renderForm();
    if (ed.marked.length) markFields(ed.marked);
  }
  // the error box lists them as the form names them (no raw paths)
  if (ed.marked.length) error.body = { ...error.body, detail: ed.marked.map((m) => ({ loc: [], msg: problemLine(m) })) };
}

/** Open the form at the field of ``item`` (a checklist item or {loc, msg}): marked, scrolled to. */
export async function showField(item) {
  if (ed.view !== "form") await showView("form");
  ed.marked = [{ loc: specPath(item.loc), msg: item.message ?? item.msg }];
  clearMarks();
  markFields(ed.marked);
}

/** The pre-launch checklist beside Validate (``checklist`` items from the server). */
function showChecklist(items) {
  renderChecklist($("#editor-checklist"), items, {
    title: "Before you activate",
    emptyText: "Nothing stands in the way of activating this study.",
    goTo: showField,
  });
}

async function saveNow(errorBox) {
  flushSettings();
  ed.refused = new Map();
  ed.marked = [];
  clearMarks();
  $("#validate-status").textContent = ""; // an earlier validation's verdict is not this save's
  let study;
  const yamlView = ed.view === "yaml";
  const text = $("#spec-yaml").value;
  if (ed.study === null) {
    study = yamlView
      ? await ed.api("POST", "/api/studies/import", { text, contentType: "application/yaml" })
      : await ed.api("POST", "/api/studies", { json: { spec: ed.data } });
  } else {
    study = yamlView
      ? await ed.api("PUT", `/api/studies/${ed.study.id}/file`, { text, contentType: "application/yaml" })
      : await ed.api("PUT", `/api/studies/${ed.study.id}`, { json: { spec: ed.data } });
  }
  showError(errorBox, null);
  const created = ed.study === null;
  ed.savedJson = JSON.stringify(ed.data); // the panel reloads with the saved file next
  await ed.onSaved(study, created);
  await validate({ toForm: false });
}

/**
 * Save the study as the editor holds it as a new version of the saved study (a new draft
 * linked to it: ``POST /api/studies/{id}/versions``); resolves to the new draft.
 */
export async function saveAsVersion() {
  whenLoaded();
  if (ed.view === "yaml" && !(await yamlToForm())) throw new Error("Fix the YAML first.");
  const created = await ed.api("POST", `/api/studies/${ed.study.id}/versions`, { json: { spec: ed.data } });
  ed.refused = new Map();
  ed.savedJson = JSON.stringify(ed.data); // kept in the new version: nothing left unsaved
  return created;
}

/** Build each environment of the study as the editor holds it and show the reports. */
export async function validate({ toForm = true } = {}) {
  whenLoaded();
  const status = $("#validate-status");
  if (ed.view === "yaml") {
    // The reports go beside each environment in the form.
    if (toForm) await showView("form");
    if (!(await yamlToForm())) {
      status.textContent = "Fix the YAML first.";
      return;
    }
  }
  flushSettings();
  status.textContent = ed.data.kind === "feedback" ? "Counting the episodes to judge…" : "Building the environments…";
  ed.refused = new Map();
  try {
    const result = await ed.api("POST", "/api/studies/validate", { json: { spec: ed.data } });
    ed.reports = new Map(result.environments.map((report) => [report.id, report]));
    renderForm();
    showChecklist(result.checklist || []);
    status.textContent = (ed.data.kind === "feedback" ? "Checked what participants would judge."
      : result.ok ? "Every environment builds." : "Some environments do not build.")
      + (ed.view === "yaml" ? " (Details beside each environment in the form.)" : "");
  } catch (error) {
    status.textContent = "";
    showRefusal(error);
    throw error;
  }
}

/** The editor is closed: nothing in it to keep. */
export function unload() {
  ed.loaded = false;
  refreshDirty();
}

/** Drop the changes: back to the saved study. */
export function discard() {
  ed.data = JSON.parse(ed.savedJson);
  $("#spec-yaml").value = ed.savedYaml;
  ed.yamlSynced = ed.savedYaml;
  showError($("#yaml-problems"), null);
  renderForm();
  refreshDirty();
}

/** Wire the editor once: ``api``, and ``onSaved(study, created)``. */
export function initEditor({ api, onSaved }) {
  ed.api = api;
  ed.onSaved = onSaved;
  $("#tab-form").addEventListener("click", () => showView("form"));
  $("#tab-yaml").addEventListener("click", () => showView("yaml"));
  $("#editor .tabs").addEventListener("keydown", (event) => {
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    const next = ed.view === "form" ? "yaml" : "form";
    showView(next).then(() => $(next === "form" ? "#tab-form" : "#tab-yaml").focus());
  });
  let timer = null;
  $("#spec-yaml").addEventListener("input", () => {
    refreshDirty();
    clearTimeout(timer);
    timer = setTimeout(() => { if (ed.view === "yaml") yamlToForm().then(refreshDirty); }, 600);
  });
  window.addEventListener("beforeunload", (event) => {
    if (isDirty()) event.preventDefault();
  });
}
