// RLDS Studio, study editor: the axes and device buttons of the controls editor (controls.js).
//
// An axis binding reads the gamepad's axes or a device's (mouse, SpaceMouse, a paired phone,
// the player's own touch screen:
// docs/study-format.md, "Devices"): in a Box action it adds ``value × scale`` to its
// dimension outside its dead zone; in a discrete one it sends ``negative`` / ``positive``.
// Device buttons travel as reserved key codes in ``keys`` (MouseLeft, PhoneGrip...).
// ``axesTable`` edits every axis binding field by field, as the study file writes them; a
// value the study format refuses is kept as typed and marked at its field (Save names it too).

import { el } from "../shared/api.js";

/** The axes of each source as the player page sends them (server/player/views.py names). */
export const SOURCE_AXES = {
  gamepad: ["left stick ←→", "left stick ↑↓", "right stick ←→", "right stick ↑↓",
    ...Array.from({ length: 12 }, (_, i) => `axis ${i + 4}`)],
  mouse: ["drag ←→", "drag ↑↓", "wheel", "Shift+drag ←→", "Shift+drag ↑↓"],
  spacemouse: ["←→", "push / pull", "up / down", "tilt", "roll", "twist"],
  phone: ["tilt forward / back", "tilt right / left", "twist left / right",
    "moved right / left (WebXR)", "moved away / nearer (WebXR)", "moved up / down (WebXR)"],
  touch: ["pad 1 ←→", "pad 1 ↑↓", "pad 2 ←→", "pad 2 ↑↓", "tilt forward / back", "tilt right / left"],
};
const SOURCE_NAMES = { gamepad: "gamepad", mouse: "mouse", spacemouse: "SpaceMouse", phone: "phone", touch: "touch" };
const DEVICE_AXES_MAX = 8; // a device sends at most 8 axes (a gamepad 16)

/** The reserved key codes of device buttons, and what they are. */
export const DEVICE_BUTTONS = [
  ["MouseLeft", "held while dragging"],
  ["MouseRight", "right button"],
  ["SpaceMouseLeft", "left button"],
  ["SpaceMouseRight", "right button"],
  ["PhoneClutch", "Hold to move"],
  ["PhoneGrip", "Grip"],
  ...["A", "B", "C", "D"].map((b) => [`Touch${b}`, `touch button ${b}`]),
];

export const isPad = (axis) => (axis.source ?? "gamepad") === "gamepad";

/** How the editor names an axis binding's axis: ``axis 1`` (gamepad), ``mouse drag ←→``. */
export function axisName(axis) {
  if (isPad(axis)) return `axis ${axis.axis}`;
  const named = SOURCE_AXES[axis.source]?.[axis.axis];
  return `${SOURCE_NAMES[axis.source] ?? axis.source} ${named ?? `axis ${axis.axis}`}`;
}

/** The legend label's key of an axis (``axis 0``, ``mouse 0``: docs/study-format.md). */
const labelKey = (axis) => (isPad(axis) ? `axis ${axis.axis}` : `${axis.source} ${axis.axis}`);

/**
 * A "Device…" button opening a menu that binds a device to ``row``: a device button (its
 * code in ``keys``) or a device axis pushed this row's way. ``onButton(code)``,
 * ``onAxis(source, axis)``. A menu of buttons, not a select: a select's arrow keys would
 * bind as the designer moves through it. Esc closes it.
 */
export function deviceMenu(row, { onButton, onAxis }) {
  const toggle = el("button", { type: "button", class: "btn btn-small", "aria-expanded": "false",
    "aria-label": `Bind a device to ${row.title}` }, "Device…");
  const choice = (text, pick) => el("button", { type: "button", class: "btn btn-ghost btn-small device-choice",
    onclick: () => { close(); pick(); } }, text);
  const group = (title, choices) => el("div", { class: "device-group", role: "group", "aria-label": title },
    el("p", { class: "small muted" }, title), choices);
  const panel = el("div", { class: "device-menu", hidden: "", role: "group", "aria-label": `Devices for ${row.title}`,
    onkeydown: (event) => {
      if (event.key !== "Escape") return;
      event.preventDefault();
      event.stopPropagation();
      close();
      toggle.focus();
    } },
  group("Device buttons", DEVICE_BUTTONS.map(([code, what]) => choice(`${code} (${what})`, () => onButton(code)))),
  ["mouse", "spacemouse", "phone", "touch"].map((source) => group(`${SOURCE_NAMES[source]} axes`,
    SOURCE_AXES[source].map((name, i) => choice(name, () => onAxis(source, i))))));
  function close() {
    panel.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
  }
  toggle.addEventListener("click", () => {
    const opening = panel.hidden;
    panel.hidden = !opening;
    toggle.setAttribute("aria-expanded", String(opening));
    if (opening) panel.querySelector("button")?.focus();
  });
  return el("div", { class: "device-pick" }, toggle, panel);
}

// --- checks at the field (the server checks again: study_spec/controls.py) -----------------

