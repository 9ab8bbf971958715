// RLDS Studio, study editor: an environment's tasks (language-conditioned data: each episode
// draws one, whose instruction the participant is given and the episode records) as a table
// of id, label, instruction, seeds and settings (the catalog's settings form, or JSON), with
// the task order and a preview of each task's first frame (built by the server as an episode
// of that task starts: POST /api/studies/tasks/preview).

import { ApiError, el } from "../shared/api.js";
import { setIn, uid } from "./fields.js";
import { inWords, markFields, problemLine, specPath } from "./fieldmarks.js";
import { flushSettings, mountSettings } from "./settings.js";

const ORDERS = [
  ["balanced", "Balanced", "Each episode gets the task with the fewest episodes in the study so far."],
  ["fixed", "Fixed order", "Each participant's episodes take the tasks in the order listed, one after another."],
  ["choice", "The participant chooses", "The participant picks one of the tasks before each episode."],
];
const EMPTY = "No tasks: every episode gets this environment's instructions. Add a task to give each "
  + "episode its own instruction (and, through its settings or seeds, its own scene): each episode "
  + "draws one, and its instruction is recorded with the episode and exported with its data.";

const asJson = new WeakSet(); // tasks whose settings are edited as JSON
const previews = new WeakMap(); // task → {url} or {text}: its last preview
const openSettings = new WeakSet(); // tasks whose settings the designer opened

const sorted = (value) => JSON.stringify(Object.entries(value && typeof value === "object" ? value : {})
  .sort(([a], [b]) => (a < b ? -1 : 1)));

/** A cell holding one control, labelled for screen readers and for the marks of fieldmarks.js. */
function cell(path, label, control) {
  control.id ||= uid("task");
  return el("td", {}, el("div", { class: "field task-cell", dataset: { path: path.join(".") } },
    el("label", { class: "sr-only", for: control.id }, label), control));
}

/** An input bound to ``task[key]``: "" stays for a required key, else an empty one is unset. */
function textControl(task, key, { required = false, area = false, placeholder, onInput }) {
  const control = el(area ? "textarea" : "input", area ? { rows: 2, placeholder } : { type: "text", autocomplete: "off", placeholder });
  control.value = task[key] ?? "";
  control.addEventListener("input", () => {
    setIn(task, [key], control.value.trim() === "" && !required ? undefined : control.value);
    onInput();
  });
  return control;
}

/** Seeds typed as "1, 2, 3" (a word that is no number is kept for the server to name). */
function seedsControl(task, onInput) {
  const input = el("input", { type: "text", autocomplete: "off", placeholder: "default", title: "Seeds for this task's episodes; empty: the environment's." });
  input.value = Array.isArray(task.seeds) ? task.seeds.join(", ") : "";
  input.addEventListener("input", () => {
    const words = input.value.split(/[\s,]+/).filter(Boolean);
    setIn(task, ["seeds"], words.length ? words.map((w) => (/^\d+$/.test(w) ? Number(w) : w)) : undefined);
    onInput();
  });
  return input;
}

/** The task's settings as JSON: text that is no JSON object is kept for the server to name. */
function jsonSettings(task, path, label, onInput) {
  const id = uid("task-json");
  const area = el("textarea", { id, rows: 2, class: "task-json", spellcheck: "false", placeholder: '{"setting": "value"}' });
  area.value = task.settings && typeof task.settings === "object" && Object.keys(task.settings).length
    ? JSON.stringify(task.settings) : typeof task.settings === "string" ? task.settings : "";
  area.addEventListener("input", () => {
    const text = area.value.trim();
    let value = text;
    try {
      value = text === "" ? undefined : JSON.parse(text);
    } catch { /* kept as typed: Save names it */ }
    setIn(task, ["settings"], value && typeof value === "object" && !Array.isArray(value) && !Object.keys(value).length ? undefined : value);
    onInput();
  });
  return el("div", { class: "field task-json-field", dataset: { path: path.join(".") } },
    el("label", { for: id }, label),
    area,
    el("p", { class: "muted small hint" }, 'A JSON object merged over the environment\'s settings, e.g. {"cube_color": "blue"}.'));
}

