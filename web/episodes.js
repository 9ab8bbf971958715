// Episodes page: filter a study's episodes, replay and tag them, export them.
// /episodes.html?study=<id>; writes carry X-CSRF-Token = the studio_csrf cookie.

import { createApi, el, errorMessage, toast as showToast } from "./api.js";

const $ = (id) => document.getElementById(id);
const STATUSES = ["completed", "rejected", "canceled", "abandoned", "failed", "recording"];
const PAGE = 50;
const study = Number(new URLSearchParams(location.search).get("study"));
const state = { offset: 0, total: 0, items: [], checked: new Set(), episode: null, steps: [],
                step: 0, playing: false, timer: null, mark: null, markEnd: null, job: null };

const api = createApi({
  // This page's wording: the field problems of a validation error follow its message.
  describe: (status, body, isJson) => (isJson && errorText(body)) || `HTTP ${status}`,
  onUnauthorized: () => { location.href = "/"; throw new Error("Log in first."); },
});

function errorText(data) {
  const text = errorMessage(data);
  if (data && data.message && Array.isArray(data.detail)) {
    return `${text} ${data.detail.map((d) => d.msg).join("; ")}`;
  }
  return text;
}

const toast = (text, kind = "success") =>
  showToast(text, kind, { duration: 5000, role: kind === "error" ? "alert" : "status" });

const guard = (fn) => async (...args) => {
  try { await fn(...args); } catch (err) { toast(err.message, "error"); }
};

// --- filters and list ------------------------------------------------------------------
function filterParams() {
  const p = new URLSearchParams();
  document.querySelectorAll("#status-boxes input:checked").forEach((b) => p.append("status", b.value));
  [...$("f-env").selectedOptions].forEach((o) => p.append("env", o.value));
  const add = (key, id) => { const v = $(id).value.trim(); if (v) p.append(key, v); };
  add("participant", "f-participant"); add("tag", "f-tag"); add("exclude_tag", "f-exclude");
  for (const [key, id] of [["since", "f-since"], ["until", "f-until"]]) {
    if ($(id).value) p.append(key, new Date($(id).value).toISOString());
  }
  return p;
}

function filterSelection() {
  const p = filterParams();
  return {
    statuses: p.getAll("status").length ? p.getAll("status") : ["completed"],
    environments: p.getAll("env"), participants: p.getAll("participant"),
    tags: p.getAll("tag"), exclude_tags: p.getAll("exclude_tag"),
    since: p.get("since"), until: p.get("until"),
  };
}

/** After the filters change: the page of rows, then the returns plot. */
async function loadEpisodes() {
  await loadPage();
  await loadPlot();
}

/** The page of rows at state.offset (paging and most edits reload only this). */
async function loadPage() {
  const p = filterParams();
  p.set("offset", state.offset); p.set("limit", PAGE);
  const page = await api("GET", `/api/studies/${study}/episodes?${p}`);
  state.items = page.items; state.total = page.total;
  $("tag-names").replaceChildren(...page.tag_names.map((n) => el("option", { value: n })));
  renderTable();
}

/** The returns plot: the first 500 episodes the filters select, oldest first. */
async function loadPlot() {
  const p = filterParams();
  p.set("offset", 0); p.set("limit", 500); p.set("sort", "started_at");
  renderPlot((await api("GET", `/api/studies/${study}/episodes?${p}`)).items);
}

function renderTable() {
  const body = $("episodes-body");
  body.replaceChildren(...state.items.map((e) => {
    const box = el("input", { type: "checkbox", "aria-label": `Select episode ${e.id}` });
    box.checked = state.checked.has(e.id);
    box.addEventListener("change", () => {
      box.checked ? state.checked.add(e.id) : state.checked.delete(e.id);
      $("ex-checked-count").textContent = `(${state.checked.size})`;
    });
    const open = el("button", { class: "btn btn-small", type: "button",
                                onclick: guard(() => openEpisode(e.id)) }, "Replay");
    const row = el("tr", { "data-id": e.id },
      el("td", {}, box), el("td", {}, new Date(e.started_at).toLocaleString()),
      el("td", {}, e.env_key), el("td", {}, el("span", { class: `badge ep-${e.status}` }, e.status)),
      el("td", { class: "code" }, e.participant), el("td", { class: "right" }, String(e.steps)),
      el("td", { class: "right" }, e.total_reward.toFixed(2)),
      el("td", {}, e.tags.join(", ")), el("td", {}, open));
    if (state.episode && state.episode.id === e.id) row.classList.add("selected");
    return row;
  }));
  const empty = state.total === 0;
  $("empty").hidden = !empty; $("episodes-table").hidden = empty;
  const filtered = filterParams().toString() !== "";
  $("empty-title").textContent = filtered ? "No episode matches these filters" : "No episodes yet";
  $("empty-text").textContent = filtered
    ? "Loosen or reset the filters to see more episodes."
    : "Episodes appear here as soon as people play the study: share its permalink from the studies page.";
  $("total").textContent = `(${state.total})`;
  $("ex-filter-count").textContent = `(${state.total} listed)`;
  const last = Math.min(state.offset + PAGE, state.total);
  $("page-info").textContent = state.total ? `${state.offset + 1}–${last} of ${state.total}` : "";
  $("prev-page").disabled = state.offset === 0;
  $("next-page").disabled = last >= state.total;
}

