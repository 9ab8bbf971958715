// The replay's narrations: what happened over a range of steps, in the reviewer's words
// ("grasp the can"). Listed under the timeline (steps, text, author), drawn as spans along
// the steps, edited in place and deleted with the version read (a 409: someone changed it
// meanwhile, and the list is read again); the step readout names the narration covering the
// current step. The study's narrations download and upload as JSON (docs/review.md).

import { el } from "../shared/api.js";

const $ = (id) => document.getElementById(id);
const MAX_TEXT = 1000;
const STALE = "Changed by someone else meanwhile — reloaded.";
const LANE_REM = 1.5;  // height of one row of spans on the track

/**
 * ``api``/``guard``/``toast`` as the page has them; ``replay``: {range() ([a, b] or null),
 * step(), show(step), clearMark()} of the replay viewer.
 */
export function createNarrations({ api, guard, toast, replay }) {
  const state = { episode: null, items: [], editing: null };

  const stepsText = (a, b) => (a === b ? `step ${a}` : `steps ${a}..${b}`);
  /** What Enter narrates: the marked range, else the current step. */
  const target = () => replay.range() ?? [replay.step(), replay.step()];
  const who = (n) => (n.by_participant ? "the participant" : n.author ?? "a deleted account");

  function status(text) {
    $("narration-status").textContent = text;
    $("narration-status").hidden = !text;
  }

  async function load() {
    const ep = state.episode;
    if (!ep) return;
    const items = await api("GET", `/api/episodes/${encodeURIComponent(ep.id)}/narrations`);
    if (state.episode !== ep) return;  // another episode was opened meanwhile
    state.items = items;
    if (!items.some((n) => n.id === state.editing)) state.editing = null;
    render();
  }

  async function open(ep) {
    Object.assign(state, { episode: ep, items: [], editing: null });
    $("narration-export").href = `/api/studies/${ep.study_id}/narrations`;
    $("narration-text").disabled = !ep.steps;
    status("");
    render();
    await load();
  }

  function close() { Object.assign(state, { episode: null, items: [], editing: null }); }

  // --- rendering -----------------------------------------------------------------------
  function render() {
    if (!state.episode) return;
    $("narration-count").textContent = state.items.length ? `(${state.items.length})` : "";
    renderTrack();
    renderList();
    showStep(replay.step());
  }

  /** The spans along the steps, overlapping ones on rows of their own; a click goes there. */
  function renderTrack() {
    const total = Math.max(1, state.episode.steps);
    const lanes = [];  // the last step of each row so far
    const spans = state.items.map((n) => {
      let lane = lanes.findIndex((end) => end < n.start_step);
      if (lane < 0) { lane = lanes.length; lanes.push(-1); }
      lanes[lane] = n.end_step;
      return el("button", {
        type: "button", class: "ep-narration-span", dataset: { id: n.id },
        title: `${stepsText(n.start_step, n.end_step)}: ${n.text}`,
        "aria-label": `Narration of ${stepsText(n.start_step, n.end_step)}: ${n.text}`,
        style: { left: `${(100 * n.start_step) / total}%`, top: `${lane * LANE_REM}rem`,
                 width: `${(100 * (n.end_step - n.start_step + 1)) / total}%` },
        onclick: () => replay.show(n.start_step),
      }, n.text);
    });
    const track = $("narration-track");
    track.replaceChildren(...spans);
    track.style.height = `${Math.max(1, lanes.length) * LANE_REM}rem`;
    track.hidden = !spans.length;
  }

  function renderList() {
    const list = $("narrations");
    if (!state.items.length) {
      list.replaceChildren(el("li", { class: "muted" }, "No narrations yet."));
      return;
    }
    list.replaceChildren(...state.items.map((n) => (n.id === state.editing ? editor(n) : item(n))));
  }

  function item(n) {
    return el("li", { class: "ep-narration", dataset: { id: n.id } },
      el("button", { class: "btn-link code", type: "button", title: "Go to its first step",
                     onclick: () => replay.show(n.start_step) }, stepsText(n.start_step, n.end_step)),
      el("span", { class: "ep-narration-text" }, n.text),
      el("span", { class: "muted small" }, ` — ${who(n)}`),
      el("button", { class: "btn btn-ghost btn-small", type: "button", "aria-label": `Edit narration “${n.text}”`,
                     onclick: () => edit(n) }, "Edit"),
      el("button", { class: "btn btn-ghost btn-small", type: "button", "aria-label": `Delete narration “${n.text}”`,
                     onclick: guard(() => remove(n)) }, "×"));
  }

  /** The narration in place as a small form: its steps and text; Enter saves, Esc cancels. */
  function editor(n) {
    const last = Math.max(0, state.episode.steps - 1);
    const number = (value, label) => el("input", { type: "number", min: 0, max: last, step: 1, value,
                                                    class: "ep-narration-step", "aria-label": label });
    const from = number(n.start_step, "From step"), to = number(n.end_step, "To step");
    const text = el("input", { value: n.text, maxlength: MAX_TEXT, class: "ep-narration-input",
                               "aria-label": "Narration text" });
    const form = el("form", { class: "ep-narration-edit", onsubmit: guard(async (event) => {
      event.preventDefault();
      await save(n, { start_step: Number(from.value), end_step: Number(to.value), text: text.value.trim() });
    }) }, from, "–", to, text,
    el("button", { class: "btn btn-small", type: "submit" }, "Save"),
    el("button", { class: "btn btn-ghost btn-small", type: "button", onclick: cancel }, "Cancel"));
    form.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      event.preventDefault(); event.stopPropagation(); cancel();
    });
    return el("li", { class: "ep-narration editing", dataset: { id: n.id } }, form);
  }

  /** The steps readout: the narration(s) covering ``step``; the form: what Enter narrates. */
  function showStep(step) {
    if (!state.episode) return;
    const [a, b] = target();
    $("narration-target").textContent = `${stepsText(a, b)}${replay.range() ? " (marked)" : ""}`;
    const covering = state.items.filter((n) => n.start_step <= step && step <= n.end_step);
    $("step-narration").textContent = covering.map((n) => `“${n.text}”`).join(" · ");
    $("step-narration").hidden = !covering.length;
    for (const span of $("narration-track").children) {
      span.classList.toggle("current", covering.some((n) => String(n.id) === span.dataset.id));
    }
  }

  // --- writes --------------------------------------------------------------------------
  /** ``w`` (or a click in the field): type what happened over the target steps. */
  function focus() {
    if (!state.episode || !state.episode.steps) return;
    $("narration-text").focus();
    $("narration-text").select();
  }

  async function add() {
    const text = $("narration-text").value.trim();
    if (!text) { toast("Type what happened first, then Enter.", "error"); focus(); return; }
    const [start, end] = target();
    const ep = state.episode;
    await api("POST", `/api/episodes/${encodeURIComponent(ep.id)}/narrations`,
              { json: { start_step: start, end_step: end, text } });
    $("narration-text").value = "";
    $("narration-text").blur();  // the keys go back to the replay
    toast(`Narrated ${stepsText(start, end)} “${text}”.`);
    status("");
    replay.clearMark();
    await load();
  }

  function edit(n) {
    state.editing = n.id;
    renderList();
    const input = $("narrations").querySelector(".editing .ep-narration-input");
    input.focus(); input.select();
  }

  function cancel() { state.editing = null; renderList(); }

  /** A write naming the version read; a 409 says so and reads the list again. */
  async function versioned(write) {
    try {
      await write();
      status("");
    } catch (err) {
      if (err.status !== 409 && err.status !== 404) throw err;
      state.editing = null;
      status(err.status === 409 ? STALE : "That narration was deleted meanwhile — reloaded.");
      toast(err.status === 409 ? STALE : err.message, "error");
    }
    await load();
  }

  async function save(n, change) {
    const body = { version: n.version };
    for (const key of ["start_step", "end_step", "text"]) if (change[key] !== n[key]) body[key] = change[key];
    if (Object.keys(body).length === 1) { cancel(); return; }  // nothing changed
    await versioned(async () => {
      await api("PATCH", `/api/episodes/${encodeURIComponent(n.episode_id)}/narrations/${n.id}`, { json: body });
      state.editing = null;
      toast(`Saved the narration of ${stepsText(change.start_step, change.end_step)}.`);
    });
  }

  async function remove(n) {
    await versioned(async () => {
      await api("DELETE", `/api/episodes/${encodeURIComponent(n.episode_id)}/narrations/${n.id}?version=${n.version}`);
      toast(`Deleted the narration “${n.text}”.`);
    });
  }

  /** Import…: the chosen JSON file (the export's shape), all or nothing. */
  async function importFile() {
    const file = $("narration-file").files[0];
    $("narration-file").value = "";
    if (!file || !state.episode) return;
    let rows;
    try { rows = JSON.parse(await file.text()); } catch (err) {
      toast(`${file.name} is not JSON: ${err.message}`, "error"); return;
    }
    const done = await api("POST", `/api/studies/${state.episode.study_id}/narrations/import`, { json: rows });
    const skipped = done.skipped ? ` (${done.skipped} already there, skipped)` : "";
    toast(`Imported ${done.imported} narration${done.imported === 1 ? "" : "s"}${skipped}.`);
    await load();
  }

  $("narration-form").addEventListener("submit", guard(async (event) => { event.preventDefault(); await add(); }));
  $("narration-text").addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault(); event.stopPropagation();
    $("narration-text").blur();
  });
  $("narration-import").addEventListener("click", () => $("narration-file").click());
  $("narration-file").addEventListener("change", guard(importFile));

  return { open, close, showStep, focus };
}