/** What the task sets, in a line: "cube_color: blue", or that it keeps the environment's. */
function settingsNote(task) {
  const settings = task.settings;
  if (settings === undefined) return " · the environment's";
  if (typeof settings !== "object" || Array.isArray(settings)) return " · not a JSON object";
  return ` · ${Object.entries(settings).map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(", ")}`;
}

/** ``group`` folded under "Settings · what it sets", open while the designer keeps it
 *  open (across redraws) or a setting of it was refused. */
function folded(task, problems, note, group) {
  const details = el("details", { class: "task-settings-fold" }, el("summary", {}, "Settings", note), group);
  details.open = openSettings.has(task) || problems.size > 0;
  details.addEventListener("toggle", () => (details.open ? openSettings.add(task) : openSettings.delete(task)));
  return details;
}

/** The settings of ``task``: the catalog's form (a setting left unticked keeps the
 *  environment's value) or JSON; ``problems``: setting → messages the server gave. */
function settingsEditor(task, t, ctx, problems, edited, redraw) {
  const note = el("span", { class: "muted small summary-note" }, settingsNote(task));
  const onInput = () => { note.textContent = settingsNote(task); edited(); };
  const schema = ctx.entry?.settings_schema;
  const described = Object.keys(schema?.properties || {}).length > 0;
  const path = ["tasks", t, "settings"];
  const name = task.label || task.id || `task ${t + 1}`;
  // a value the form could not show (not in its list, unknown, no object) opens as JSON
  const offForm = task.settings !== undefined && (typeof task.settings !== "object" || Array.isArray(task.settings)
    || Object.entries(task.settings).some(([key, value]) => {
      const prop = schema?.properties?.[key];
      return !prop || (prop.enum && !prop.enum.includes(value));
    }));
  const json = !described || asJson.has(task) || offForm;
  const toggle = described ? el("button", {
    type: "button", class: "btn btn-small btn-link task-settings-mode",
    onclick: () => {
      flushSettings();
      if (asJson.has(task)) asJson.delete(task); else asJson.add(task);
      redraw();
    },
  }, json ? "Edit as a form" : "Edit as JSON") : null;
  if (json) {
    return folded(task, problems, note, named(el("div", { class: "task-settings", role: "group", "aria-label": `Settings of ${name}` },
      jsonSettings(task, path, `Settings of task ${t + 1} (JSON)`, onInput), toggle), "aria-label", "Settings of "));
  }
  const form = el("div", { class: "env-settings", dataset: { path: path.join(".") } });
  mountSettings(form, schema, task.settings, problems, (settings) => {
    if (sorted(settings) === sorted(task.settings)) return;
    setIn(task, ["settings"], Object.keys(settings).length ? settings : undefined);
    onInput();
  });
  return folded(task, problems, note, named(el("div", { class: "task-settings", role: "group", "aria-label": `Settings of ${name}` },
    el("p", { class: "muted small" }, "Tick a setting to set it for this task; one left unticked keeps the environment's."),
    form, toggle), "aria-label", "Settings of "));
}

/** The preview cell of ``task``: a button that builds it, and its first frame. */
function previewCell(env, task, t, ctx) {
  const name = task.label || task.id || `task ${t + 1}`;
  const img = named(el("img", { class: "task-frame", alt: `First frame of ${name}`, hidden: "" }), "alt", "First frame of ");
  const note = el("p", { class: "muted small task-preview-note", role: "status" });
  const show = (state) => {
    img.hidden = !state?.url;
    if (state?.url) img.src = state.url;
    note.textContent = state?.text ?? "";
  };
  show(previews.get(task));
  const button = named(el("button", {
    type: "button", class: "btn btn-small", "aria-label": `Preview ${name}`,
    onclick: async () => {
      flushSettings();
      button.disabled = true;
      show({ text: "Building…" });
      let state;
      try {
        const out = await ctx.api("POST", "/api/studies/tasks/preview", { json: { environment: env, task: task.id, index: ctx.index } });
        state = out.frame_url ? { url: out.frame_url } : { text: out.problems.map(problemLine).join(" ") || "No frame." };
      } catch (error) {
        state = { text: refusal(error, ctx.index) };
      }
      previews.set(task, state);
      show(state);
      button.disabled = false;
    },
  }, "Preview"), "aria-label", "Preview ");
  const td = el("td", { class: "task-preview" }, button, img, note);
  td.clearPreview = () => { previews.delete(task); show(null); };
  return td;
}