function renderPlot(items) {
  const box = $("returns-plot");
  $("returns-card").hidden = items.length === 0;
  if (!items.length) { box.replaceChildren(); return; }
  const W = 720, H = 180, P = 36;
  const ys = items.map((e) => e.total_reward);
  let lo = Math.min(0, ...ys), hi = Math.max(...ys);
  if (hi === lo) hi = lo + 1;
  const x = (i) => P + (items.length === 1 ? (W - 2 * P) / 2 : (i * (W - 2 * P)) / (items.length - 1));
  const y = (v) => H - P / 2 - ((v - lo) * (H - P)) / (hi - lo);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n); return n;
  };
  add("line", { x1: P, x2: W - P, y1: y(0), y2: y(0), class: "ep-axis" });
  add("text", { x: 2, y: y(hi) + 4, class: "ep-axis-label" }, hi.toFixed(1));
  add("text", { x: 2, y: y(lo) + 4, class: "ep-axis-label" }, lo.toFixed(1));
  add("polyline", { points: items.map((e, i) => `${x(i)},${y(e.total_reward)}`).join(" "),
                    class: "ep-line" });
  items.forEach((e, i) => {
    const dot = add("circle", { cx: x(i), cy: y(e.total_reward), r: 5, class: `ep-dot ep-dot-${e.status}`,
                                tabindex: 0, "data-id": e.id });
    const tip = document.createElementNS(ns, "title");
    tip.textContent = `${e.env_key} · ${e.status} · return ${e.total_reward.toFixed(2)} · ${e.steps} steps`;
    dot.append(tip);
    dot.addEventListener("click", guard(() => openEpisode(e.id)));
  });
  box.replaceChildren(svg);
}

// --- replay viewer ---------------------------------------------------------------------
async function openEpisode(id) {
  pause();
  const ep = await api("GET", `/api/episodes/${id}`);
  state.episode = ep; state.mark = null; state.markEnd = null;
  $("viewer").hidden = false;
  $("viewer-id").textContent = `${ep.env_key} · ${ep.status} · ${id}`;
  $("step-slider").max = Math.max(0, ep.steps - 1);
  const summary = ep.steps ? await api("GET", `/api/episodes/${id}/steps?start=0&limit=1000`) : null;
  state.steps = summary ? summary.items : [];
  renderSide(); renderTable(); showStep(0);
  $("viewer").scrollIntoView({ block: "start" });
}

function showStep(n) {
  const ep = state.episode;
  if (!ep || !ep.steps) return;
  state.step = Math.max(0, Math.min(ep.steps - 1, n));
  $("step-slider").value = state.step;
  $("frame").src = `/api/episodes/${ep.id}/frames/${state.step}`;
  $("step-label").textContent = `${state.step} / ${ep.steps - 1}`;
  const s = state.steps[state.step];
  const mark = state.mark === null ? "" : ` · marked ${state.mark}..${state.markEnd ?? state.step}`;
  $("step-info").textContent = s
    ? `action ${JSON.stringify(s.action)} · reward ${s.reward}${s.is_last ? " · last" : ""}${mark}`
    : mark;
  renderTimeline();
}

function renderTimeline() {
  const ep = state.episode, n = Math.max(1, ep.steps);
  const ranges = ep.step_tags.map((t) => el("div", {
    class: "ep-tl-tag", title: `${t.name} ${t.start}..${t.end}`,
    style: { left: `${(100 * t.start) / n}%`, width: `${(100 * (t.end - t.start + 1)) / n}%` },
  }));
  if (state.mark !== null) {
    const a = Math.min(state.mark, state.markEnd ?? state.step), b = Math.max(state.mark, state.markEnd ?? state.step);
    ranges.push(el("div", { class: "ep-tl-mark", style: { left: `${(100 * a) / n}%`, width: `${(100 * (b - a + 1)) / n}%` } }));
  }
  ranges.push(el("div", { class: "ep-tl-cursor", style: { left: `${(100 * (state.step + 0.5)) / n}%` } }));
  $("timeline").replaceChildren(...ranges);
}

