/* The player's lobby (games with the participant's progress, finished and full ones
   closed), the progress toward completion shown between episodes, and the controls legend
   of the environment being played. */

import { PLAYER_KEYS } from "./input.js";
import { pageGroups, renderLegend } from "./legend.js";

const $ = (id) => document.getElementById(id);

const CLOSED_LABELS = { finished: "Finished", full: "Full", failed: "Unavailable" };

export function renderLobby(state, play) {
  const s = state.study;
  const ps = state.participant;
  $("study-name").textContent = s.name;
  $("study-instructions").innerHTML = s.instructions_html; // rendered server-side, HTML disabled
  $("study-instructions-side").innerHTML = s.instructions_html;
  $("lobby-end").hidden = Boolean(ps);
  $("lobby-finish").hidden = !(ps && ps.done);
  $("lobby-hint").textContent = ps ? "Pick a game to play. Games you have finished, that are full or that cannot start are marked." : "";
  renderProgress(state);
  $("env-list").replaceChildren(...Object.values(state.envs).map((env) => {
    const progress = ps && ps.progress ? ps.progress[env.id] : null;
    const done = progress ? progress.completed : env.completed;
    const required = progress ? progress.required : env.episodes_per_participant;
    // open, finished, full (enough episodes from everyone) or failed (it cannot start)
    const status = progress ? progress.status || (done >= required ? "finished" : progress.full ? "full" : "open") : "open";
    const closed = status !== "open";
    const li = document.createElement("li");
    const text = document.createElement("div");
    const name = document.createElement("strong");
    name.textContent = env.name;
    const meta = document.createElement("div");
    meta.className = "env-meta";
    meta.textContent = `${env.mode === "sync" ? "turn by turn" : `real time, ${env.fps} fps`} · ` +
      `${done} of ${required} episodes done`;
    text.append(name, meta);
    const button = document.createElement("button");
    button.type = "button"; button.className = "btn btn-primary";
    button.textContent = CLOSED_LABELS[status] || `Play ${env.name}`;
    button.disabled = closed;
    if (closed) {
      button.className = "btn";
      button.setAttribute("aria-label", `${env.name}: ${CLOSED_LABELS[status] || status}`);
      li.classList.add("env-closed");
    }
    button.dataset.env = env.id;
    button.addEventListener("click", () => play(env.id));
    li.append(text, button);
    return li;
  }));
}

export function renderControls(state, info) {
  renderProgress(state); // the ready gate shows it too
  state.boundKeys = new Set(info.controls.keys);
  state.deadzone = info.controls.deadzone;
  $("quality").value = info.quality;
  $("speed").value = String(info.speed);
  const cams = info.cameras || [];
  for (const id of ["camera-field", "camera-btn"]) $(id).hidden = cams.length < 2;
  // the C key is the game's when its controls bind it
  $("camera-btn").querySelector("kbd").hidden = state.boundKeys.has("KeyC");
  // "I'm done" (X): the key unless the game binds X (legend.js lists it where it works)
  $("done-btn").querySelector("kbd").hidden = state.boundKeys.has(PLAYER_KEYS.done);
  $("camera").replaceChildren(...cams.map((c) => new Option(c, c, false, c === info.camera)));
  state.legend = [...(info.controls.groups || []), ...pageGroups(state, cams.length)];
  renderLegend(state, state.legend);
}

/** Where a participant stands toward completion: "1 of 2 episodes · 3 of 10 minutes". */
export function progressText(ps) {
  if (!ps || !ps.progress) return "";
  const envs = Object.values(ps.progress);
  const done = envs.reduce((n, e) => n + e.completed, 0);
  const asked = Math.max(envs.reduce((n, e) => n + e.required, 0), (ps.requirements || {}).min_episodes || 0);
  const parts = [`${Math.min(done, asked)} of ${asked} episodes`];
  const minS = (ps.requirements || {}).min_play_time_s || 0;
  if (minS > 0) parts.push(`${Math.floor((ps.play_time_s || 0) / 60)} of ${Math.ceil(minS / 60)} minutes`);
  return `Your progress: ${parts.join(" · ")}`;
}

/** The progress line of the lobby, the game's heading (seen at the ready gate) and the panel
    after an episode, from the participant's latest state; hidden for a designer. */
export function renderProgress(state) {
  const text = state.participant ? progressText(state.participant) : "";
  for (const id of ["lobby-progress", "play-progress", "progress-text"]) {
    $(id).textContent = text;
    $(id).hidden = !text;
  }
}
