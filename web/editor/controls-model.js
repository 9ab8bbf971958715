// The key binding table of the controls editor (controls.js): a controls mapping with every
// field present, and the rows of actions it binds (one per discrete action, or one per
// direction of each dimension of a Box).

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

// --- the actions: one row per discrete action, or per direction of each Box dimension -------

function bound(value, dim) {
  const v = Array.isArray(value) ? value[dim] : value;
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function allValues(controls) {
  const axes = controls.axes.flatMap((a) => [a.negative, a.positive]).filter((v) => v !== null && v !== undefined);
  return [...Object.values(controls.keys), ...Object.values(controls.buttons), ...axes];
}

/** The rows of the editor: {title, value, matches(v)} and whether the space is discrete. */
export function actionModel(actions, meanings, controls) {
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
        title: `dimension ${dim} ${sign > 0 ? "+" : "−"}`,
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
  return { discrete, rows, valid, size };
}
