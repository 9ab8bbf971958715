// Episodes page: filter a study's episodes, replay and tag them, export them.
// /episodes.html?study=<id>; writes carry X-CSRF-Token = the studio_csrf cookie.
// The URL holds the filters, the sort, the page, the episode and the step (a deep link).

import { createApi, el, errorMessage, toast as showToast } from "../shared/api.js";
import { STUDIES, renderTopbar } from "../shared/topbar.js";
import { createExport } from "./export.js";
import { createReplay } from "./replay.js";

const $ = (id) => document.getElementById(id);
renderTopbar({ crumbs: [STUDIES, { id: "study-name" }, "Episodes"] });
const STATUSES = ["completed", "rejected", "canceled", "abandoned", "failed", "recording"];
const PAGE = 50;
const DEFAULT_SORT = "-started_at";
const study = Number(new URLSearchParams(location.search).get("study"));
const state = { offset: 0, total: 0, items: [], checked: new Set(), sort: DEFAULT_SORT, job: null, bulkJob: null,
                // keyset paging: the cursor of this page (null: by offset), of the pages before
                // it, of the next one; whether total is exact (the server stops counting at 10,000)
                after: null, back: [], next: null, exact: true,
                // "all N matching": the filter of the list when it was chosen (else null)
                allMatching: null, applied: null };

const api = createApi({
  // This page's wording: the field problems of a validation error follow its message.
  describe: (status, body, isJson) => (isJson && errorText(body)) || `HTTP ${status}`,
  onUnauthorized: () => { location.href = "/"; throw new Error("Log in first."); },
});

function errorText(data) {
  const text = errorMessage(data);
  if (data && data.message && Array.isArray(data.detail)) {
    // a field problem the message already says is not said twice
    const more = [...new Set(data.detail.map((d) => String(d.msg)))].filter((m) => !text.includes(m));
    return more.length ? `${text} ${more.join("; ")}` : text;
  }
  return text;
}

// errors stay until dismissed (×); others go after 5 s
const toast = (text, kind = "success") =>
  showToast(text, kind, kind === "error" ? { duration: 0, role: "alert" } : { duration: 5000, role: "status" });

const guard = (fn) => async (...args) => {
  try { await fn(...args); } catch (err) { toast(err.message, "error"); }
};

const replay = createReplay({
  api, guard, toast,
  onChange: () => writeUrl(),
  onEdited: () => refreshEpisode(),
  onEpisode: (delta) => openNeighbour(delta),
  onOutcome: async (outcome) => {
    await review({ outcome });
    toast(`Outcome: ${outcome ?? "unset"}.`);
  },
});
const exporter = createExport({ api, study, state, toast, guard, pageFilter, filterSelection });

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
  add("min_return", "f-min-return"); add("max_return", "f-max-return");
  add("min_steps", "f-min-steps"); add("max_steps", "f-max-steps");
  add("p99_over_ms", "f-p99-over");
  const idle = $("f-idle-over").value.trim();  // a percentage on screen, a share in the API
  if (idle) p.append("idle_over", String(Number(idle) / 100));
  add("under_median", "f-under-median"); add("over_median", "f-over-median");
  if ($("f-tests").checked) p.append("include_tests", "true");
  document.querySelectorAll("#outcome-boxes input:checked").forEach((b) => p.append("outcome", b.value));
  if ($("f-excluded").value) p.append("excluded", $("f-excluded").value);
  return p;
}

// URL/API parameter -> filter field (the idle share is shown as a percentage)
const NUMBER_FIELDS = [["min_return", "f-min-return"], ["max_return", "f-max-return"],
                       ["min_steps", "f-min-steps"], ["max_steps", "f-max-steps"],
                       ["p99_over_ms", "f-p99-over"], ["under_median", "f-under-median"],
                       ["over_median", "f-over-median"]];

