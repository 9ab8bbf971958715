// Datasets page: the create/edit form. Each picked study is a source with a filter of its
// own (the episodes page's fields: status, environments, tags, outcome, replay verdict,
// task, excluded, test plays); the split is its method, fractions and seed. Validation
// errors are shown at their fields, found by the path the API names (``sources.0.filter``).

import { el } from "../shared/api.js";
import { fillTaskOptions, setTask } from "../episodes/tasks.js";

const $ = (id) => document.getElementById(id);
const STATUSES = ["completed", "rejected", "canceled", "abandoned", "failed"];
const OUTCOMES = ["success", "failure", "unset"];
const VERDICTS = [["verified", "verified"], ["diverged", "diverged"], ["not_replayable", "not replayable"],
                  ["pending", "pending"]];
const DEFAULT_FILTER = { statuses: ["completed"], excluded: false };

/** Checkboxes in a fieldset: ``items`` are [value, text]; ``checked`` the values ticked. */
function boxes(legend, name, items, checked, path) {
  return el("fieldset", { class: "ds-boxes", "data-path": path, "data-name": name },
    el("legend", {}, legend),
    items.map(([value, text]) => el("label", { class: "ds-check" },
      el("input", { type: "checkbox", value, checked: checked.includes(value) }), ` ${text}`)));
}

const ticked = (block, name) =>
  [...block.querySelectorAll(`[data-name="${name}"] input:checked`)].map((b) => b.value);
const words = (text) => text.split(",").map((t) => t.trim()).filter(Boolean);

/** One source's block: the study's name and its filter fields (``f``: its filter). */
function sourceBlock(study, spec, f) {
  const id = (part) => `src-${study.id}-${part}`;
  const excluded = f.excluded === null || f.excluded === undefined ? "null" : String(f.excluded);
  const envs = study.environments.map((e) => [e.env_key, e.name || e.env_key]);
  const taskSelect = el("select", { id: id("task"), "aria-label": `Task (${study.name})` });
  const block = el("fieldset", { class: "ds-source", dataset: { study: study.id } },
    el("legend", {}, `${study.name} `, el("span", { class: "muted small" }, `study ${study.id}`)),
    el("p", { class: "ds-source-error field-error", hidden: true, "data-for": "study_id" }),
    el("div", { class: "ds-filter" },
      boxes("Status", "statuses", STATUSES.map((s) => [s, s]), f.statuses ?? ["completed"], "filter.statuses"),
      envs.length > 1 ? boxes("Environments", "environments", envs, f.environments ?? [], "filter.environments") : null,
      el("label", { "data-path": "filter.tags" }, "With tags",
        el("input", { id: id("tags"), type: "text", placeholder: "tag, tag", value: (f.tags ?? []).join(", ") })),
      el("label", { "data-path": "filter.exclude_tags" }, "Without tags",
        el("input", { id: id("exclude"), type: "text", placeholder: "tag", value: (f.exclude_tags ?? []).join(", ") })),
      boxes("Outcome", "outcomes", OUTCOMES.map((o) => [o, o]), f.outcomes ?? [], "filter.outcomes"),
      boxes("Replay", "replay_verdicts", VERDICTS, f.replay_verdicts ?? [], "filter.replay_verdicts"),
      el("label", { "data-path": "filter.task" }, "Task", taskSelect),
      el("label", { "data-path": "filter.excluded" }, "Excluded episodes",
        el("select", { id: id("excluded") },
          el("option", { value: "false", selected: excluded === "false" }, "left out"),
          el("option", { value: "null", selected: excluded === "null" }, "included"),
          el("option", { value: "true", selected: excluded === "true" }, "only excluded"))),
      el("label", { class: "ds-check", "data-path": "filter.include_tests" },
        el("input", { id: id("tests"), type: "checkbox", checked: Boolean(f.include_tests) }), " Include test plays")));
  fillTaskOptions(taskSelect, spec);
  taskSelect.size = 1;
  setTask(taskSelect, f.task ?? "");
  block.readFilter = () => ({
    ...f,  // fields the form does not show (participants, dates, returns...) stay as saved
    statuses: ticked(block, "statuses"),
    environments: envs.length > 1 ? ticked(block, "environments") : (f.environments ?? []),
    tags: words($(id("tags")).value), exclude_tags: words($(id("exclude")).value),
    outcomes: ticked(block, "outcomes"), replay_verdicts: ticked(block, "replay_verdicts"),
    task: taskSelect.value || null,
    excluded: JSON.parse($(id("excluded")).value),
    include_tests: $(id("tests")).checked,
  });
  return block;
}