function play() {
  if (!state.episode || state.playing) return;
  state.playing = true; $("play-btn").textContent = "❚❚ Pause";
  const tick = () => {
    if (!state.playing) return;
    if (state.step >= state.episode.steps - 1) { pause(); return; }
    showStep(state.step + 1);
    state.timer = setTimeout(tick, 66);
  };
  tick();
}

function pause() {
  state.playing = false; clearTimeout(state.timer);
  $("play-btn").textContent = "▶ Play";
}

function markRange(which) {
  if (which === "start") { state.mark = state.step; state.markEnd = null; }
  else if (state.mark !== null) state.markEnd = state.step;
  else { state.mark = state.step; state.markEnd = state.step; }
  const a = Math.min(state.mark, state.markEnd ?? state.mark);
  const b = Math.max(state.mark, state.markEnd ?? state.mark);
  $("st-start").value = a; $("st-end").value = b;
  showStep(state.step);
}

async function tagSteps() {
  const name = $("st-name").value.trim();
  if (!name) { $("st-name").focus(); toast("Type a step tag name first.", "error"); return; }
  const start = Number($("st-start").value), end = Number($("st-end").value);
  await api("POST", `/api/episodes/${state.episode.id}/step-tags`, { json: { name, start, end } });
  toast(`Tagged steps ${start}..${end} “${name}”.`);
  state.mark = null; state.markEnd = null;
  await refreshEpisode();
}

/**
 * Show the episode again after an edit: ``detail`` is the episode when the write returned it
 * (else it is read again). Edits change nothing the plot shows, except that episode tags
 * (``tagsChanged``) decide which episodes a tag filter selects: then the plot is reloaded too.
 */
async function refreshEpisode({ detail, tagsChanged = false } = {}) {
  state.episode = detail ?? await api("GET", `/api/episodes/${state.episode.id}`);
  renderSide(); showStep(state.step);
  const p = filterParams();
  if (tagsChanged && (p.has("tag") || p.has("exclude_tag"))) await loadEpisodes();
  else await loadPage();
}

function renderSide() {
  const ep = state.episode;
  $("ep-tags").replaceChildren(...ep.tags.map((t) => el("li", {}, t, el("button", {
    class: "btn btn-ghost btn-small", type: "button", "aria-label": `Remove tag ${t}`,
    onclick: guard(async () => {
      await api("DELETE", `/api/episodes/${ep.id}/tags/${encodeURIComponent(t)}`);
      await refreshEpisode({ tagsChanged: true });
    }) }, "×"))));
  $("step-tags").replaceChildren(...ep.step_tags.map((t) => el("li", {},
    el("button", { class: "btn-link", type: "button", onclick: () => showStep(t.start) },
       `${t.name}: steps ${t.start}..${t.end}`),
    el("button", { class: "btn btn-ghost btn-small", type: "button", "aria-label": `Remove step tag ${t.name}`,
      onclick: guard(async () => {
        await api("DELETE", `/api/episodes/${ep.id}/step-tags/${t.id}`); await refreshEpisode();
      }) }, "×"))));
  if (!ep.step_tags.length) $("step-tags").append(el("li", { class: "muted" }, "No step tags yet."));
  $("notes").replaceChildren(...ep.notes.map((n) => el("li", {}, n.body,
    el("span", { class: "muted small" }, ` — ${new Date(n.created_at).toLocaleString()}`))));
  $("st-start").max = $("st-end").max = Math.max(0, ep.steps - 1);
}

function onKey(event) {
  if (!state.episode || $("viewer").hidden) return;
  if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey) return;
  const actions = {
    " ": () => (state.playing ? pause() : play()),
    ArrowLeft: () => { pause(); showStep(state.step - 1); },
    ArrowRight: () => { pause(); showStep(state.step + 1); },
    "[": () => markRange("start"),
    "]": () => markRange("end"),
    t: guard(tagSteps),
  };
  const action = actions[event.key];
  if (action) { event.preventDefault(); action(); }
}