/** The URL of this view: study, filters, sort, page offset, episode and step. */
function writeUrl() {
  const p = new URLSearchParams({ study });
  for (const [k, v] of filterParams()) p.append(k, v);
  if (state.sort !== DEFAULT_SORT) p.set("sort", state.sort);
  if (state.offset) p.set("offset", state.offset);
  if (replay.episode) { p.set("episode", replay.episode.id); p.set("step", replay.step); }
  const url = `${location.pathname}?${p}`;
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

/** Fill the filter fields, sort and page from the URL (a deep link or a reload). */
function readUrl() {
  const p = new URLSearchParams(location.search);
  const statuses = p.getAll("status");
  document.querySelectorAll("#status-boxes input").forEach((b) => { b.checked = statuses.includes(b.value); });
  const envs = p.getAll("env");
  [...$("f-env").options].forEach((o) => { o.selected = envs.includes(o.value); });
  for (const [key, id] of [["participant", "f-participant"], ["tag", "f-tag"], ["exclude_tag", "f-exclude"],
                           ...NUMBER_FIELDS]) {
    $(id).value = p.get(key) ?? "";
  }
  $("f-idle-over").value = p.has("idle_over") ? String(Math.round(Number(p.get("idle_over")) * 1000) / 10) : "";
  for (const [key, id] of [["since", "f-since"], ["until", "f-until"]]) {
    const v = p.get(key);
    // datetime-local wants local time without a zone
    $(id).value = v ? new Date(new Date(v).getTime() - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16) : "";
  }
  $("f-tests").checked = p.get("include_tests") === "true";
  const outcomes = p.getAll("outcome");
  document.querySelectorAll("#outcome-boxes input").forEach((b) => { b.checked = outcomes.includes(b.value); });
  $("f-excluded").value = ["true", "false"].includes(p.get("excluded")) ? p.get("excluded") : "";
  state.sort = p.get("sort") || DEFAULT_SORT;
  state.offset = Math.max(0, Number(p.get("offset")) || 0);
  state.after = null; state.back = [];
  return { episode: p.get("episode"), step: Math.max(0, Number(p.get("step")) || 0) };
}

/** The filter fields as the API's filter body (no status: every status, as the list shows). */
function pageFilter() {
  const p = filterParams();
  return {
    statuses: p.getAll("status"),
    environments: p.getAll("env"), participants: p.getAll("participant"),
    tags: p.getAll("tag"), exclude_tags: p.getAll("exclude_tag"),
    since: p.get("since"), until: p.get("until"),
    ...Object.fromEntries(NUMBER_FIELDS.map(([key]) => [key, p.has(key) ? Number(p.get(key)) : null])),
    idle_over: p.has("idle_over") ? Number(p.get("idle_over")) : null,
    include_tests: p.has("include_tests"),
    outcomes: p.getAll("outcome"),
    excluded: p.has("excluded") ? p.get("excluded") === "true" : null,
  };
}

/** The export's selection of the filter: no status exports completed episodes only;
 *  excluded episodes only when the export form asks for them. */
function filterSelection() {
  const { excluded, ...f } = pageFilter();
  return { ...f, statuses: f.statuses.length ? f.statuses : ["completed"],
           include_excluded: $("ex-include-excluded").checked || excluded === true };
}

/** An outcome badge: the effective outcome, italic when it is the player's answer. */
function outcomeBadge(e) {
  if (!e.outcome) return el("span", { class: "muted" }, "–");
  const who = e.reviewer_outcome ? "reviewer" : "player";
  return el("span", { class: `badge ep-outcome-${e.outcome}${who === "player" ? " ep-outcome-player" : ""}`,
                      title: `${e.outcome} (${who})` }, e.outcome);
}

/** After the filters change: the page of rows, then the returns plot. */
async function loadEpisodes() {
  state.allMatching = null;  // the filter changed: "all matching" meant the old one
  state.applied = pageFilter();
  state.after = null; state.back = [];
  await loadPage();
  await loadPlot();
}

/** The page of rows at state.offset (paging and most edits reload only this). */
async function loadPage() {
  const p = filterParams();
  p.set("offset", state.offset); p.set("limit", PAGE); p.set("sort", state.sort);
  // paging on with a cursor keeps the count of the first page (counting is the costly part)
  if (state.after) { p.set("after", state.after); p.set("count", "false"); }
  writeUrl();
  const page = await api("GET", `/api/studies/${study}/episodes?${p}`);
  state.items = page.items;
  state.next = page.next_cursor;
  if (page.total !== null) {  // a counted page: the count and the tag names are fresh
    state.total = page.total; state.exact = page.total_exact;
    $("tag-names").replaceChildren(...page.tag_names.map((n) => el("option", { value: n })));
  }
  renderTable();
  guard(exporter.preview)();
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
    box.checked = state.allMatching !== null || state.checked.has(e.id);
    box.disabled = state.allMatching !== null;
    box.addEventListener("change", () => {
      box.checked ? state.checked.add(e.id) : state.checked.delete(e.id);
      $("ex-checked-count").textContent = `(${state.checked.size})`;
      renderBulk();
      if (exporter.useChecked()) guard(exporter.preview)();
    });
    const open = el("button", { class: "btn btn-small", type: "button",
                                onclick: guard(() => openEpisode(e.id)) }, "Replay");
    const row = el("tr", { "data-id": e.id },
      el("td", {}, box), el("td", {}, new Date(e.started_at).toLocaleString()),
      el("td", {}, e.env_key), el("td", {}, el("span", { class: `badge ep-${e.status}` }, e.status),
        e.excluded ? el("span", { class: "badge ep-excluded", title: "Kept out of exports" }, "excluded") : null),
      el("td", { class: "code" }, e.participant, e.is_test
        ? el("span", { class: "badge ep-test", title: "A designer's test play" }, "test") : null),
      el("td", { class: "right" }, String(e.steps)),
      el("td", { class: "right" }, e.total_reward.toFixed(2)),
      el("td", { class: "right" }, e.latency_p50_ms === null ? "–" : `${Math.round(e.latency_p50_ms)} ms`),
      el("td", {}, badges(e)),
      el("td", {}, outcomeBadge(e)),
      el("td", {}, e.tags.join(", ")), el("td", {}, open));
    if (replay.episode && replay.episode.id === e.id) row.classList.add("selected");
    if (e.excluded) row.classList.add("ep-row-excluded");
    return row;
  }));
  const empty = state.total === 0;
  $("empty").hidden = !empty; $("episodes-table").hidden = empty;
  const filtered = filterParams().toString() !== "";
  $("empty-title").textContent = filtered ? "No episode matches these filters" : "No episodes yet";
  $("empty-text").textContent = filtered
    ? "Loosen or reset the filters to see more episodes."
    : "Episodes appear here as soon as people play the study: share its permalink from the studies page.";
  renderSortHeads();
  renderBulk();
  $("total").textContent = `(${totalText()})`;
  $("ex-filter-count").textContent = `(${totalText()} listed)`;
  const last = state.offset + state.items.length;
  $("page-info").textContent = state.total ? `${state.offset + 1}–${last} of ${totalText()}` : "";
  $("prev-page").disabled = state.offset === 0;
  $("next-page").disabled = !state.next && last >= state.total;
  if (replay.episode) renderPosition();
}

