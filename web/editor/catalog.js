// RLDS Studio, study editor: the catalog (``GET /api/catalog``), its picker dialog, and the
// catalog entry an environment of the study comes from.

import { el } from "../shared/api.js";

let catalog = null; // the entries, loaded once per page
let gymIds = null; // allowed Gymnasium ids, asked once per page

/** Fill the id field's suggestions with the allowed Gymnasium ids (in the background). */
async function suggestGymIds(api) {
  if (gymIds) return;
  gymIds = [];
  try {
    gymIds = await api("GET", "/api/catalog/gymnasium-ids");
  } catch {
    gymIds = null; // asked again next time
    return;
  }
  document.getElementById("gym-ids").replaceChildren(...gymIds.map((id) => el("option", { value: id })));
}

/** The catalog's entries (fetched on first use). */
export async function loadCatalog(api) {
  if (!catalog) catalog = await api("GET", "/api/catalog");
  return catalog;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The catalog entry ``env`` comes from: same source and fixed settings (null if none). */
export function entryFor(env, entries) {
  const source = env.source || {};
  const ref = (s) => (s.kind === "dm_env" ? s.factory : s.id);
  const candidates = (entries || []).filter((e) => e.source.kind === (source.kind || "gymnasium") && ref(e.source) === ref(source));
  const kwargs = source.kwargs || {};
  const fits = candidates.filter((e) => Object.entries(e.source.kwargs || {}).every(([k, v]) => same(kwargs[k], v)));
  fits.sort((a, b) => Object.keys(b.source.kwargs || {}).length - Object.keys(a.source.kwargs || {}).length);
  return fits[0] || candidates[0] || null;
}

/** A slug not yet used by ``taken`` ids, from ``name``. */
export function freeId(name, taken) {
  const base = (name.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^[-_]+|-+$/g, "") || "env").slice(0, 56);
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  return id;
}

/** A new environment of the study, with the entry's defaults written out. */
export function environmentFrom(entry, taken) {
  const source = { kind: entry.source.kind };
  if (entry.source.kind === "dm_env") source.factory = entry.source.factory;
  else source.id = entry.source.id;
  if (Object.keys(entry.source.kwargs || {}).length) source.kwargs = structuredClone(entry.source.kwargs);
  return { id: freeId(entry.key, taken), name: entry.name, source, mode: entry.mode, fps: entry.fps };
}

function matches(entry, words) {
  const text = `${entry.name} ${entry.suite} ${entry.action_type} ${entry.source.id || entry.source.factory} ${entry.runtime.name}`.toLowerCase();
  return words.every((w) => text.includes(w));
}

/** Why an entry cannot be added, and what the operator runs to change that (nodes). */
function runtimeNote(runtime) {
  const where = runtime.name === "app" ? "" : ` (${runtime.name} runtime)`;
  const what = { not_installed: "not installed here", outdated: "installed from an older lock",
    failed: "cannot run here" }[runtime.state] || runtime.state;
  const why = runtime.state === "failed" && runtime.message ? `: ${runtime.message}` : "";
  if (!runtime.command) return [` ${what}${where}${why}`];
  return [` ${what}${where}${why} · the operator runs `, el("code", {}, runtime.command)];
}

// A frame's box is light until its picture arrives (a robot's is built in a worker, seconds
// the first time), then dark around it: never a black box standing for a missing picture.
const shown = (event) => event.target.classList.add("thumb-loaded");
const SHOWN_FRAMES = 8; // first frames load for the first matches once the search settles

/**
 * Open the picker; resolves to a catalog entry, ``{gymnasiumId}``, or null when cancelled.
 */
export async function pickEnvironment(api) {
  const dialog = document.getElementById("catalog-dialog");
  const search = document.getElementById("catalog-search");
  const list = document.getElementById("catalog-list");
  const count = document.getElementById("catalog-count");
  const gymId = document.getElementById("gym-id");
  const error = document.getElementById("catalog-error");
  error.hidden = true;
  suggestGymIds(api);
  let entries;
  try {
    entries = await loadCatalog(api);
  } catch (e) {
    entries = [];
    error.textContent = `The catalog could not load: ${e.message}`;
    error.hidden = false;
  }
  return new Promise((resolve) => {
    let chosen = null;
    let timer = null;
    const choose = (value) => {
      chosen = value;
      dialog.close();
    };
    const frames = () => {
      for (const img of list.querySelectorAll("img[data-src]")) {
        img.src = img.dataset.src;
        img.removeAttribute("data-src");
      }
    };
    const render = () => {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const shown = entries.filter((e) => matches(e, words));
      count.textContent = `${shown.length} of ${entries.length} environments`;
      list.replaceChildren(...shown.map((entry, i) => el("li", { class: "catalog-item" },
        el("button", {
          type: "button",
          class: "catalog-pick",
          disabled: entry.installed ? undefined : "",
          "aria-label": `Add ${entry.name}`,
          onclick: () => choose(entry),
        },
        entry.thumbnail_url && i < SHOWN_FRAMES
          ? el("img", { class: "catalog-thumb", alt: "", "data-src": entry.thumbnail_url, loading: "lazy", onload: shown })
          : el("span", { class: "catalog-thumb catalog-thumb-none" }),
        el("span", { class: "catalog-text" },
          el("strong", {}, entry.name),
          el("span", { class: "muted small" }, `${entry.suite} · ${entry.source.id || entry.source.factory}`),
          el("span", { class: `badge badge-${entry.action_type}` }, entry.action_type),
          entry.runtime.name === "app" ? null
            : el("span", { class: "badge badge-runtime", title: "runs in its own Python environment (docs/runtime.md, “Runtimes”)" }, `runtime ${entry.runtime.name}`),
          entry.replays === false
            ? el("span", { class: "badge badge-warn", title: "Run twice from the same seed and actions, it differed: its episodes cannot be verified by replay" }, "does not replay")
            : null,
          entry.installed ? null : el("span", { class: "muted small catalog-why" }, ...runtimeNote(entry.runtime)))))));
      clearTimeout(timer);
      timer = setTimeout(frames, 400); // building a first frame takes a worker: not per keystroke
    };
    const onInput = () => render();
    const onAddId = () => {
      const id = gymId.value.trim();
      if (!id) {
        error.textContent = "Type a Gymnasium id first, e.g. CartPole-v1.";
        error.hidden = false;
        gymId.focus();
        return;
      }
      choose({ gymnasiumId: id });
    };
    search.addEventListener("input", onInput);
    document.getElementById("gym-id-add").addEventListener("click", onAddId);
    dialog.addEventListener("close", () => {
      clearTimeout(timer);
      search.removeEventListener("input", onInput);
      document.getElementById("gym-id-add").removeEventListener("click", onAddId);
      resolve(chosen);
    }, { once: true });
    search.value = "";
    gymId.value = "";
    render();
    dialog.showModal();
    search.focus();
  });
}
