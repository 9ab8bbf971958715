// RLDS Studio, study editor: form fields bound to a path of the study's data, where a value
// is present only when the designer set it (an empty field leaves the key out, so its
// default applies; a value equal to the default stays set), and Markdown with a preview.

import { el } from "../shared/api.js";

let counter = 0;
/** A page-unique id for a new field. */
export const uid = (prefix) => `${prefix}-${++counter}`;

/** The value at ``path`` (keys and indices) in ``data``, or undefined. */
export function getIn(data, path) {
  return path.reduce((node, key) => (node === undefined || node === null ? undefined : node[key]), data);
}

/**
 * Set the value at ``path``, making the mappings on the way; ``undefined`` removes the key,
 * and a mapping left empty by that (``crowd``, ``crowd.requirements``) goes too.
 */
export function setIn(data, path, value) {
  const parents = [];
  let node = data;
  for (const key of path.slice(0, -1)) {
    if (node[key] === undefined || node[key] === null || typeof node[key] !== "object") {
      if (value === undefined) return;
      node[key] = {};
    }
    parents.push([node, key]);
    node = node[key];
  }
  const last = path[path.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
  for (const [parent, key] of parents.reverse()) {
    const child = parent[key];
    if (value === undefined && !Array.isArray(child) && Object.keys(child).length === 0) delete parent[key];
  }
}

/** A labelled field: ``control`` below its label, with an optional hint; ``path`` (keys
 *  from the data it edits) lets a problem about it be shown at it (fieldmarks.js). */
export function fieldBox(id, label, control, hint, path) {
  return el("div", { class: "field", dataset: path ? { path: path.join(".") } : {} },
    el("label", { for: id }, label),
    control,
    hint ? el("p", { class: "muted small hint" }, hint) : null);
}

/**
 * A text or number input bound to ``path`` of ``data``. ``kind``: "text", "int", "number";
 * ``defaultValue`` is shown as the placeholder while the key is unset.
 */
export function inputField(data, path, label, { kind = "text", defaultValue, min, max, hint, required, onChange } = {}) {
  const id = uid("f");
  const current = getIn(data, path);
  const input = el("input", {
    id,
    type: kind === "text" ? "text" : "number",
    min, max,
    step: kind === "int" ? "1" : kind === "number" ? "any" : undefined,
    required: required ? "" : undefined,
    placeholder: defaultValue === undefined ? undefined : `${defaultValue} (default)`,
    autocomplete: "off",
  });
  input.value = current === undefined || current === null ? "" : String(current);
  input.addEventListener("input", () => {
    const raw = input.value.trim();
    let value;
    if (raw === "") value = required ? "" : undefined;
    else if (kind === "text") value = input.value;
    else value = Number.isFinite(Number(raw)) ? Number(raw) : raw;
    setIn(data, path, value);
    onChange?.(path, value);
  });
  return fieldBox(id, label, input, hint, path);
}

/** A select bound to ``path``: the first option "Default (x)" leaves the key unset. */
export function selectField(data, path, label, options, { defaultValue, hint, onChange } = {}) {
  const id = uid("f");
  const current = getIn(data, path);
  const select = el("select", { id },
    defaultValue === undefined ? null : el("option", { value: "" }, `Default (${defaultValue})`),
    options.map(([value, text]) => el("option", { value }, text ?? value)));
  select.value = current === undefined ? "" : String(current);
  select.addEventListener("change", () => {
    const value = select.value === "" ? undefined : select.value;
    setIn(data, path, value);
    onChange?.(path, value);
  });
  return fieldBox(id, label, select, hint, path);
}

/** A switch (a checkbox) bound to ``path``: unset until first touched. */
export function switchField(data, path, label, { hint, onChange } = {}) {
  const id = uid("f");
  const input = el("input", { id, type: "checkbox", class: "switch", role: "switch" });
  input.checked = getIn(data, path) === true;
  input.addEventListener("change", () => {
    setIn(data, path, input.checked);
    onChange?.(path, input.checked);
  });
  return el("div", { class: "field field-switch", dataset: { path: path.join(".") } }, input, el("label", { for: id }, label),
    hint ? el("p", { class: "muted small hint" }, hint) : null);
}

/** Checkboxes for the list at ``path`` (``fallback`` while unset), under ``legend``; ticking
 *  writes the ticked values in the order of ``options`` ([value, label] pairs). */
export function checksField(data, path, legend, options, fallback, hint, onChange) {
  const current = getIn(data, path) || fallback;
  const boxes = options.map(([value, label]) => {
    const id = uid("in");
    const box = el("input", { id, type: "checkbox", value: String(value) });
    box.checked = current.includes(value);
    box.addEventListener("change", () => {
      setIn(data, path, options.map(([v]) => v).filter((v, i) => boxes[i].box.checked));
      onChange();
    });
    return { box, row: el("label", { class: "check", for: id }, box, ` ${label}`) };
  });
  return el("fieldset", { class: "field inputs-field", dataset: { path: path.join(".") } },
    el("legend", {}, legend), boxes.map((b) => b.row), hint ? el("p", { class: "muted small hint" }, hint) : null);
}

/**
 * A Markdown textarea bound to ``path`` with a live preview beside it, rendered by the
 * server as participants see it (``POST /api/markdown``: CommonMark, HTML shown as text).
 */
export function markdownField(api, data, path, label, { rows = 5, hint, onChange } = {}) {
  const id = uid("md");
  const textarea = el("textarea", { id, rows, spellcheck: "true" });
  textarea.value = getIn(data, path) ?? "";
  const preview = el("div", { class: "md-preview", "aria-label": `${label} preview`, role: "region" });
  let timer = null;
  let asked = 0;
  const render = async () => {
    const text = textarea.value;
    const mine = ++asked;
    if (!text.trim()) {
      preview.replaceChildren(el("p", { class: "muted small" }, "Nothing to preview."));
      return;
    }
    try {
      const { html } = await api("POST", "/api/markdown", { json: { text } });
      // Rendered by the server with raw HTML disabled: the same HTML participants get.
      if (mine === asked) preview.innerHTML = html;
    } catch (error) {
      if (mine === asked) preview.replaceChildren(el("p", { class: "muted small" }, error.message));
    }
  };
  textarea.addEventListener("input", () => {
    setIn(data, path, textarea.value === "" ? undefined : textarea.value);
    onChange?.(path, textarea.value);
    clearTimeout(timer);
    timer = setTimeout(render, 250);
  });
  render();
  return el("div", { class: "field md-field", dataset: { path: path.join(".") } },
    el("label", { for: id }, label, el("span", { class: "muted small" }, " (Markdown)")),
    el("div", { class: "md-split" }, textarea, preview),
    hint ? el("p", { class: "muted small hint" }, hint) : null);
}