// --- export ----------------------------------------------------------------------------
async function startExport(event) {
  event.preventDefault();
  const useChecked = document.querySelector("input[name=ex-sel]:checked").value === "checked";
  if (useChecked && !state.checked.size) { toast("Check some episodes first.", "error"); return; }
  // "tfds-oxe" is the tfds format with the Open X-Embodiment profile.
  const [format, profile] = $("ex-format").value.split("-");
  const options = {
    format, archive: $("ex-archive").value,
    strip_step_metadata: $("ex-strip").checked,
    end_tags: $("ex-end").value.split(",").map((s) => s.trim()).filter(Boolean),
  };
  if (profile) options.profile = profile;
  if ($("ex-name").value.trim()) options.name = $("ex-name").value.trim();
  const selection = useChecked ? { episode_ids: [...state.checked] } : filterSelection();
  const job = await api("POST", `/api/studies/${study}/exports`, { json: { selection, options } });
  showJob(job); pollJob(job.id);
}

function showJob(job) {
  state.job = job;
  $("job").hidden = false;
  const pct = Math.round(job.progress * 100);
  $("job-fill").style.width = `${pct}%`;
  $("job-bar").setAttribute("aria-valuenow", pct);
  $("job-state").textContent = `Export #${job.id}: ${job.state} — ${pct}%`;
  $("job-counts").textContent =
    `${job.episodes_done} / ${job.episodes_total} episodes · ${job.steps_done} / ${job.steps_total} steps`;
  $("job-message").textContent = job.message || "";
  const active = job.state === "queued" || job.state === "running";
  $("job-cancel").hidden = !active;
  $("ex-start").disabled = active;
  $("job-download").hidden = !job.download_url;
  if (job.download_url) $("job-download").href = job.download_url;
}

async function pollJob(id) {
  while (true) {
    const job = await api("GET", `/api/exports/${id}`);
    showJob(job);
    if (!["queued", "running"].includes(job.state)) {
      toast(`Export #${id} ${job.state}.`, job.state === "succeeded" ? "success" : "error");
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

// --- start -----------------------------------------------------------------------------
async function init() {
  if (!study) { $("page-error").hidden = false; $("page-error").textContent = "No study given: open this page from a study."; return; }
  $("status-boxes").replaceChildren(...STATUSES.map((s) => el("label", { class: "ep-check" },
    el("input", { type: "checkbox", value: s }), ` ${s}`)));
  let info;
  try { info = await api("GET", `/api/studies/${study}`); } catch (err) {
    $("page-error").hidden = false; $("page-error").textContent = err.message; return;
  }
  $("study-name").textContent = info.name; document.title = `Episodes · ${info.name}`;
  $("f-env").replaceChildren(...info.environments.map((e) => el("option", { value: e.env_key }, e.name)));
  $("filters").addEventListener("submit", guard(async (e) => { e.preventDefault(); state.offset = 0; await loadEpisodes(); }));
  $("f-reset").addEventListener("click", guard(async () => { $("filters").reset(); state.offset = 0; await loadEpisodes(); }));
  $("prev-page").addEventListener("click", guard(async () => { state.offset = Math.max(0, state.offset - PAGE); await loadPage(); }));
  $("next-page").addEventListener("click", guard(async () => { state.offset += PAGE; await loadPage(); }));
  $("check-all").addEventListener("change", (e) => {
    state.items.forEach((i) => (e.target.checked ? state.checked.add(i.id) : state.checked.delete(i.id)));
    $("ex-checked-count").textContent = `(${state.checked.size})`; renderTable();
  });
  $("step-slider").addEventListener("input", (e) => { pause(); showStep(Number(e.target.value)); });
  $("play-btn").addEventListener("click", () => (state.playing ? pause() : play()));
  $("viewer-close").addEventListener("click", () => { pause(); $("viewer").hidden = true; state.episode = null; renderTable(); });
  $("ep-tag-form").addEventListener("submit", guard(async (e) => {
    e.preventDefault();
    // The answer is the tagged episode, as GET /api/episodes/{id} gives it: no need to read it again.
    const detail = await api("POST", `/api/episodes/${state.episode.id}/tags`,
                             { json: { name: $("ep-tag-name").value } });
    $("ep-tag-name").value = ""; await refreshEpisode({ detail, tagsChanged: true });
  }));
  $("step-tag-form").addEventListener("submit", guard(async (e) => { e.preventDefault(); await tagSteps(); }));
  $("note-form").addEventListener("submit", guard(async (e) => {
    e.preventDefault();
    await api("POST", `/api/episodes/${state.episode.id}/notes`, { json: { body: $("note-body").value } });
    $("note-body").value = ""; await refreshEpisode();
  }));
  $("export-form").addEventListener("submit", guard(startExport));
  $("job-cancel").addEventListener("click", guard(async () => {
    showJob(await api("POST", `/api/exports/${state.job.id}/cancel`));
  }));
  document.addEventListener("keydown", onKey);
  await loadEpisodes();
}

init().catch((err) => toast(err.message, "error"));
