// Live study dashboard: /live.html?study=<id>. The server pushes the study's figures over
// /ws/studies/<id>/live every tick (read from the database, the same on every replica);
// the page reconnects by itself after a restart. A feedback study shows its judging instead
// of sessions and episodes (judging.js).

import { createApi, el } from "../shared/api.js";
import { STUDIES, renderTopbar } from "../shared/topbar.js";
import { renderJudging } from "./judging.js";

const $ = (id) => document.getElementById(id);
renderTopbar({ crumbs: [STUDIES, { id: "study-name" }, { id: "episodes-link", href: "#", text: "Episodes" }, "Live"] });
const study = Number(new URLSearchParams(location.search).get("study"));
const api = createApi({
  onUnauthorized: () => { location.href = "/"; throw new Error("Log in first."); },
});
const STATUSES = ["recording", "completed", "rejected", "canceled", "abandoned", "failed"];

function pageError(text) { $("page-error").textContent = text || ""; $("page-error").hidden = !text; }

function connected(on, text) {
  $("conn").textContent = text;
  $("conn").className = `badge ${on ? "lv-on" : "lv-off"}`;
}

const num = (v, digits = 0, unit = "") => (v === null || v === undefined ? "–" : `${Number(v).toFixed(digits)}${unit}`);

function sessionRow(s) {
  return el("tr", { "data-session": s.session_id },
    el("td", { class: "lv-mono" }, s.participant),
    el("td", {}, s.env_key || "–"),
    el("td", {}, el("span", { class: `badge lv-phase-${s.phase}` }, s.phase)),
    el("td", { class: "lv-mono" }, s.episode_id
      ? el("a", { href: `/episodes.html?study=${study}&episode=${s.episode_id}` }, s.episode_id.slice(0, 8)) : "–"),
    el("td", { class: "right", "data-col": "step" }, num(s.step)),
    el("td", { class: "right" }, num(s.fps, 1)),
    el("td", { class: "right" }, num(s.latency_p50_ms, 0, " ms")),
    el("td", { class: "right" }, num(s.frames_dropped)));
}

function quota(q) {
  const label = q.total ? `${q.completed} / ${q.total}` : `${q.completed} (no total)`;
  return el("li", { "data-env": q.env_key },
    el("div", { class: "lv-label" }, el("span", {}, q.name),
      el("span", { class: "muted" }, label, q.recording ? ` · ${q.recording} recording` : "")),
    q.total ? el("progress", { max: q.total, value: Math.min(q.completed, q.total), "aria-label": `${q.name} quota` }) : null,
    q.tasks && q.tasks.length ? taskBars(q) : null);
}

/** An environment's tasks, one bar each: completed (solid) and recording (light) episodes,
 *  scaled to its busiest task; a task's name opens its episodes on the episodes page. */
function taskBars(q) {
  const most = Math.max(1, ...q.tasks.map((t) => t.completed + t.recording));
  const rows = q.tasks.map((t) => {
    const value = t.id ?? "-";  // the episodes list's "no task"
    const done = el("span", { class: "lv-bar-done" }), rec = el("span", { class: "lv-bar-rec" });
    done.style.width = `${(100 * t.completed) / most}%`;
    rec.style.width = `${(100 * t.recording) / most}%`;
    const words = `${t.completed} completed${t.recording ? `, ${t.recording} recording` : ""}`;
    const params = new URLSearchParams({ study, env: q.env_key, task: value });
    return el("tr", { "data-task": value },
      el("th", { scope: "row", title: t.instruction || "" },
        el("a", { href: `/episodes.html?${params}` }, t.name)),
      el("td", { class: "lv-bar-cell" }, el("span", { class: "lv-bar", role: "img", "aria-label": `${t.name}: ${words}` }, done, rec)),
      el("td", { class: "right", "data-col": "counts" }, String(t.completed), t.recording
        ? el("span", { class: "muted", title: `${t.recording} recording now` }, ` +${t.recording}`) : null));
  });
  return el("table", { class: "lv-tasks", "aria-label": `${q.name} episodes per task` },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Task"), el("th", { scope: "col" }, "Episodes"),
      el("th", { scope: "col", class: "right", title: "Completed episodes (+ recording now)" }, "Completed"))),
    el("tbody", {}, ...rows));
}

function counts(pairs) {
  return pairs.flatMap(([name, n]) => [el("dt", {}, name), el("dd", { "data-count": name }, String(n))]);
}

// what re-simulating each ended episode showed (docs/review.md, "Replay verification")
const REPLAY_VERDICTS = [["verified", "verified"], ["diverged", "diverged"],
  ["not_replayable", "not replayable"], ["pending", "pending"]];

function render(data) {
  $("study-name").textContent = data.study.name;
  document.title = `Live · ${data.study.name} · RLDS Studio`;
  const judged = data.feedback;
  for (const node of document.querySelectorAll("[data-kind=play]")) node.hidden = Boolean(judged);
  $("judging").hidden = !judged;
  if (judged) { // a feedback study has no episodes of its own: its judges are on the participants page
    $("episodes-link").textContent = "Participants";
    $("episodes-link").href = `/participants.html?study=${study}`;
  }
  const sessions = data.sessions;
  $("session-count").textContent = `(${sessions.length})`;
  $("sessions-body").replaceChildren(...sessions.map(sessionRow));
  $("sessions-table").hidden = sessions.length === 0;
  $("no-sessions").hidden = sessions.length > 0;
  $("quotas").replaceChildren(...data.quotas.map(quota));
  // participants' episodes; the designers' test plays apart (server/services/review/counts.py)
  $("today").replaceChildren(...counts([...STATUSES.map((s) => [s, data.episodes_today[s] || 0]),
    ["test plays (not counted)", data.test_plays_today ?? 0]]));
  const replays = data.replays_today || {};
  $("replays").replaceChildren(...counts(REPLAY_VERDICTS.map(([v, label]) => [label, replays[v] || 0])));
  const p = data.participants;
  $("participants").replaceChildren(...counts(judged
    ? [["joined", p.joined], ["completed", p.completed], ["screened out", p.screened_out ?? 0],
      ["by gold", judged.participants.screened_out_gold]]
    : [["joined", p.joined], ["started", p.started], ["completed", p.completed], ["screened out", p.screened_out ?? 0]]));
  if (judged) renderJudging(study, judged, counts);
  $("updated").textContent = `updated ${new Date(data.at).toLocaleTimeString()} · ${data.replicas} replica${data.replicas === 1 ? "" : "s"}`;
}

let retry = 1000;

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/studies/${study}/live`);
  let refused = false;
  ws.addEventListener("open", () => { retry = 1000; connected(true, "live"); pageError(""); });
  ws.addEventListener("message", (event) => {
    let data;
    try { data = JSON.parse(event.data); } catch { return; }
    if (data.type === "error") { refused = true; pageError(data.message); return; }
    if (data.type === "live") render(data);
  });
  ws.addEventListener("close", () => {
    connected(false, refused ? "closed" : "reconnecting…");
    if (!refused) { setTimeout(connect, retry); retry = Math.min(retry * 2, 15000); }
  });
}

async function main() {
  if (!Number.isInteger(study) || study <= 0) { pageError("This page needs a study: open it from the studies page."); return; }
  $("episodes-link").href = `/episodes.html?study=${study}`;
  try {
    render(await api("GET", `/api/studies/${study}/live`)); // the figures now, then pushed
  } catch (err) {
    pageError(err.message);
    connected(false, "closed");
    return;
  }
  connect();
}

main();
