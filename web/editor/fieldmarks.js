// RLDS Studio, study editor: a problem told at its field. A spec path from the server
// (["spec", "environments", 0, "max_duration_s"]) is found in the form, named as the form
// labels it ("Max duration (s) must be greater than 0"), marked (aria-invalid, a red
// outline, the message under it) and scrolled to.

import { el } from "../shared/api.js";

// The form's labels by spec path, for fields drawn without a path and for messages about a
// field the form does not show right now (the server's launch_check.py holds the same).
const STUDY_LABELS = {
  name: "Study name", description: "Description", instructions: "Study instructions",
  pause_timeout_s: "Pause timeout (s)", narrate_episodes: "Ask participants to narrate their episodes",
  "crowd.consent": "Consent text",
  "crowd.completion_code": "Completion code", "crowd.completion_url": "Completion URL",
  "crowd.screenout_code": "Screen-out code", "crowd.screenout_url": "Screen-out URL",
  "crowd.full_code": "Study-full code", "crowd.full_url": "Study-full URL",
  "crowd.requirements.min_episodes": "Required episodes",
  "crowd.requirements.min_play_time_s": "Required play time (s)",
  "crowd.inputs": "Participants play with", "crowd.platforms": "Participants come from",
  kind: "What participants do", "feedback.source.studies": "Source studies",
  "feedback.source.environments": "Environments to judge", "feedback.source.task": "Task",
  "feedback.source.statuses": "Episode statuses", "feedback.source.outcomes": "Outcomes",
  "feedback.source.tags": "With tags", "feedback.source.exclude_tags": "Without tags",
  "feedback.clip_steps": "Steps per clip", "feedback.view": "The clips show",
  "feedback.fps": "Playback speed (frames/s)", "feedback.questions": "Questions",
  "feedback.pairing": "Which items next", "feedback.judgements_per_item": "Judges per item",
  "feedback.judgements_per_participant": "Judgements per participant",
  "feedback.judgements_total": "Judgements in total", "feedback.min_watch_s": "Minimum watch time (s)",
  "feedback.gold": "Gold items", "feedback.gold_rate": "Share of gold items",
  "feedback.gold_min_accuracy": "Minimum gold accuracy", "feedback.gold_min_answers": "Gold answers before screening",
};
const ENV_LABELS = {
  name: "Display name", id: "Id (in exports)", mode: "Play mode", fps: "Steps per second (async)",
  allow_end: "Participants may end an episode", countdown_s: "Countdown (s, async)", step_on_input: "Step on input (async)", speed: "Speed (async)",
  speed_choices: "Speeds players may choose (async)", max_steps: "Max steps", max_duration_s: "Max duration (s)",
  image_quality: "Image quality", adaptive_quality: "Adapt quality to the player's link",
  min_stream_fps: "Fewest frames/s to stream (adaptive)", camera: "Camera", seeds: "Seeds",
  episodes_per_participant: "Episodes per participant", episodes_total: "Episodes in total",
  instructions: "Instructions", controls: "Controls", source: "Source", "source.kwargs": "Settings", policy: "Policy",
  tasks: "Tasks", task_order: "Task order",
};

/** The path from the study's root: a request's "body" and "spec" left out. */
export function specPath(loc) {
  const path = [...(loc || [])];
  while (path.length && (path[0] === "body" || path[0] === "spec")) path.shift();
  return path;
}

/** The scope of a path: its environment's card (and the rest of the path), or the form. */
function scopeOf(path) {
  if (path[0] === "environments" && typeof path[1] === "number") {
    return { root: document.querySelector(`#env-list [data-env-index="${path[1]}"]`), rest: path.slice(2), env: path[1] };
  }
  return { root: document.querySelector("#editor-form"), rest: path, env: null };
}

const own = (node, env) => env !== null || !node.closest(".env-card"); // study fields: not an environment's

/** The field box (``.field``, a group) that shows ``loc``, or null. */
export function fieldFor(loc) {
  const { root, rest, env } = scopeOf(specPath(loc));
  if (!root) return null;
  for (let end = rest.length; end > 0; end--) {
    const key = rest.slice(0, end).join(".");
    const found = [...root.querySelectorAll(`[data-path="${CSS.escape(key)}"]`)].find((n) => own(n, env));
    if (found) return found;
    if (env !== null && key === "controls") return root.querySelector(".env-controls");
    if (env !== null && key.startsWith("source.kwargs")) {
      const setting = rest[2] === undefined ? null : root.querySelector(`.env-settings [data-schemapath$=".${CSS.escape(String(rest[2]))}"]`);
      return setting || root.querySelector(".env-settings");
    }
    const label = (env === null ? STUDY_LABELS : ENV_LABELS)[key];
    const byLabel = label && [...root.querySelectorAll(".field > label, .field > legend")]
      .find((n) => own(n, env) && n.textContent.trim().startsWith(label));
    if (byLabel) return byLabel.parentElement;
  }
  return env !== null ? root : null;
}

