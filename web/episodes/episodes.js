// Episodes page: filter a study's episodes, replay and tag them, export them.
// /episodes.html?study=<id>; writes carry X-CSRF-Token = the studio_csrf cookie.
// The URL holds the filters, the sort, the page, the episode and the step (a deep link).

import { createApi, el, errorMessage, toast as showToast } from "../shared/api.js";
import { STUDIES, renderTopbar } from "../shared/topbar.js";
import { createBulk } from "./bulk.js";
import { createExport } from "./export.js";
import { endingNote } from "./ending.js";
import { judgementCell } from "./judgements.js";
import { fillFilters, filterParams, filterSelection, pageFilter } from "./filters.js";
import { renderPlot } from "./plot.js";
import { createReplay } from "./replay.js";
import { fillTaskOptions, taskCell, taskNote } from "./tasks.js";

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
const list = { totalText: () => totalText(), load: () => loadEpisodes(), render: () => renderTable(),
               refreshEpisode: () => refreshEpisode(), writeUrl: () => writeUrl() };
const { renderBulk, clearSelection, bulk } = createBulk({ api, study, state, toast, replay, list });

// --- filters and list ------------------------------------------------------------------
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
  fillFilters(p);
  state.sort = p.get("sort") || DEFAULT_SORT;
  state.offset = Math.max(0, Number(p.get("offset")) || 0);
  state.after = null; state.back = [];
  return { episode: p.get("episode"), step: Math.max(0, Number(p.get("step")) || 0) };
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
  renderPlot((await api("GET", `/api/studies/${study}/episodes?${p}`)).items, guard((id) => openEpisode(id)));
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
      el("td", {}, e.env_key), taskCell(e), el("td", {}, el("span", { class: `badge ep-${e.status}` }, e.status),
        e.excluded ? el("span", { class: "badge ep-excluded", title: "Kept out of exports" }, "excluded") : null,
        endingNote(e)),
      el("td", { class: "code" }, e.participant, e.is_test
        ? el("span", { class: "badge ep-test", title: "A designer's test play" }, "test") : null),
      el("td", { class: "right" }, String(e.actions)),
      el("td", { class: "right" }, e.total_reward.toFixed(2)),
      el("td", { class: "right" }, e.latency_p50_ms === null ? "–" : `${Math.round(e.latency_p50_ms)} ms`),
      el("td", {}, badges(e)),
      el("td", {}, replayBadge(e)),
      el("td", {}, outcomeBadge(e)), judgementCell(e),
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
    : EMPTY_TEXT[state.studyState] || EMPTY_TEXT.active;
  renderSortHeads();
  renderBulk();
  $("total").textContent = `(${totalText()})`;
  $("ex-filter-count").textContent = `(${totalText()} listed${taskNote($("f-task"))})`;
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
                   long: "Over twice the environment's median length",
                   intervened: "Shared autonomy: times the player took over from the policy (share of steps they drove)",
                   policy_failed: e.policy_error ? `The policy stopped driving: ${e.policy_error}` : "The policy stopped driving",
                   diverged: `Its replay did not reproduce the log${e.replay_message ? `: ${e.replay_message}` : ""}` };
  return el("span", { class: "ep-badges" }, ...e.badges.map((b) =>
    el("span", { class: `badge ep-q ep-q-${b.flag}`, title: titles[b.flag] }, b.label)));
}

/** The replay verdict (verified ✓, diverged at step N, not replayable, pending…), what the
 *  check found in its title. */
function replayBadge(e) {
  const [text, title] = {
    verified: ["verified ✓", "Re-simulated from its log: every step gave the recorded values"],
    diverged: [`diverged at step ${e.replay_step}`, "The replay differed from the log"],
    not_replayable: ["not replayable", "The episode could not be replayed"],
  }[e.replay_verdict] ?? ["pending…", "Not checked yet"];
  return el("span", { class: `badge ep-r ep-r-${e.replay_verdict}`,
                      title: e.replay_message ? `${title}: ${e.replay_message}` : title }, text);
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

/** The empty list's way forward, by the study's state (a draft has no permalink yet). */
const EMPTY_TEXT = {
  draft: "Episodes appear here once people play the study. Test-play it from the studies page (tick Show test plays to see yours), then activate it to get its permalink.",
  active: "Episodes appear here as soon as people play the study: share its permalink from the studies page.",
  paused: "The study is paused: resume it from the studies page, and episodes appear here as people play.",
  closed: "The study is closed and nobody played it: it takes no more episodes.",
};

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
  state.studyState = info.state;
  $("live-link").href = `/live.html?study=${study}`;
  $("f-env").replaceChildren(...info.environments.map((e) => el("option", { value: e.env_key }, e.name)));
  $("filters").addEventListener("submit", guard(async (e) => { e.preventDefault(); state.offset = 0; await loadEpisodes(); }));
  fillTaskOptions($("f-task"), info.spec);
  for (const id of ["f-tests", "f-task"]) $(id).addEventListener("change", guard(async () => { state.offset = 0; await loadEpisodes(); }));
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