/** The count of matching episodes: "10000+" when the server stopped counting. */
const totalText = () => `${state.total}${state.exact ? "" : "+"}`;

/** Quality badges ("idle 80%", "p99 140 ms", "short"); "not computed" for old episodes. */
function badges(e) {
  if (!e.quality_computed && e.status !== "recording") {
    return el("span", { class: "badge ep-q ep-q-none", title: "Run rlds-studio quality to compute" }, "not computed");
  }
  const titles = { idle: "Share of actions with no input", slow: "Input latency, 99th percentile",
                   dropped: "Frames the player never got", short: "Under half the environment's median length",
                   long: "Over twice the environment's median length" };
  return el("span", { class: "ep-badges" }, ...e.badges.map((b) =>
    el("span", { class: `badge ep-q ep-q-${b.flag}`, title: titles[b.flag] }, b.label)));
}

/** Next page: by the server's cursor when it gave one (keyset: fast however deep). */
async function nextPage() {
  state.back.push(state.after);
  state.after = state.next;
  state.offset += PAGE;
  await loadPage();
}

async function prevPage() {
  state.after = state.back.length ? state.back.pop() : null;
  state.offset = Math.max(0, state.offset - PAGE);
  await loadPage();
}

/** Column heads: a button each that sorts by it (again: the other way round). */
function renderSortHeads() {
  document.querySelectorAll("#episodes-table th[data-sort]").forEach((th) => {
    const key = th.dataset.sort, current = state.sort.replace(/^-/, "");
    const desc = state.sort.startsWith("-");
    th.setAttribute("aria-sort", key === current ? (desc ? "descending" : "ascending") : "none");
    th.querySelector(".sort-arrow").textContent = key === current ? (desc ? " ▼" : " ▲") : "";
  });
}