/** The form, on the designer's play studies; ``loadSpec(id)`` fetches a study's spec. */
export function createForm({ studies, loadSpec, guard }) {
  const filters = new Map();  // study id -> the filter it had when the form was filled

  async function toggle(study, on) {
    const shown = $("sources").querySelector(`[data-study="${study.id}"]`);
    if (!on) { shown?.remove(); return; }
    if (shown) return;
    const spec = await loadSpec(study.id);
    const block = sourceBlock(study, spec, filters.get(study.id) ?? DEFAULT_FILTER);
    // in the order of the studies' checkboxes, which is the order sent
    const after = [...$("sources").children].find((b) => studyIndex(b.dataset.study) > studyIndex(study.id));
    $("sources").insertBefore(block, after ?? null);
  }
  const studyIndex = (id) => studies.findIndex((s) => String(s.id) === String(id));

  $("no-studies").hidden = studies.length > 0;
  $("study-boxes").replaceChildren(...studies.map((s) => el("label", { class: "ds-check" },
    el("input", { type: "checkbox", value: s.id, "aria-label": s.name,
                  onchange: guard((ev) => toggle(s, ev.target.checked)) }),
    ` ${s.name} `, el("span", { class: "muted small" }, `(${s.state})`))));

  const splitInputs = ["train", "validation", "test"].map((k) => $(`ds-${k}`));
  const syncSplit = () => {
    const none = document.querySelector("input[name=split-by]:checked").value === "none";
    for (const input of splitInputs) input.disabled = none;
  };
  document.querySelectorAll("input[name=split-by]").forEach((r) => r.addEventListener("change", syncSplit));

  /** Fill the form from a dataset (null: a new one). */
  async function fill(dataset) {
    clearErrors();
    filters.clear();
    $("sources").replaceChildren();
    $("ds-name").value = dataset?.name ?? "";
    $("ds-description").value = dataset?.description ?? "";
    const split = dataset?.split ?? { by: "participant", train: 0.8, validation: 0.1, test: 0.1, seed: 0 };
    document.querySelector(`input[name=split-by][value=${split.by}]`).checked = true;
    for (const key of ["train", "validation", "test", "seed"]) $(`ds-${key}`).value = String(split[key]);
    syncSplit();
    const picked = new Set((dataset?.sources ?? []).map((s) => s.study_id));
    for (const s of dataset?.sources ?? []) filters.set(s.study_id, s.filter);
    for (const box of $("study-boxes").querySelectorAll("input")) box.checked = picked.has(Number(box.value));
    for (const study of studies) if (picked.has(study.id)) await toggle(study, true);
  }

  /** The body the API takes (numbers as typed: the API says what is wrong with them). */
  function body() {
    const num = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
    return {
      name: $("ds-name").value,
      description: $("ds-description").value,
      sources: [...$("sources").children].map((b) => ({ study_id: Number(b.dataset.study), filter: b.readFilter() })),
      split: { by: document.querySelector("input[name=split-by]:checked").value,
               train: num("ds-train"), validation: num("ds-validation"), test: num("ds-test"), seed: num("ds-seed") },
    };
  }

  function clearErrors() {
    document.querySelectorAll("#dataset-form .field-error[data-made]").forEach((p) => p.remove());
    document.querySelectorAll("#dataset-form .ds-source-error").forEach((p) => { p.hidden = true; p.textContent = ""; });
    document.querySelectorAll("#dataset-form [aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
  }

  /** The element that holds the field at ``path`` (e.g. "sources.1.filter.task"). */
  function fieldAt(path) {
    const parts = path.split(".");
    let scope = $("dataset-form");
    let rest = parts;
    if (parts[0] === "sources" && /^\d+$/.test(parts[1] ?? "")) {
      const block = $("sources").children[Number(parts[1])];
      if (block) { scope = block; rest = parts.slice(2); }
    }
    if (scope !== $("dataset-form") && rest[0] === "study_id") return { node: scope, own: scope.querySelector(".ds-source-error") };
    for (let n = rest.length; n > 0; n -= 1) {
      const node = scope.querySelector(`[data-path="${rest.slice(0, n).join(".")}"]`);
      if (node) return { node };
    }
    return { node: scope === $("dataset-form") ? null : scope };
  }

  /** Show each problem of a 422 at its field; true when every one found a field. */
  function showErrors(detail) {
    clearErrors();
    let placed = Array.isArray(detail) && detail.length > 0;
    let first = null;
    for (const item of Array.isArray(detail) ? detail : []) {
      const loc = (item.loc ?? []).filter((p, i) => !(i === 0 && p === "body")).join(".");
      const { node, own } = fieldAt(loc);
      if (!node) { placed = false; continue; }
      const message = String(item.msg).replace(/^Value error, /, "");
      let target = own;
      if (!target) {
        target = el("p", { class: "field-error", "data-made": "1", id: `err-${Math.random().toString(36).slice(2)}` });
        node.append(target);
      }
      target.textContent = message;
      target.hidden = false;
      const input = node.matches("input, select, textarea") ? node : node.querySelector("input, select, textarea");
      if (input) {
        input.setAttribute("aria-invalid", "true");
        if (target.id) input.setAttribute("aria-describedby", target.id);
      }
      first ??= input ?? node;
    }
    first?.focus?.();
    return placed;
  }

  return { fill, body, showErrors, clearErrors };
}