/** The form's label of ``loc`` (the field's own label when drawn), else its path. */
export function labelFor(loc) {
  const path = specPath(loc);
  const box = fieldFor(path);
  const label = box?.querySelector(":scope > label, :scope > legend");
  if (label) return label.firstChild?.textContent.trim() || label.textContent.trim();
  const { rest, env } = scopeOf(path);
  if (env !== null && rest[0] === "source" && rest[1] === "kwargs" && rest[2] !== undefined) return String(rest[2]);
  if (env !== null && rest.length === 0) return "This environment";
  if (env !== null && rest[0] === "tasks" && typeof rest[1] === "number") {
    return `Task ${rest[1] + 1}${rest[2] === undefined ? "" : ` ${rest[2] === "settings" ? "settings" : rest[2]}`}`;
  }
  const table = env === null ? STUDY_LABELS : ENV_LABELS;
  for (let end = rest.length; end > 0; end--) {
    if (table[rest.slice(0, end).join(".")]) return table[rest.slice(0, end).join(".")];
  }
  return path.join(".");
}

// Pydantic's phrasing turned into the designer's ("Input should be greater than 0").
const PHRASES = [
  [/^Value error, /, ""],
  [/^Field required$/, "is required"],
  [/^String should have at least 1 character$/, "must not be empty"],
  [/^String should match pattern '\^\[a-z0-9\]\[a-z0-9_-\]\{0,63\}\$'$/, "may use only a-z, 0-9, - and _ (starting with a letter or digit), up to 64 characters"],
  [/^String should match pattern .*$/, "has characters it may not have"],
  [/^Input should be a valid integer.*$/, "must be a whole number"],
  [/^Input should be a valid number.*$/, "must be a number"],
  [/^Input should be a valid boolean.*$/, "must be on or off"],
  [/greater than or equal to/, "at least"],
  [/less than or equal to/, "at most"],
  [/^(Input|String|List|Value) should /, "must "],
];

/** ``msg`` said of the field ``label``: "Max duration (s) must be greater than 0". */
export function inWords(label, msg) {
  let text = String(msg ?? "");
  for (const [pattern, words] of PHRASES) text = text.replace(pattern, words);
  if (/^(must|is|may|has) /.test(text)) return `${label} ${text}`;
  if (text.startsWith(`setting '${label}'`)) return `S${text.slice(1)}`; // it names itself

  return `${label}: ${text}`;
}

/** Where ``loc`` is, for a list: "CartPole · Max duration (s)" or the study field's label. */
export function placeOf(loc) {
  const path = specPath(loc);
  const label = labelFor(path);
  if (path[0] !== "environments" || typeof path[1] !== "number") return label;
  const card = document.querySelector(`#env-list [data-env-index="${path[1]}"]`);
  const name = card?.getAttribute("aria-label")?.replace(/^Environment \d+: /, "") || `Environment ${path[1] + 1}`;
  return path.length > 2 ? `${name} · ${label}` : name;
}

/** A problem ``{loc, msg}`` as a line in the designer's words. */
export function problemLine(item) {
  const path = specPath(item.loc);
  if (!path.length) return String(item.msg);
  const words = inWords(labelFor(path), item.msg);
  const place = placeOf(path);
  return place.includes(" · ") ? `${place.split(" · ")[0]}: ${words}` : words;
}

let marks = 0;

/** Take every mark off the form. */
export function clearMarks() {
  for (const node of document.querySelectorAll("#editor-form .field-error")) node.remove();
  for (const node of document.querySelectorAll("#editor-form .field-invalid")) node.classList.remove("field-invalid");
  // only the marks this module made: the settings form and the axes table keep their own
  for (const node of document.querySelectorAll("#editor-form [data-field-mark]")) {
    node.removeAttribute("aria-invalid"); delete node.dataset.fieldMark;
  }
}

/** Mark the field of ``item`` ({loc, msg}) with its message; the field box, or null. */
export function markField(item) {
  const box = fieldFor(item.loc);
  if (!box) return null;
  for (let open = box.closest("details"); open; open = open.parentElement?.closest("details")) open.open = true;
  box.classList.add("field-invalid");
  if (box.closest(".env-settings")) return box; // the settings form says it beside the setting
  const label = labelFor(item.loc);
  const text = inWords(label, item.msg).replace(`${label}: `, ""); // the label is right above it
  if ([...box.querySelectorAll(":scope > .field-error")].some((n) => n.textContent === text)) return box;
  const note = el("p", { class: "field-error", id: `err-${++marks}` }, text);
  box.append(note);
  // a field's own control says it is invalid; a group (the controls, the settings) shows the note
  const control = box.matches(".field") ? box.querySelector("input:not([type=hidden]), select, textarea") : null;
  if (control) {
    control.setAttribute("aria-invalid", "true");
    control.dataset.fieldMark = "true";
    control.setAttribute("aria-describedby", note.id);
    const clear = () => {
      control.removeAttribute("aria-invalid"); delete control.dataset.fieldMark;
      box.classList.remove("field-invalid");
      note.remove();
    };
    control.addEventListener("input", clear, { once: true });
    control.addEventListener("change", clear, { once: true });
  }
  return box;
}

/** Mark each item's field; scroll to the first and focus its control (``focus``). */
export function markFields(items, { focus = true } = {}) {
  clearMarks();
  const boxes = items.map(markField).filter(Boolean);
  const first = boxes[0];
  if (first && focus) {
    first.scrollIntoView({ block: "center" });
    const control = first.querySelector("input:not([type=hidden]), select, textarea, button");
    control?.focus({ preventScroll: true });
  }
  return boxes.length;
}
