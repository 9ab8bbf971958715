// The key binding table of the controls editor (controls.js): a controls mapping with every
// field present, the rows of actions it binds (one per discrete action, or one per
// direction of each dimension of a Box), and the mapping as one line or as the file writes it.

import { axisName } from "./devices.js";

export const clone = (value) => JSON.parse(JSON.stringify(value ?? {}));

/** A controls mapping with every field present (values the designer set are kept). */
export function normalize(controls) {
  const c = clone(controls);
  return {
    ...c,
    keys: c.keys || {},
    buttons: c.buttons || {},
    axes: c.axes || [],
    deadzone: c.deadzone ?? 0.15,
    noop: c.noop ?? null,
    labels: c.labels || {},
  };
}

export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** An action value as the editor shows it: a name as it is, else its JSON. */
export const valueText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

/** Every binding of ``c`` in one line ("KeyA → 1; button 0 → 2; mouse drag ←→ → x × 0.5"),
 *  a dimension by its name in ``dimensions`` where it has one. */
export function describe(c, dimensions = null) {
  const parts = [
    ...Object.entries(c.keys).map(([k, v]) => `${k} → ${valueText(v)}`),
    ...Object.entries(c.buttons).map(([b, v]) => `button ${b} → ${valueText(v)}`),
    ...c.axes.map((a) => ((a.negative ?? null) !== null || (a.positive ?? null) !== null
      ? `${axisName(a)} → ${valueText(a.negative ?? null)} / ${valueText(a.positive ?? null)}`
      : `${axisName(a)} → ${dimensionName(dimensions, a.dim ?? 0)} × ${a.scale ?? 1}`)),
  ];
  return parts.join("; ");
}

/**
 * ``controls`` as the study file writes it: fields left at their default (null) are left
 * out, so an axis reads ``{source: mouse, axis: 0, dim: 0, scale: 0.8}``, not its nulls.
 */
export function tidy(controls) {
  const out = clone(controls);
  if (out.noop === null) delete out.noop;
  out.axes = (out.axes || []).map((axis) => Object.fromEntries(Object.entries(axis).filter(([, v]) => v !== null)));
  return out;
}

// --- the actions: one row per discrete action, or per direction of each Box dimension -------

function bound(value, dim) {
  const v = Array.isArray(value) ? value[dim] : value;
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function allValues(controls) {
  const axes = controls.axes.flatMap((a) => [a.negative, a.positive]).filter((v) => v !== null && v !== undefined);
  return [...Object.values(controls.keys), ...Object.values(controls.buttons), ...axes];
}

/** The rows of the editor: {title, value, matches(v)} and whether the space is discrete.
 *  ``dimensions`` name a vector's dimensions (the catalog's: an arm's x, y, z, roll, pitch,
 *  yaw, gripper): a row is "x +", not "dimension 0 +". */
export function actionModel(actions, meanings, controls, dimensions = null) {
  const names = Array.isArray(meanings) ? meanings : [];
  const values = allValues(controls);
  const discrete = actions
    ? actions.num_values !== undefined || (Array.isArray(actions.shape) && actions.shape.length === 0 && /int/.test(actions.dtype || ""))
    : names.length > 0 || values.every((v) => typeof v === "number" || typeof v === "string");
  if (discrete) {
    const low = actions ? Number(actions.minimum ?? 0) : 0;
    let count = actions?.num_values ?? (actions && actions.maximum !== undefined ? Number(actions.maximum) - low + 1 : names.length);
    if (!count) count = Math.max(0, ...values.filter((v) => typeof v === "number").map((v) => v + 1));
    const rows = [];
    for (let i = 0; i < count; i += 1) {
      const index = low + i;
      const name = names[i];
      rows.push({
        title: name ? `${index} · ${name}` : String(index),
        value: name ?? index, // environments that name their actions take the names
        matches: (v) => v === index || (name !== undefined && v === name),
      });
    }
    const valid = (v) => rows.some((r) => r.matches(v));
    return { discrete, rows, valid, size: count };
  }
  const shape = actions?.shape ?? [];
  let size = shape.reduce((a, b) => a * b, 1);
  if (!actions) size = Math.max(1, ...values.filter(Array.isArray).map((v) => v.length));
  const rows = [];
  for (let dim = 0; dim < size; dim += 1) {
    for (const sign of [1, -1]) {
      const limit = bound(sign > 0 ? actions?.maximum : actions?.minimum, dim);
      if (limit === 0) continue; // this direction cannot move: nothing to bind
      const amount = limit === null ? sign : limit;
      const vector = Array.from({ length: size }, (_, i) => (i === dim ? amount : 0));
      rows.push({
        title: `${dimensionName(dimensions, dim)} ${sign > 0 ? "+" : "−"}`,
        value: vector,
        dim,
        sign,
        magnitude: Math.abs(amount),
        matches: (v) => Array.isArray(v) && v.length === size
          && v.every((x, i) => (i === dim ? Math.sign(x) === sign : x === 0)),
      });
    }
  }
  const valid = (v) => Array.isArray(v) && v.length === size && v.every((x) => typeof x === "number");
  return { discrete, rows, valid, size, dimensions: dimensions || [] };
}

/** What dimension ``dim`` of a vector means ("x"), or "dimension 2" where nothing says. */
export const dimensionName = (dimensions, dim) => (dimensions && dimensions[dim]) || `dimension ${dim}`;
