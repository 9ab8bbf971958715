// RLDS Studio, study editor: an environment's settings (its source's kwargs) as a form built
// from the catalog entry's JSON Schema by JSON Editor (web/vendor/json-editor, a classic
// script defining the global ``JSONEditor``). Each setting has an opt-in box: a setting
// left unticked is not written, so the environment's own default applies (a boolean is a
// select whose first choice, "default", leaves it out).

let themeReady = false;
const live = new Set(); // the forms on the page: {container, sync}
let mounted = 0; // each form's ids start with its own root name

/** The vendored theme, minus its ``style=`` attributes (the CSP refuses them): classes. */
function defineTheme(JSONEditor) {
  if (themeReady) return;
  const Base = JSONEditor.defaults.themes.html;
  class StudioTheme extends Base {
    visuallyHidden(element) {
      if (element) element.classList.add("sr-only");
    }

    getHiddenLabel(text) {
      const label = document.createElement("label");
      label.textContent = text;
      label.classList.add("sr-only");
      return label;
    }

    getHiddenText(text) {
      const span = document.createElement("span");
      span.textContent = text;
      span.classList.add("sr-only");
      return span;
    }

    getOptInCheckbox(formname) {
      // Named by aria-label: a label inside the setting's own label would join its name.
      const container = document.createElement("span");
      const checkbox = document.createElement("input");
      checkbox.type = "checkbox";
      checkbox.id = `${formname}-opt-in`;
      checkbox.classList.add("json-editor-opt-in");
      checkbox.setAttribute("aria-label", `Set ${formname.split("[").pop().replace("]", "")}`);
      container.append(checkbox);
      return { label: document.createElement("label"), checkbox, container };
    }
  }
  JSONEditor.defaults.themes.studio = StudioTheme;
  themeReady = true;
}

const show = (value) => JSON.stringify(value);

/**
 * The schema as the form shows it: each setting with its description, its range or
 * accepted values and the environment's default (the greyed value while it is unticked).
 * A boolean is one select (default / true / false), required so it has no opt-in box: one
 * control per boolean.
 */
function formSchema(schema) {
  const properties = {};
  const required = [];
  for (const [key, prop] of Object.entries(schema.properties || {})) {
    const copy = { ...prop, title: prop.title || key };
    const notes = [];
    if (prop.enum) notes.push(`one of ${prop.enum.map(show).join(", ")}`);
    else if (prop.minimum !== undefined || prop.maximum !== undefined) {
      notes.push(`from ${prop.minimum ?? "−∞"} to ${prop.maximum ?? "∞"}`);
    }
    if (prop.default !== undefined) notes.push(`default ${show(prop.default)}`);
    if (prop.type === "boolean") {
      Object.assign(copy, {
        type: "string", format: "select", enum: ["", "true", "false"], default: "",
        options: { enum_titles: [`default (${prop.default ?? "the environment's"})`, "true", "false"] },
      });
      required.push(key);
    } else if (prop.type === "number" || prop.type === "integer") {
      // typed, not picked: a value outside the list stays what was typed, and Save names it
      copy.format = "number";
      delete copy.enum;
    }
    copy.description = [prop.description, notes.join(", ")].filter(Boolean).join(" — ");
    properties[key] = copy;
  }
  return { type: "object", title: "Settings", properties, required, additionalProperties: false };
}

/** The form's value as kwargs: a boolean's "" (default) leaves it out. */
function toKwargs(value, booleans) {
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (!booleans.has(key)) out[key] = v;
    else if (v !== "" && v !== undefined) out[key] = v === "true";
  }
  return out;
}

/** ``messages`` (setting → messages) beside each setting's field, its input marked invalid. */
function showProblems(container, messages) {
  for (const [key, lines] of messages) {
    const field = container.querySelector(`[data-schemapath$=".${CSS.escape(key)}"]`);
    if (!field) continue;
    const input = field.querySelector("input:not(.json-editor-opt-in), select");
    const id = `${input?.id || key}-problem`;
    const note = document.createElement("p");
    note.className = "setting-problem";
    note.id = id;
    note.setAttribute("role", "alert");
    note.textContent = lines.join(" ");
    (field.querySelector(".form-control") || field).append(note);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", id);
    }
  }
}

/**
 * Hand every form's current value to its ``onChange`` now: JSON Editor reports a change
 * only on the next animation frame, after a click on Save has already read the study.
 */
export function flushSettings() {
  for (const form of live) {
    if (form.container.isConnected) form.sync();
    else live.delete(form);
  }
}

/**
 * Mount the settings form of ``schema`` in ``container`` with the values ``kwargs`` sets.
 * ``problems`` (setting → messages) are shown beside their settings.
 * ``onChange(kwargs)`` gets the new kwargs: the ticked settings, plus the keys the schema
 * does not describe (a catalog entry's fixed kwargs), kept as they were.
 * Returns a function that destroys the form.
 */
export function mountSettings(container, schema, kwargs, problems, onChange) {
  const JSONEditor = window.JSONEditor;
  const described = new Set(Object.keys(schema?.properties || {}));
  if (!JSONEditor || described.size === 0) {
    container.replaceChildren();
    container.append(Object.assign(document.createElement("p"), {
      className: "muted small",
      textContent: described.size === 0 ? "This environment has no settings." : "The settings form could not load.",
    }));
    return () => {};
  }
  defineTheme(JSONEditor);
  const fixed = Object.fromEntries(Object.entries(kwargs || {}).filter(([key]) => !described.has(key)));
  const booleans = new Set(Object.entries(schema.properties).filter(([, p]) => p.type === "boolean").map(([k]) => k));
  const startval = Object.fromEntries(Object.entries(kwargs || {}).filter(([key]) => described.has(key))
    .map(([key, value]) => [key, booleans.has(key) && typeof value === "boolean" ? String(value) : value]));
  const editor = new JSONEditor(container, {
    schema: formSchema(schema),
    startval,
    theme: "studio",
    form_name_root: `settings${++mounted}`,
    iconlib: null,
    disable_theme_rules: true,
    show_opt_in: true,
    disable_collapse: true,
    disable_edit_json: true,
    disable_properties: true,
    disable_array_reorder: true,
    no_additional_properties: true,
    prompt_before_delete: false,
    show_errors: "change",
  });
  let ready = false;
  // Laid out and listened to once the form is built (its "ready" event waits for an
  // animation frame, which may come after the designer's first edits: they were lost).
  editor.promise.then(() => {
    // Each opt-in box beside its setting's label, not inside it (where it would join the
    // setting's accessible name).
    for (const box of container.querySelectorAll(".json-editor-opt-in")) {
      const label = box.closest("label");
      if (label) label.before(box.parentElement);
    }
    showProblems(container, problems || new Map());
    ready = true;
  });
  const sync = () => {
    if (ready) onChange({ ...fixed, ...toKwargs(editor.getValue(), booleans) });
  };
  editor.on("change", sync);
  live.add({ container, sync });
  return () => editor.destroy();
}