const numeric = (text) => (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text.trim()) ? Number(text) : NaN);

function scaleProblem(value) {
  return typeof value === "number" && Number.isFinite(value) ? null : "must be a finite number, e.g. 0.5 or -0.3.";
}

function deadzoneProblem(value) {
  if (value === undefined || value === null) return null;
  return typeof value === "number" && value >= 0 && value < 1 ? null : "must be from 0 up to (not including) 1.";
}

function axisProblem(axis) {
  const top = isPad(axis) ? 16 : DEVICE_AXES_MAX;
  return Number.isInteger(axis.axis) && axis.axis >= 0 && axis.axis < top ? null : `must be 0 to ${top - 1} for this source.`;
}

/** A typed number as the study holds it: a number when it is one, else the text as typed. */
const typed = (text) => {
  const n = numeric(text);
  return Number.isFinite(n) ? n : text.trim();
};

// --- the table of axes ---------------------------------------------------------------------

/**
 * The axes of ``current`` (the controls editor's mapping, edited in place) as a table.
 * ``model``: the controls editor's actions (``discrete``, ``rows``, ``size``);
 * ``problems``: Map "index.field" → message from the server (dropped once the field changes);
 * ``changed(status)`` after each edit. Returns the section's element.
 */
export function axesTable(current, model, problems, changed) {
  const fieldId = (i, field) => `axis-${i}-${field}-${Math.random().toString(36).slice(2, 7)}`;
  const edit = (i, field, apply, status) => {
    problems.delete(`${i}.${field}`);
    apply();
    changed(status);
  };
  // the check here as the designer types, and what the server refused at the last save
  const problemAt = (i, field, local) => {
    const refused = problems.get(`${i}.${field}`);
    return [local, refused && `Not saved: ${refused}`].filter(Boolean).join(" ") || null;
  };
  // a field marked invalid while it has a message, the message in a line under its row
  let notes = [];
  const checked = (control, message, id) => {
    if (!message) return control;
    const name = control.getAttribute("aria-label");
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", `${id}-problem`);
    notes.push(el("p", { class: "field-problem", id: `${id}-problem`, role: "alert", dataset: { for: name } },
      el("strong", {}, `${name.split(" of ")[0]}: `), message));
    return control;
  };

  // the actions an axis direction may send; a value no row knows yet (an action name before
  // Validate has listed them) is kept and shown as it is
  const valueText = (value) => (typeof value === "string" ? value : JSON.stringify(value));
  const actionOptions = (value) => {
    const set = value !== null && value !== undefined;
    const known = set && model.rows.some((r) => r.matches(value));
    return [el("option", { value: "" }, "nothing"),
      set && !known ? el("option", { value: "=", selected: "" }, valueText(value)) : null,
      ...model.rows.map((r, k) => el("option", { value: String(k), selected: set && r.matches(value) ? "" : undefined }, r.title))];
  };

  const rows = current.axes.flatMap((axis, i) => {
    notes = [];
    const name = axisName(axis);
    const source = axis.source ?? "gamepad";
    const sourceId = fieldId(i, "source");
    const sourceSelect = el("select", { id: sourceId, "aria-label": `Source of ${name}`,
      onchange: (event) => edit(i, "source", () => {
        const next = event.target.value;
        if (next === "gamepad") delete axis.source;
        else axis.source = next;
        if (axis.axis >= (SOURCE_AXES[next] ?? []).length) axis.axis = 0;
      }, `${name} now reads the ${SOURCE_NAMES[event.target.value] ?? event.target.value}.`) },
    Object.entries(SOURCE_NAMES).map(([value, text]) => el("option", { value, selected: value === source ? "" : undefined }, text)),
    SOURCE_NAMES[source] ? null : el("option", { value: source, selected: "" }, `${source} (unknown)`));

    const axisOptions = (SOURCE_AXES[source] ?? []).map((text, k) => [k, `${k} · ${text}`]);
    if (!axisOptions.some(([k]) => k === axis.axis)) axisOptions.push([axis.axis, `${axis.axis}`]);
    const axisId = fieldId(i, "axis");
    const axisSelect = el("select", { id: axisId, "aria-label": `Axis of ${name}`,
      onchange: (event) => edit(i, "axis", () => { axis.axis = Number(event.target.value); }, "") },
    axisOptions.map(([k, text]) => el("option", { value: String(k), selected: k === axis.axis ? "" : undefined }, text)));

    let drives;
    const dimId = fieldId(i, "dim");
    if (model.discrete) {
      const side = (key, label) => el("label", { class: "small axis-side" }, `${label} `,
        el("select", { "aria-label": `${label} on ${name}`,
          onchange: (event) => edit(i, key, () => {
            const k = event.target.value;
            if (k !== "=") axis[key] = k === "" ? null : model.rows[Number(k)].value;
          }, "") }, actionOptions(axis[key])));
      drives = [side("negative", "pushed −"), " ", side("positive", "pushed +")];
    } else {
      const dims = Array.from({ length: Math.max(model.size, (axis.dim ?? 0) + 1) }, (_, d) => d);
      drives = el("select", { id: dimId, "aria-label": `Dimension of ${name}`,
        onchange: (event) => edit(i, "dim", () => { axis.dim = Number(event.target.value); }, "") },
      dims.map((d) => el("option", { value: String(d), selected: d === (axis.dim ?? 0) ? "" : undefined },
        model.dimensions[d] ? `${d} · ${model.dimensions[d]}` : String(d))));
    }

    const scaleId = fieldId(i, "scale");
    const scale = el("input", { id: scaleId, type: "text", inputmode: "decimal", class: "axis-number", autocomplete: "off",
      value: String(axis.scale ?? 1), "aria-label": `Scale of ${name}`,
      onchange: (event) => edit(i, "scale", () => { axis.scale = typed(event.target.value || "1"); }, "") });
    const zoneId = fieldId(i, "deadzone");
    const zone = el("input", { id: zoneId, type: "text", inputmode: "decimal", class: "axis-number", autocomplete: "off",
      value: axis.deadzone === undefined || axis.deadzone === null ? "" : String(axis.deadzone),
      placeholder: String(current.deadzone), title: "Empty: the controls' dead zone (below)", "aria-label": `Dead zone of ${name}`,
      onchange: (event) => edit(i, "deadzone", () => {
        const text = event.target.value.trim();
        if (text === "") delete axis.deadzone;
        else axis.deadzone = typed(text);
      }, "") });
    const key = labelKey(axis);
    const label = el("input", { type: "text", class: "binding-label", placeholder: "legend label", value: current.labels[key] ?? "",
      "aria-label": `Label of ${name}`,
      onchange: (event) => edit(i, "label", () => {
        const text = event.target.value.trim();
        if (text) current.labels[key] = text;
        else delete current.labels[key];
      }, "") });

    const row = el("tr", { dataset: { axis: name } },
      el("td", {}, checked(sourceSelect, problemAt(i, "source", SOURCE_NAMES[source] ? null : "must be gamepad, mouse, spacemouse, phone or touch."), sourceId)),
      el("td", {}, checked(axisSelect, problemAt(i, "axis", axisProblem(axis)), axisId), label),
      el("td", {}, model.discrete ? drives : checked(drives, problemAt(i, "dim", null), dimId)),
      model.discrete ? null : el("td", {}, checked(scale, problemAt(i, "scale", scaleProblem(axis.scale ?? 1)), scaleId)),
      el("td", {}, checked(zone, problemAt(i, "deadzone", deadzoneProblem(axis.deadzone)), zoneId)),
      el("td", { class: "right" }, el("button", { type: "button", class: "btn btn-ghost btn-small", "aria-label": `Remove ${name} (axis row ${i + 1})`,
        onclick: () => { problems.clear(); current.axes.splice(i, 1); changed(`${name} removed.`); } }, "×")));
    return notes.length ? [row, el("tr", { class: "axis-notes" }, el("td", { colspan: model.discrete ? "5" : "6" }, notes))] : [row];
  });

  const add = el("button", { type: "button", class: "btn btn-small",
    onclick: () => {
      problems.clear();
      current.axes.push(model.discrete ? { source: "mouse", axis: 0, negative: null, positive: null }
        : { source: "mouse", axis: 0, dim: 0, scale: 1 });
      changed("A mouse axis added: choose what it drives.");
    } }, "+ Add axis");
  const head = ["Source", "Axis", model.discrete ? "Sends" : "Dimension", model.discrete ? null : "Scale", "Dead zone", ""]
    .filter((h) => h !== null).map((h) => el("th", { scope: "col" }, h));
  return el("div", { class: "axes-section" },
    el("p", { class: "small axes-title" }, el("strong", {}, "Axes"),
      el("span", { class: "muted" }, model.discrete
        ? " · a stick or device axis pushed past its dead zone sends an action."
        : " · each adds value × scale to its dimension (value −1…1; a negative scale reverses it); mouse, SpaceMouse, phone and touch axes as in docs/study-format.md, “Devices”.")),
    rows.length
      ? el("div", { class: "axes-scroll" }, el("table", { class: "table axes-table", "aria-label": "Axes" },
        el("thead", {}, el("tr", {}, head)), el("tbody", {}, rows)))
      : el("p", { class: "muted small" }, "No axis is bound: add one, or use Gamepad… or Device… on an action above."),
    add);
}

/** Server problems at ``controls.axes.N.field`` (``loc`` after the environment's index). */
export function axisProblems(found) {
  const out = new Map();
  for (const { loc, msg } of found || []) {
    const at = loc.indexOf("controls");
    if (at < 0 || loc[at + 1] !== "axes" || typeof loc[at + 2] !== "number") continue;
    const field = loc[at + 3] ?? "axis";
    const key = `${loc[at + 2]}.${field}`;
    out.set(key, out.has(key) ? `${out.get(key)} ${msg}` : msg);
  }
  return out;
}
