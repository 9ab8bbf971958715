// RLDS Studio, study editor: one environment's card (display name, instructions, mode and
// pace, limits, image quality, camera, seeds, quotas, settings, tasks, shared-autonomy
// policy, controls and devices), with its buttons
// to move, duplicate and remove it, and what Validate found for it.

import { el } from "../shared/api.js";
import { mountControlsEditor } from "./controls.js";
import { fieldBox, inputField, markdownField, selectField, setIn, switchField, uid } from "./fields.js";
import { policyEditor } from "./policy.js";
import { mountSettings } from "./settings.js";
import { renderEnvReport } from "./validation.js";
import { tasksSection } from "./tasks.js";
import { inWords, labelFor } from "./fieldmarks.js";

/** What an environment's source names: a Gymnasium id or a dm_env factory. */
export function sourceRef(env) {
  return env.source?.kind === "dm_env" ? env.source.factory : env.source?.id;
}

/** Numbers typed as "1, 2, 3" (a word that is no number is kept for the server to name). */
function numbersField(env, key, label, placeholder, hint, onChange) {
  const id = uid("f");
  const input = el("input", { id, type: "text", autocomplete: "off", placeholder });
  input.value = Array.isArray(env[key]) ? env[key].join(", ") : "";
  input.addEventListener("input", () => {
    const words = input.value.split(/[\s,]+/).filter(Boolean);
    const value = words.length ? words.map((w) => (/^\d+(\.\d+)?$/.test(w) ? Number(w) : w)) : undefined;
    setIn(env, [key], value);
    onChange();
  });
  return fieldBox(id, label, input, hint);
}

/** A select of the cameras the environment reported when validated (kept when unknown). */
function cameraField(env, report, onChange) {
  const id = uid("f");
  const cameras = report?.cameras || [];
  const names = [...new Set([...cameras, ...(env.camera ? [env.camera] : [])])];
  const select = el("select", { id, disabled: names.length ? undefined : "" },
    el("option", { value: "" }, "Default camera"),
    names.map((name) => el("option", { value: name }, name)));
  select.value = env.camera ?? "";
  select.addEventListener("change", () => {
    setIn(env, ["camera"], select.value || undefined);
    onChange();
  });
  const hint = cameras.length ? "Cameras this environment reports."
    : report ? "This environment reports no cameras." : "Validate to list the cameras this environment reports.";
  return fieldBox(id, "Camera", select, hint);
}

/** "I'm done": whether participants may end an episode at any step (``allow_end``); unset,
 *  the catalog's default (on for manipulation tasks), which the switch shows. */
function allowEndField(env, entry, onChange) {
  const id = uid("f");
  const input = el("input", { id, type: "checkbox", class: "switch", role: "switch" });
  const byDefault = Boolean(entry?.allow_end);
  input.checked = env.allow_end ?? byDefault;
  input.addEventListener("change", () => {
    setIn(env, ["allow_end"], input.checked);
    onChange();
  });
  const hint = `The player shows an “I'm done” button (and the X key): the episode ends there, then saves or is discarded; it is exported as truncated, ended by the participant. ${
    byDefault ? "On by default for this robot task." : "Off by default for games."}`;
  return el("div", { class: "field field-switch", dataset: { path: "allow_end" } }, input,
    el("label", { for: id }, "Participants may end an episode (“I'm done”)"), el("p", { class: "muted small hint" }, hint));
}

function iconButton(label, text, onclick, disabled = false) {
  return el("button", { type: "button", class: "btn btn-small", "aria-label": label, title: label, onclick, disabled }, text);
}

/**
 * The card of ``env`` (mutated in place as the designer edits), at ``index`` of ``count``.
 * ``ctx``: ``api``, ``entry`` (its catalog entry or null), ``report`` (last validation or
 * null), ``onChange()``, ``onMove(delta)``, ``onDuplicate()``, ``onRemove()``.
 */