async function sortBy(key) {
  const current = state.sort.replace(/^-/, "");
  // a new column starts with the largest / newest first, like the default
  state.sort = key === current ? (state.sort.startsWith("-") ? key : `-${key}`) : `-${key}`;
  state.offset = 0; state.after = null; state.back = [];
  await loadPage();
}

/** Return per episode, oldest first: one series (line and dots) per environment, with axes. */
function renderPlot(items) {
  const box = $("returns-plot");
  $("returns-card").hidden = items.length === 0;
  if (!items.length) { box.replaceChildren(); return; }
  const W = 720, H = 220, L = 56, R = 16, T = 12, B = 40;
  const ys = items.map((e) => e.total_reward);
  let lo = Math.min(0, ...ys), hi = Math.max(...ys);
  if (hi === lo) hi = lo + 1;
  const n = items.length;
  const x = (i) => L + (n === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (n - 1));
  const y = (v) => H - B - ((v - lo) * (H - B - T)) / (hi - lo);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (tag, attrs, text, parent = svg) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    parent.append(node); return node;
  };
  // axes: return (left) with its bounds and zero, episode number (bottom)
  add("line", { x1: L, x2: L, y1: T, y2: H - B, class: "ep-axis" });
  add("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "ep-axis" });
  if (lo < 0) add("line", { x1: L, x2: W - R, y1: y(0), y2: y(0), class: "ep-axis ep-zero" });
  const fmt = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1));
  for (const v of new Set([lo, 0, hi])) add("text", { x: L - 6, y: y(v) + 4, class: "ep-axis-label", "text-anchor": "end" }, fmt(v));
  for (const i of new Set([0, Math.floor((n - 1) / 2), n - 1])) {
    add("text", { x: x(i), y: H - B + 16, class: "ep-axis-label", "text-anchor": "middle" }, String(i + 1));
  }
  add("text", { x: (L + W - R) / 2, y: H - 6, class: "ep-axis-title", "text-anchor": "middle" }, "episode (oldest first)");
  add("text", { x: 12, y: (T + H - B) / 2, class: "ep-axis-title", "text-anchor": "middle",
                transform: `rotate(-90 12 ${(T + H - B) / 2})` }, "return");
  const envs = [...new Set(items.map((e) => e.env_key))];
  envs.forEach((env, k) => {
    const series = add("g", { class: `ep-series ep-series-${k % 6}`, "data-env": env });
    const points = items.map((e, i) => [e, i]).filter(([e]) => e.env_key === env);
    if (points.length > 1) {
      add("polyline", { points: points.map(([e, i]) => `${x(i)},${y(e.total_reward)}`).join(" "), class: "ep-line" }, undefined, series);
    }
    for (const [e, i] of points) {
      const dot = add("circle", { cx: x(i), cy: y(e.total_reward), r: 5, class: `ep-dot ep-dot-${e.status}`,
                                  tabindex: 0, "data-id": e.id }, undefined, series);
      add("title", {}, `${e.env_key} · ${e.status} · return ${e.total_reward.toFixed(2)} · ${e.steps} steps`, dot);
      dot.addEventListener("click", guard(() => openEpisode(e.id)));
    }
  });
  const legend = el("ul", { class: "ep-legend", "aria-label": "Environments in the plot" },
    envs.map((env, k) => el("li", { class: `ep-series-${k % 6}` }, el("span", { class: "ep-swatch", "aria-hidden": "true" }), env)));
  box.replaceChildren(svg, envs.length > 1 ? legend : "");
}

// --- bulk actions ----------------------------------------------------------------------
const plural = (n) => `${n} episode${n === 1 ? "" : "s"}`;

