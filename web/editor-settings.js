// RLDS Studio, study editor: an environment's settings (its source's kwargs) as a form built
// from the catalog entry's JSON Schema by JSON Editor (web/vendor/json-editor, a classic
// script defining the global ``JSONEditor``). Each setting has an opt-in box: a setting
// left unticked is not written, so the environment's own default applies.

let themeReady = false;
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

/** The schema as the form shows it: booleans as switches, bounds and defaults in words. */
function formSchema(schema) {
  const properties = {};
  for (const [key, prop] of Object.entries(schema.properties || {})) {
    const copy = { ...prop, title: prop.title || key };
    if (prop.type === "boolean") copy.format = "checkbox";
    if (prop.type === "number" || prop.type === "integer") copy.format = "number";
    const notes = [];
    if (prop.minimum !== undefined || prop.maximum !== undefined) {
      notes.push(`from ${prop.minimum ?? "−∞"} to ${prop.maximum ?? "∞"}`);
    }
    if (prop.default !== undefined) notes.push(`default ${JSON.stringify(prop.default)}`);
    if (notes.length && !copy.description) copy.description = notes.join(", ");
    properties[key] = copy;
  }
  return { type: "object", title: "Settings", properties, additionalProperties: false };
}

/**
 * Mount the settings form of ``schema`` in ``container`` with the values ``kwargs`` sets.
 * ``onChange(kwargs)`` gets the new kwargs: the ticked settings, plus the keys the schema
 * does not describe (a catalog entry's fixed kwargs), kept as they were.
 * Returns a function that destroys the form.
 */
export function mountSettings(container, schema, kwargs, onChange) {
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
  const startval = Object.fromEntries(Object.entries(kwargs || {}).filter(([key]) => described.has(key)));
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
  editor.on("ready", () => {
    // Each opt-in box beside its setting's label, not inside it (where it would join the
    // setting's accessible name).
    for (const box of container.querySelectorAll(".json-editor-opt-in")) {
      const label = box.closest("label");
      if (label) label.before(box.parentElement);
    }
    ready = true;
  });
  editor.on("change", () => {
    if (!ready) return;
    onChange({ ...fixed, ...editor.getValue() });
  });
  return () => editor.destroy();
}