export function renderEnvCard(env, index, count, ctx) {
  const { api, entry, report, onChange } = ctx;
  const name = env.name || env.id || `Environment ${index + 1}`;
  const changed = () => onChange();
  const thumb = entry?.thumbnail_url
    ? el("img", { class: "env-thumb", src: entry.thumbnail_url, alt: "", loading: "lazy",
      onload: (event) => event.target.classList.add("thumb-loaded") })
    : null;
  const head = el("div", { class: "env-head" }, thumb,
    el("div", { class: "env-title" },
      el("h4", {}, `${index + 1}. ${name}`),
      el("p", { class: "muted small" }, `${env.source?.kind ?? "?"} · ${sourceRef(env) ?? "no source"}`,
        entry ? ` · ${entry.suite} · ${entry.action_type}` : "")),
    el("div", { class: "toolbar env-buttons" },
      iconButton(`Move ${name} up`, "↑", () => ctx.onMove(-1), index === 0),
      iconButton(`Move ${name} down`, "↓", () => ctx.onMove(1), index === count - 1),
      iconButton(`Duplicate ${name}`, "Duplicate", ctx.onDuplicate),
      el("button", { type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Remove ${name}`, onclick: ctx.onRemove }, "Remove")));

  const grid = el("div", { class: "form-grid env-grid" },
    inputField(env, ["name"], "Display name", { required: true, onChange: changed }),
    inputField(env, ["id"], "Id (in exports)", { required: true, onChange: changed, hint: "a-z, 0-9, - and _" }),
    selectField(env, ["mode"], "Play mode", [["sync", "sync (turn-based)"], ["async", "async (real time)"]], { defaultValue: "sync", onChange: changed }),
    inputField(env, ["fps"], "Steps per second (async)", { kind: "int", min: 1, max: 120, defaultValue: 30, onChange: changed }),
    inputField(env, ["countdown_s"], "Countdown (s, async)", { kind: "int", min: 0, max: 10, defaultValue: 0, onChange: changed }),
    switchField(env, ["step_on_input"], "Step on input (async)", { onChange: changed,
      hint: "Lower latency: a new input steps at once, not at the next tick; the pace stays the same." }),
    inputField(env, ["speed"], "Speed (async)", { kind: "number", min: 0.05, max: 10, defaultValue: 1, onChange: changed }),
    numbersField(env, "speed_choices", "Speeds players may choose (async)", "none: fixed (default)",
      "Comma-separated, e.g. 0.5, 1, 2; must include the speed above.", changed),
    inputField(env, ["max_steps"], "Max steps", { kind: "int", min: 1, max: 1000000, defaultValue: "none", onChange: changed }),
    inputField(env, ["max_duration_s"], "Max duration (s)", { kind: "number", min: 0, max: 86400, defaultValue: "none", onChange: changed }),
    allowEndField(env, entry, changed),
    selectField(env, ["image_quality"], "Image quality", [["low"], ["medium"], ["high"]], { defaultValue: "medium", onChange: changed }),
    switchField(env, ["adaptive_quality"], "Adapt quality to the player's link", { onChange: changed,
      hint: "Streams lower quality while a player's connection falls behind, up to the image quality; recordings keep every observation." }),
    inputField(env, ["min_stream_fps"], "Fewest frames/s to stream (adaptive)", { kind: "int", min: 1, max: 119, defaultValue: "every frame", onChange: changed,
      hint: "Async with adaptive quality: a slow link may get fewer frames, down to this rate; every step is still recorded." }),
    cameraField(env, report, changed),
    numbersField(env, "seeds", "Seeds", "random (default)", "Used in turn, one per episode; comma-separated.", changed),
    inputField(env, ["episodes_per_participant"], "Episodes per participant", { kind: "int", min: 1, defaultValue: 1, onChange: changed }),
    inputField(env, ["episodes_total"], "Episodes in total", { kind: "int", min: 1, defaultValue: "no limit", onChange: changed }));

  const settings = el("div", { class: "env-settings", "aria-label": `Settings of ${name}`, role: "group" });
  const sorted = (kwargs) => JSON.stringify(Object.entries(kwargs || {}).sort(([a], [b]) => (a < b ? -1 : 1)));
  const kwargsNow = () => sorted(env.source?.kwargs);
  // each refused or failed setting's message goes beside that setting
  const settingProblems = new Map();
  const found = [...(ctx.refused || []), ...(report?.problems || [])];
  for (const { loc, msg } of found) {
    const at = loc.indexOf("kwargs");
    if (at < 1 || loc[at - 1] !== "source" || loc.length !== at + 2) continue;
    settingProblems.set(loc[at + 1], [...(settingProblems.get(loc[at + 1]) || []), msg]);
  }
  mountSettings(settings, entry?.settings_schema, env.source?.kwargs, settingProblems, (kwargs) => {
    if (sorted(kwargs) === kwargsNow()) return;
    setIn(env, ["source", "kwargs"], Object.keys(kwargs).length ? kwargs : undefined);
    onChange();
  });

  // a section holding a field the server refused opens by itself, its message at the field
  const about = (part) => (ctx.refused || []).some(({ loc }) => loc.includes(part));
  const controls = el("div", { class: "env-controls", role: "group", "aria-label": `Controls of ${name}` });
  mountControlsEditor(controls, {
    actions: report?.action_space ?? null,
    meanings: report?.action_meanings ?? null,
    dimensions: entry?.dimensions ?? null, // what each dimension of a vector action means
    controls: env.controls ?? null,
    // the validation report's default controls are the catalog's for this very source
    defaults: report?.default_controls ?? entry?.controls ?? null,
    problems: found,
    onChange: (value) => {
      setIn(env, ["controls"], value ?? undefined);
      onChange();
    },
  });

  return el("article", { class: "env-card", "aria-label": `Environment ${index + 1}: ${name}`, dataset: { envIndex: index } },
    head,
    ctx.refused?.length
      ? el("div", { class: "alert alert-error", role: "alert" },
        el("p", { class: "alert-message" }, "Not saved: fix these first."),
        el("ul", { class: "problems", "aria-label": "save problems" }, ctx.refused.map(({ loc, msg }) => el("li", {}, inWords(labelFor(loc), msg)))))
      : null,
    report ? renderEnvReport(report) : null,
    grid,
    markdownField(api, env, ["instructions"], "Instructions", { rows: 3, onChange: changed }),
    el("details", { class: "env-section", open: "" }, el("summary", {}, "Settings"),
      entry ? el("p", { class: "muted small" }, "Tick a setting to set it; a setting left unticked keeps the environment's own default.")
        : el("p", { class: "muted small" }, "Not a catalog environment: edit its settings (kwargs) in YAML."),
      settings),
    keptOpen(tasksSection(env, { api, entry, index, refused: ctx.refused, onChange }), `tasks:${env.id}`, about("tasks")),
    keptOpen(el("details", { class: "env-section" }, el("summary", {}, "Policy (shared autonomy)",
      env.policy?.id ? el("span", { class: "muted small summary-note" }, ` · ${env.policy.id}`) : null),
    policyEditor(api, env, found, changed)), `policy:${env.id}`, about("policy")),
    keptOpen(el("details", { class: "env-section" }, el("summary", {}, "Controls"), controls), `controls:${env.id}`, about("axes")));
}

// Sections the designer opened stay open when the cards are drawn again (after Validate, a save).
const openSections = new Set();

function keptOpen(details, key, problem = false) {
  if (problem) openSections.add(key);
  details.open = openSections.has(key);
  const keep = (open) => (open ? openSections.add(key) : openSections.delete(key));
  // Noted at the click (mouse or keyboard), before the details toggles: the "toggle" event
  // comes a task later, and cards drawn again in between (a validation's reports arriving)
  // would have drawn the section closed again.
  details.querySelector("summary")?.addEventListener("click", () => keep(!details.open));
  details.addEventListener("toggle", () => keep(details.open));
  return details;
}