/** The bulk bar: what is selected, and the actions when something is. */
function renderBulk() {
  const all = state.allMatching !== null, n = all ? state.total : state.checked.size;
  $("bulk-bar").hidden = state.total === 0 && !n;
  $("bulk-count").textContent = all ? `All ${state.exact ? plural(n) : `${totalText()} episodes`} matching selected`
    : n ? `${plural(n)} selected` : "Check rows, or";
  $("bulk-all").textContent = `Select all ${totalText()} matching`;
  $("bulk-all").hidden = all || state.total === 0;
  const busy = state.bulkJob !== null;
  for (const id of ["bulk-add", "bulk-remove", "bulk-delete", "bulk-clear", "bulk-set-outcome",
                    "bulk-exclude", "bulk-include"]) $(id).disabled = !n || busy;
  $("check-all").checked = all || (state.items.length > 0 && state.items.every((i) => state.checked.has(i.id)));
  $("check-all").disabled = all;
}

function clearSelection() {
  state.allMatching = null; state.checked.clear();
  $("ex-checked-count").textContent = "(0)";
}

/** Ask before deleting; resolves true when confirmed (Esc or Cancel: false). */
function confirmDelete(n) {
  const dialog = $("bulk-dialog");
  $("bulk-dialog-text").textContent = `Delete ${plural(n)} and their recordings? This cannot be undone.`;
  dialog.returnValue = "";
  dialog.showModal();
  $("bulk-dialog-cancel").focus();  // a destructive default is not one Enter away
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

const DONE_WORDS = {
  add_tags: (r, b) => `Tagged ${plural(r.changed)} “${b.tags[0]}” (${r.matched} selected).`,
  remove_tags: (r, b) => `Removed “${b.tags[0]}” from ${plural(r.changed)}.`,
  set_outcome: (r, b) => `Outcome ${b.outcome ?? "unset"} on ${plural(r.changed)} (${r.matched} selected).`,
  exclude: (r) => `Excluded ${plural(r.changed)} from exports.`,
  include: (r) => `Included ${plural(r.changed)} in exports again.`,
  delete: (r) => `Deleted ${plural(r.changed)}${r.skipped_recording ? `; ${r.skipped_recording} still recording, kept` : ""}.`,
};

async function bulk(action) {
  const all = state.allMatching !== null;
  let n = all ? state.total : state.checked.size;
  if (!n || state.bulkJob) return;
  if (all && !state.exact && action === "delete") n = await exactCount();
  const body = { action, selection: all ? { filter: state.allMatching } : { episode_ids: [...state.checked] } };
  if (action === "add_tags" || action === "remove_tags") {
    const tag = $("bulk-tag").value.trim();
    if (!tag) { toast("Type a tag first.", "error"); $("bulk-tag").focus(); return; }
    body.tags = [tag];
  } else if (action === "set_outcome") {
    body.outcome = $("bulk-outcome").value || null;
  } else if (action === "delete" && !(await confirmDelete(n))) return;
  const res = await api("POST", `/api/studies/${study}/episodes/bulk`, { json: body });
  // a filter or many episodes: a background job (202) whose progress shows under the bar
  const result = res.state ? await followBulkJob(res) : res;
  // the selection stays for the next action until cleared; deleted episodes leave it
  const kept = state.allMatching;
  if (!result) { await loadEpisodes(); state.allMatching = kept; renderTable(); return; }
  toast(DONE_WORDS[action](result, body));
  if (action === "delete") {
    if (replay.episode && (all || state.checked.has(replay.episode.id))) { replay.close(); writeUrl(); }
    clearSelection();
    state.offset = 0;
  } else if (replay.episode) await refreshEpisode();
  await loadEpisodes();
  if (action !== "delete") { state.allMatching = kept; renderTable(); }
}

/** Every episode the list's filters match (the list itself counts up to 10,000). */
async function exactCount() {
  const p = filterParams();
  p.set("limit", 1); p.set("exact_count", "true");
  return (await api("GET", `/api/studies/${study}/episodes?${p}`)).total;
}

function showBulkJob(job) {
  const pct = Math.round(job.progress * 100);
  $("bulk-job").hidden = false;
  $("bulk-job-fill").style.width = `${pct}%`;
  $("bulk-job-bar").setAttribute("aria-valuenow", pct);
  $("bulk-job-state").textContent = `Bulk ${job.action.replace("_", " ")} #${job.id}: ${job.state} — ${pct}%`;
  $("bulk-job-counts").textContent = `${job.done} / ${job.total} episodes`;
}

/** Follow a bulk job to its end: its counts when it succeeded, else null (a toast says why). */
async function followBulkJob(job) {
  state.bulkJob = job; renderBulk();
  try {
    while (true) {
      showBulkJob(job);
      if (!["queued", "running"].includes(job.state)) break;
      await new Promise((r) => setTimeout(r, 300));
      job = await api("GET", `/api/bulk-jobs/${job.id}`);
    }
  } finally { state.bulkJob = null; renderBulk(); }
  if (job.state !== "succeeded") {
    toast(`Bulk action #${job.id} ${job.state}${job.message ? `: ${job.message}` : "."}`, "error");
    return null;
  }
  return { matched: job.total, changed: job.changed, skipped_recording: job.skipped_recording };
}

// --- replay viewer (replay.js) --------------------------------------------
async function openEpisode(id, step = 0, { scroll = true } = {}) {
  const ep = await api("GET", `/api/episodes/${id}`);
  renderSide(ep); renderTable();
  await replay.open(ep, step);
  renderTable();
  if (scroll) $("viewer").scrollIntoView({ block: "start" });
}

/** Where the open episode is in the list (its filters, sort and page). */
function renderPosition() {
  const i = replay.episode ? state.items.findIndex((e) => e.id === replay.episode.id) : -1;
  $("episode-position").textContent = i < 0 ? "not in the list" : `${state.offset + i + 1} of ${totalText()}`;
  $("prev-episode").disabled = i < 0 ? false : state.offset + i === 0;
  $("next-episode").disabled = i >= 0 && i === state.items.length - 1 && !state.next
    && state.offset + state.items.length >= state.total;
}

/** Open the episode ``delta`` rows away in the list, across pages; the list keeps its filters and sort. */
async function openNeighbour(delta) {
  if (!replay.episode) return;
  let i = state.items.findIndex((e) => e.id === replay.episode.id);
  if (i < 0) i = delta > 0 ? -1 : state.items.length;  // not listed: from the start or end of the page
  let target = state.items[i + delta];
  if (!target && delta > 0 && state.offset + state.items.length < state.total) {
    await nextPage(); target = state.items[0];
  } else if (!target && delta < 0 && state.offset > 0) {
    await prevPage(); target = state.items[state.items.length - 1];
  }
  if (!target) { toast(delta > 0 ? "This is the last episode of the list." : "This is the first episode of the list."); return; }
  await openEpisode(target.id, 0, { scroll: false });
}

/**
 * Show the episode again after an edit: ``detail`` is the episode when the write returned it
 * (else it is read again). Edits change nothing the plot shows, except that episode tags
 * (``tagsChanged``) decide which episodes a tag filter selects: then the plot is reloaded too.
 */
async function refreshEpisode({ detail, tagsChanged = false } = {}) {
  const ep = detail ?? await api("GET", `/api/episodes/${replay.episode.id}`);
  renderSide(ep); replay.update(ep);
  const p = filterParams();
  if (tagsChanged && (p.has("tag") || p.has("exclude_tag"))) await loadEpisodes();
  else await loadPage();
}

function renderSide(ep) {
  $("ep-tags").replaceChildren(...ep.tags.map((t) => el("li", {}, t, el("button", {
    class: "btn btn-ghost btn-small", type: "button", "aria-label": `Remove tag ${t}`,
    onclick: guard(async () => {
      await api("DELETE", `/api/episodes/${ep.id}/tags/${encodeURIComponent(t)}`);
      await refreshEpisode({ tagsChanged: true });
    }) }, "×"))));
  $("step-tags").replaceChildren(...ep.step_tags.map((t) => el("li", {},
    el("button", { class: "btn-link", type: "button", onclick: () => replay.show(t.start) },
       t.start === t.end ? `${t.name}: step ${t.start}` : `${t.name}: steps ${t.start}..${t.end}`),
    el("button", { class: "btn btn-ghost btn-small", type: "button", "aria-label": `Remove step tag ${t.name}`,
      onclick: guard(async () => {
        await api("DELETE", `/api/episodes/${ep.id}/step-tags/${t.id}`); await refreshEpisode();
      }) }, "×"))));
  if (!ep.step_tags.length) $("step-tags").append(el("li", { class: "muted" }, "No step tags yet."));
  $("notes").replaceChildren(...ep.notes.map((n) => el("li", {}, n.body,
    el("span", { class: "muted small" }, ` — ${new Date(n.created_at).toLocaleString()}`))));
  $("st-start").max = $("st-end").max = Math.max(0, ep.steps - 1);
  $("ep-outcome").value = ep.reviewer_outcome || "";
  $("ep-player-outcome").textContent = ep.player_outcome ? `Player said: ${ep.player_outcome}` : "Player: not asked or skipped";
  $("ep-excluded").checked = ep.excluded;
}

/** The reviewer's outcome or the excluded mark of the open episode. */
async function review(change) {
  const detail = await api("PATCH", `/api/episodes/${replay.episode.id}`, { json: change });
  await refreshEpisode({ detail });
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
  $("live-link").href = `/live.html?study=${study}`;
  $("f-env").replaceChildren(...info.environments.map((e) => el("option", { value: e.env_key }, e.name)));
  $("filters").addEventListener("submit", guard(async (e) => { e.preventDefault(); state.offset = 0; await loadEpisodes(); }));
  $("f-tests").addEventListener("change", guard(async () => { state.offset = 0; await loadEpisodes(); }));
  $("f-reset").addEventListener("click", guard(async () => { $("filters").reset(); state.offset = 0; await loadEpisodes(); }));
  $("prev-page").addEventListener("click", guard(prevPage));
  $("next-page").addEventListener("click", guard(nextPage));
  $("check-all").addEventListener("change", (e) => {
    state.items.forEach((i) => (e.target.checked ? state.checked.add(i.id) : state.checked.delete(i.id)));
    $("ex-checked-count").textContent = `(${state.checked.size})`; renderTable();
  });
  $("bulk-all").addEventListener("click", () => { state.allMatching = state.applied; renderTable(); });
  $("bulk-clear").addEventListener("click", () => { clearSelection(); renderTable(); });
  $("bulk-add").addEventListener("click", guard(() => bulk("add_tags")));
  $("bulk-remove").addEventListener("click", guard(() => bulk("remove_tags")));
  $("bulk-delete").addEventListener("click", guard(() => bulk("delete")));
  $("bulk-set-outcome").addEventListener("click", guard(() => bulk("set_outcome")));
  $("bulk-exclude").addEventListener("click", guard(() => bulk("exclude")));
  $("bulk-include").addEventListener("click", guard(() => bulk("include")));
  $("ep-outcome").addEventListener("change", guard(() => review({ outcome: $("ep-outcome").value || null })));
  $("ep-excluded").addEventListener("change", guard(() => review({ excluded: $("ep-excluded").checked })));
  document.querySelectorAll("#episodes-table th[data-sort]").forEach((th) => {
    const label = th.textContent.trim();
    th.replaceChildren(el("button", { type: "button", class: "th-sort", onclick: guard(() => sortBy(th.dataset.sort)) },
      label, el("span", { class: "sort-arrow", "aria-hidden": "true" })));
  });
  $("viewer-close").addEventListener("click", () => { replay.close(); writeUrl(); renderTable(); });
  $("ep-tag-form").addEventListener("submit", guard(async (e) => {
    e.preventDefault();
    // The answer is the tagged episode, as GET /api/episodes/{id} gives it: no need to read it again.
    const detail = await api("POST", `/api/episodes/${replay.episode.id}/tags`,
                             { json: { name: $("ep-tag-name").value } });
    $("ep-tag-name").value = ""; await refreshEpisode({ detail, tagsChanged: true });
  }));
  $("step-tag-form").addEventListener("submit", guard(async (e) => {
    e.preventDefault(); await replay.tag(Number($("st-start").value), Number($("st-end").value));
  }));
  $("note-form").addEventListener("submit", guard(async (e) => {
    e.preventDefault();
    await api("POST", `/api/episodes/${replay.episode.id}/notes`, { json: { body: $("note-body").value } });
    $("note-body").value = ""; await refreshEpisode();
  }));
  exporter.bind();
  const link = readUrl();
  await loadEpisodes();
  if (link.episode) await openEpisode(link.episode, link.step);
}

init().catch((err) => toast(err.message, "error"));