/** A refused preview in words; its problems marked at their fields (the task's setting…). */
function refusal(error, index) {
  const detail = error instanceof ApiError && Array.isArray(error.body?.detail) ? error.body.detail : [];
  const items = detail.map((item) => {
    const path = specPath(item.loc);
    return { loc: path[0] === "environment" ? ["environments", index, ...path.slice(1)] : path, msg: item.msg };
  }).filter((item) => item.loc[0] === "environments");
  if (items.length) {
    markFields(items, { focus: false });
    return `Not previewed: ${items.map((item) => inWords("", item.msg).replace(/^: /, "").trim()).join(" ")}`;
  }
  return `Not previewed: ${error.message}`;
}

function moveButton(label, text, className, onclick, disabled) {
  return el("button", { type: "button", class: `btn btn-small ${className}`, "aria-label": label, title: label.replace(/ .* /, " "), onclick, disabled }, text);
}

/** Mark ``node``'s ``attr`` as "<before><task's name><after>", for :func:`rename`. */
function named(node, attr, before, after = "") {
  Object.assign(node.dataset, { namedAttr: attr, namedBefore: before, namedAfter: after });
  return node;
}

/** A task's id or label edited: its row's buttons, frame and settings named anew. */
function rename(nodes, name) {
  for (const root of nodes) {
    for (const node of [root, ...root.querySelectorAll("[data-named-attr]")]) {
      const { namedAttr, namedBefore, namedAfter } = node.dataset;
      if (namedAttr) node.setAttribute(namedAttr, `${namedBefore}${name}${namedAfter ?? ""}`);
    }
  }
}

/** A new task's id: ``task-N`` not taken yet. */
function freshId(tasks) {
  const taken = new Set(tasks.map((task) => task.id));
  let n = tasks.length + 1;
  while (taken.has(`task-${n}`)) n++;
  return `task-${n}`;
}

/** The task order: a radio per way, each with its line of help. */
function orderField(env, onChange) {
  const current = env.task_order ?? "balanced";
  const name = uid("task-order");
  return el("fieldset", { class: "field task-order", dataset: { path: "task_order" } },
    el("legend", {}, "Task order"),
    ORDERS.map(([value, label, help]) => {
      const id = uid("order");
      const radio = el("input", { type: "radio", id, name, value });
      radio.checked = value === current;
      radio.addEventListener("change", () => {
        setIn(env, ["task_order"], value);
        onChange();
      });
      return el("div", { class: "task-order-choice" }, radio,
        el("label", { for: id }, label), el("p", { class: "muted small hint" }, help));
    }));
}

/**
 * The Tasks section of ``env``'s card (``env.tasks`` edited in place). ``ctx``: ``api``,
 * ``entry`` (the catalog entry or null), ``index`` (the environment's place), ``refused``
 * (the server's problems, locs from the study's root), ``onChange()``.
 */
