// Participants page: who took part in a study, how far they got, and a CSV for the crowd
// platform's bonus and approval uploads; a feedback study's judges with their gold accuracy
// and agreement, its figures and the preference dataset's downloads. /participants.html?study=<id>

import { createApi, el } from "../shared/api.js";
import { STUDIES, renderTopbar } from "../shared/topbar.js";
import { downloads, figures, judgingCells } from "./judging.js";

const $ = (id) => document.getElementById(id);
renderTopbar({ crumbs: [STUDIES, { id: "study-name" }, "Participants"] });
const study = Number(new URLSearchParams(location.search).get("study"));
const STATUS_ORDER = ["completed", "recording", "rejected", "canceled", "abandoned", "failed"];
const PLATFORMS = { prolific: "Prolific", mturk: "MTurk", direct: "Typed id", anonymous: "Anonymous" };

const api = createApi({
  onUnauthorized: () => { location.href = "/"; throw new Error("Log in first."); },
});

function pageError(text) { $("page-error").textContent = text || ""; $("page-error").hidden = !text; }

const when = (iso) => (iso ? el("time", { datetime: iso, title: iso }, new Date(iso).toLocaleString()) : "–");

function duration(seconds) {
  const s = Math.round(seconds || 0);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

function episodes(counts) {
  const keys = Object.keys(counts || {}).filter((k) => counts[k] > 0)
    .sort((a, b) => STATUS_ORDER.indexOf(a) - STATUS_ORDER.indexOf(b));
  if (!keys.length) return el("span", { class: "muted" }, "none");
  return el("span", { class: "pt-counts" },
    keys.map((k) => el("span", { class: `badge pt-${k}` }, `${counts[k]} ${k}`)));
}

let asksConsent = false; // the study has consent text (else nobody is asked)
let taskNames = new Map(); // task id -> the study's task (its label, instruction)
let showTasks = false; // a column only for studies with tasks
let feedback = false; // a feedback study: judges, not players

/** Completed episodes per task, compact: "Red 2 · Blue 1" (each task's instruction as title). */
function tasksCell(byTask) {
  const order = [...taskNames.keys()];  // the study's order, then others by id
  const rank = (t) => (order.includes(t) ? order.indexOf(t) : order.length);
  const ids = Object.keys(byTask || {}).filter((t) => byTask[t] > 0).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const cell = el("td", { class: "pt-tasks" }, ids.length ? ids.flatMap((t, i) => [i ? " · " : null,
    el("span", { "data-task": t, title: taskNames.get(t)?.instruction || "" }, `${taskNames.get(t)?.label || t} ${byTask[t]}`)])
    : el("span", { class: "muted" }, "–"));
  cell.hidden = !showTasks;
  return cell;
}

/* Screened out: declined the consent form, left at the device check (their device could
   not play the study) and never saw the consent, or (a feedback study) too few of their gold
   answers were right. */
const leftAtDevice = (p) => p.screenout_reason === "device";
const byGold = (p) => p.screenout_reason === "gold";
const WHY = { device: "left at the device check", gold: "failed the gold questions" };

function consent(p) {
  if (p.screened_out_at && leftAtDevice(p)) {
    return el("span", { class: "muted", title: "They left at the device check, before the consent form" }, "never shown");
  }
  if (p.screened_out_at && !byGold(p)) return el("span", { class: "badge pt-screened" }, "declined");
  if (p.consented_at) return el("span", { title: p.consented_at }, "given");
  return el("span", { class: "muted" }, asksConsent ? "not yet" : "not asked");
}

function completion(p) {
  // declined consent or left at the device check: screened out with the platform's code, never "not yet"
  if (!p.completed_at && !p.full_at && p.screened_out_at) {
    return el("span", {}, el("span", { class: "badge pt-screened" }, "screened out"), " ", when(p.screened_out_at),
      el("span", { class: "pt-sub pt-why" }, WHY[p.screenout_reason] || "declined the consent"));
  }
  // "full": the study filled up before they finished; they got the full code, not completion
  const at = p.completed_at || p.full_at;
  if (!at) return el("span", { class: "muted" }, "not yet");
  const label = p.completed_at ? "completed" : "full";
  return el("span", {}, el("span", { class: `badge pt-${label}` }, label), " ", when(at),
    el("span", { class: "pt-sub" }, p.completion_code_shown ? "code shown" : "code not shown"));
}

function row(p) {
  const ids = [p.platform_study_id && `study ${p.platform_study_id}`,
    p.platform_session_id && `session ${p.platform_session_id}`].filter(Boolean).join(" · ");
  return el("tr", { "data-id": p.id },
    el("td", { class: "pt-id" }, p.external_id, ids ? el("span", { class: "pt-sub" }, ids) : null,
      p.last_error ? el("span", { class: "pt-error", title: p.last_error }, `last error: ${p.last_error}`) : null),
    el("td", {}, PLATFORMS[p.platform] || p.platform || "–"),
    el("td", {}, consent(p)),
    el("td", {}, when(p.started_at)),
    el("td", {}, when(p.last_seen_at)),
    feedback ? judgingCells(p) : played(p),
    el("td", {}, completion(p)));
}

/** A player's cells: episodes (verified ones), per task, play time. */
function played(p) {
  return [el("td", {}, [episodes(p.episodes), p.episodes_verified
    ? el("span", { class: "muted small", title: "completed episodes whose replay verified" }, ` · ${p.episodes_verified} verified`)
    : null].filter(Boolean)),
  tasksCell(p.episodes_by_task),
  el("td", { class: "right" }, duration(p.play_time_s))];
}

/** A feedback study's figures and the preference dataset's downloads. */
async function loadResults() {
  const f = await api("GET", `/api/studies/${study}/feedback`);
  $("results-figures").replaceChildren(...figures(f));
  $("downloads").replaceChildren(downloads(study, f.answered));
}

async function load() {
  try {
    const [list] = await Promise.all([api("GET", `/api/studies/${study}/participants`),
      feedback ? loadResults() : null]);
    showTasks = taskNames.size > 0 || list.some((p) => Object.keys(p.episodes_by_task || {}).length);
    $("tasks-head").hidden = !showTasks;
    $("participants-body").replaceChildren(...list.map(row));
    $("participants-table").hidden = list.length === 0;
    $("empty").hidden = list.length > 0;
    $("total").textContent = `(${list.length})`;
    pageError("");
  } catch (err) {
    pageError(err.message);
  }
}

async function main() {
  if (!Number.isInteger(study) || study <= 0) { pageError("This page needs a study: open it from the studies page."); return; }
  $("csv-link").href = `/api/studies/${study}/participants.csv`;
  $("live-link").href = `/live.html?study=${study}`;
  $("refresh").addEventListener("click", load);
  try {
    const s = await api("GET", `/api/studies/${study}`);
    $("study-name").textContent = s.name;
    asksConsent = Boolean(s.spec && s.spec.crowd && s.spec.crowd.consent);
    taskNames = new Map();  // the first environment's task of each id, in the study's order
    for (const t of (s.spec?.environments || []).flatMap((e) => e.tasks || [])) if (!taskNames.has(t.id)) taskNames.set(t.id, t);
    document.title = `Participants · ${s.name} · RLDS Studio`;
    feedback = s.spec?.kind === "feedback";
    for (const node of document.querySelectorAll("[data-kind]")) node.hidden = node.dataset.kind !== (feedback ? "feedback" : "play");
    $("results").hidden = !feedback;
  } catch (err) {
    pageError(err.message);
    return;
  }
  await load();
}

main();