export function tasksSection(env, ctx) {
  const body = el("div", { class: "tasks-body" });
  const summaryNote = el("span", { class: "muted small summary-note" });
  const changed = () => {
    const count = env.tasks?.length || 0;
    summaryNote.textContent = count ? ` · ${count} task${count === 1 ? "" : "s"}` : " · none";
    ctx.onChange();
  };
  const redraw = (focus) => {
    if (env.tasks && !env.tasks.length) delete env.tasks;
    body.replaceChildren(...tasksBody(env, ctx, changed, redraw));
    changed();
    if (focus) body.querySelector(focus)?.focus();
  };
  body.replaceChildren(...tasksBody(env, ctx, changed, redraw));
  const count = env.tasks?.length || 0;
  summaryNote.textContent = count ? ` · ${count} task${count === 1 ? "" : "s"}` : " · none";
  return el("details", { class: "env-section tasks-section" }, el("summary", {}, "Tasks", summaryNote), body);
}

/** The settings problems ``refused`` holds for task ``t``: setting → messages. */
function settingProblems(refused, index, t) {
  const found = new Map();
  for (const { loc, msg } of refused || []) {
    const [a, i, b, at, c, setting] = loc;
    if (a !== "environments" || i !== index || b !== "tasks" || at !== t || c !== "settings" || setting === undefined) continue;
    found.set(String(setting), [...(found.get(String(setting)) || []), msg]);
  }
  return found;
}

function tasksBody(env, ctx, changed, redraw) {
  const tasks = Array.isArray(env.tasks) ? env.tasks : [];
  const add = el("button", {
    type: "button", class: "btn btn-small", onclick: () => {
      env.tasks = [...tasks, { id: freshId(tasks), instruction: "" }];
      redraw(`tr[data-task-index="${env.tasks.length - 1}"] textarea`);
    },
  }, "+ Add task");
  if (!tasks.length) return [el("p", { class: "muted tasks-empty" }, EMPTY), add];
  const move = (t, delta, selector) => {
    tasks.splice(t + delta, 0, tasks.splice(t, 1)[0]);
    redraw(`tr[data-task-index="${t + delta}"] ${selector}`);
  };
  const rows = tasks.flatMap((task, t) => {
    const n = t + 1;
    const frame = previewCell(env, task, t, ctx);
    const edited = () => { frame.clearPreview(); changed(); };
    const label = task.label || task.id || `task ${n}`;
    const renamed = () => { rename([main, settings], task.label || task.id || `task ${n}`); changed(); };
    const main = el("tr", { class: "task-row", dataset: { taskIndex: t } },
      el("th", { scope: "row" }, String(n)),
      cell(["tasks", t, "id"], `Id of task ${n}`, textControl(task, "id", { required: true, onInput: renamed })),
      cell(["tasks", t, "label"], `Label of task ${n}`, textControl(task, "label", { placeholder: "optional", onInput: renamed })),
      cell(["tasks", t, "instruction"], `Instruction of task ${n}`,
        textControl(task, "instruction", { required: true, area: true, placeholder: "e.g. Pick up the red cube", onInput: changed })),
      cell(["tasks", t, "seeds"], `Seeds of task ${n}`, seedsControl(task, edited)),
      frame,
      el("td", { class: "task-actions" }, el("div", {},
        named(moveButton(`Move ${label} up`, "↑", "task-up", () => move(t, -1, ".task-up"), t === 0), "aria-label", "Move ", " up"),
        named(moveButton(`Move ${label} down`, "↓", "task-down", () => move(t, 1, ".task-down"), t === tasks.length - 1), "aria-label", "Move ", " down"),
        named(el("button", {
          type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Remove ${label}`,
          onclick: () => { tasks.splice(t, 1); redraw(); },
        }, "Remove"), "aria-label", "Remove "))));
    const settings = el("tr", { class: "task-settings-row" },
      el("td", { colspan: 7 }, settingsEditor(task, t, ctx, settingProblems(ctx.refused, ctx.index, t), edited, () => redraw())));
    return [main, settings];
  });
  const table = el("div", { class: "tasks-scroll" }, el("table", { class: "table tasks-table", "aria-label": "Tasks" },
    el("thead", {}, el("tr", {}, ["#", "Id", "Label", "Instruction", "Seeds", "Preview", ""].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows)));
  return [table, add, orderField(env, changed)];
}
