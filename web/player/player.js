/* RLDS Studio player: a participant's way through a study — entry, consent, instructions,
   lobby, ready gate, episodes, completion — and the play socket (docs/protocol.md). Every
   screen has a way forward. This module holds the screens after the socket's hello (lobby,
   game, save dialog, what comes next) and the episode's phases, and wires the page; the way
   in is entry.js, the socket socket.js, the state they share session.js. */
import * as crowd from "./crowd.js";
import * as questions from "./questions.js";
import * as task from "./task.js";
import { createInput, PLAYER_KEYS } from "./input.js";
import { createMouse, mouseHint } from "./mouse.js";
import { createSpaceMouse } from "./spacemouse.js";
import { createTouchControls } from "./touchpad.js";
import * as views from "./views.js";
import { fit, fmt, stepsTaken } from "./stage.js";
import { renderLegend, watchDevices, watchKeyboard } from "./legend.js";
import { nextPrompt, onPhone, overlays, pausedDone } from "./words.js";
import { renderTopbar } from "../shared/topbar.js";
import "./entry.js";
import "./socket.js";
import { $, balanced, finish, flow, isParticipant, playMessage, recall, remember, send, show, state } from "./session.js";

renderTopbar({ home: false, skipLink: false }); // a participant has no studies page
document.body.dataset.device = onPhone() ? "phone" : "computer"; // what the page shows (player.css)
flow.keyboardAttached = watchKeyboard(state, recall().deviceOk); // a phone's keyboard shows the keys

/* --- where to go next --------------------------------------------------------------- */

/** First screen of a (new) socket with no episode running. */
function afterHello() {
  if (!isParticipant()) { renderLobby(); show("lobby-view"); return; }
  const ps = state.participant;
  if (ps.done && !state.refused) { flow.finishStudy(); return; }
  const played = Object.values(ps.progress || {}).some((p) => p.completed > 0);
  if (!played && !recall().instructionsSeen) {
    crowd.showInstructions(state.study.instructions_html, () => { remember({ instructionsSeen: true }); goLobby(); });
    return;
  }
  goLobby();
}

/** The lobby (choice), or straight into the assigned environment (balanced). */
function goLobby() {
  $("after-save").hidden = true;
  playMessage("");
  const ps = state.participant;
  if (ps && ps.done && !state.refused) { flow.finishStudy(); return; }
  if (isParticipant() && balanced()) {
    const first = ps.assigned_env || Object.keys(state.envs)[0];
    enterPlay(first);
    startEpisode(null);
    return;
  }
  gate.guardNext = false; // the lobby's choice is a deliberate start
  renderLobby();
  show("lobby-view");
  if (state.refused) { crowd.pageError(state.refused); state.refused = null; }
  const first = $("env-list").querySelector("button:not(:disabled)");
  if (first) first.focus();
}

/** After an episode: one obvious way forward, reachable with Enter or a click once its guard
    is over (``next`` from the server); a game key does not take it. */
function showNext(next, text) {
  const kind = next ? next.kind : isParticipant() ? "lobby" : "again";
  const nextEnv = next && next.env_id && state.envs[next.env_id];
  const label = { again: "Next episode", next_env: nextEnv ? `Next game: ${nextEnv.name}` : "Choose the next game",
    done: state.participant && state.participant.ends_full ? "Continue" : "Finish and get your code", lobby: balanced() ? "Continue" : "Choose a game" }[kind] || "Continue";
  $("next-label").textContent = label;
  $("next-btn").dataset.kind = kind;
  $("next-btn").dataset.env = nextEnv ? next.env_id : "";
  $("after-save-text").textContent = text;
  $("after-save-text").hidden = !text;
  $("other-env-btn").hidden = kind === "done" || kind === "lobby" || (isParticipant() && balanced());
  $("end-btn").hidden = isParticipant();
  $("after-save").hidden = false;
  renderLobby();
  setPhase("idle", nextPrompt(label));
  const panel = $("after-save");
  questions.ask(panel, { keys: questions.enterAnswers(panel, () => $("next-btn")), scope: questions.pageKeys(panel) });
}

function goNext() {
  const { kind, env } = $("next-btn").dataset;
  $("after-save").hidden = true;
  gate.guardNext = kind !== "done"; // the game this answer starts waits for a press of its own
  if (kind === "done") { flow.finishStudy(); return; }
  if (kind === "again") { startEpisode(state.env); return; }
  if (kind === "next_env" && env) { enterPlay(env); startEpisode(env); return; }
  goLobby();
}

/* --- views ------------------------------------------------------------------------- */
function renderLobby() {
  views.renderLobby(state, (envId) => { enterPlay(envId); startEpisode(envId); });
}

function enterPlay(envId) {
  const env = state.envs[envId];
  if (!env) return;
  state.env = envId;
  task.closeChoice(); // asked again by the next start
  $("env-name").textContent = env.name;
  $("env-instructions").innerHTML = env.instructions_html || "<p class=\"muted\">No extra instructions.</p>";
  // the designer's speed choices (none: the speed is fixed and no control is shown)
  const choices = env.mode === "async" ? env.speed_choices || [] : [];
  $("speed").replaceChildren(...choices.map((v) => {
    const option = document.createElement("option");
    option.value = String(v); option.textContent = `${v}×`; option.selected = v === env.speed;
    return option;
  }));
  $("speed-field").hidden = !choices.length;
  // "I'm done": where the environment lets the participant end an episode (allow_end)
  $("done-btn").hidden = !env.allow_end;
  if ($("play-view").hidden) { show("play-view"); requestAnimationFrame(fit); }
}

const OVERLAYS = overlays(); // "tap" on a touch-only device, else the keys
const PAUSED_DONE = pausedDone(); // the pause of an episode the participant may end

/** Whether the participant may end the running environment's episodes ("I'm done"). */
const endsHere = () => Boolean(state.envs[state.env] && state.envs[state.env].allow_end);

/** "I'm done" (its button or X): the episode ends where it is, then the save question, as
    at any ending. One request per episode: the server answers a second with an error. */
function endEpisode() {
  if (!activePhase() || !endsHere() || state.ending) return false;
  if (state.askingCancel) closeCancelAsk();
  state.ending = true;
  $("done-btn").disabled = true;
  releaseAll(true);
  send({ type: "end_episode" });
  return true;
}

function setPhase(phase, overlay = phase === "paused" && endsHere() ? PAUSED_DONE : OVERLAYS[phase]) {
  state.phase = phase;
  $("st-phase").textContent = phase;
  const active = phase === "playing" || phase === "paused";
  if (!active && state.askingCancel) closeCancelAsk(); // the episode ended meanwhile
  $("pause-btn").disabled = !active;
  $("cancel-btn").disabled = !active;
  $("done-btn").disabled = !active || Boolean(state.ending);
  if (!active) state.ending = false;
  $("start-btn").disabled = !(phase === "idle" || phase === "ready");
  $("start-btn").hidden = phase === "idle" && (!$("after-save").hidden || task.choosing()); // the panel has the way on
  $("pause-btn").firstChild.textContent = phase === "paused" ? "Resume " : "Pause ";
  $("overlay").hidden = !overlay;
  $("overlay").dataset.phase = phase;
  $("overlay-text").textContent = overlay || "";
  if (!active) resetPause();
}

/** The save question's keys: Enter, and S / F / D unless the game binds them (a game key
    never answers: that key is then hidden and only a click answers). */
function saveKeys(e) {
  const own = (code, id) => (e.code === code && !state.boundKeys.has(code) ? $(id) : null);
  const outcome = $("save-dialog").dataset.ask === "true" && (own("KeyS", "save-success") || own("KeyF", "save-failure"));
  return questions.enterAnswers($("save-dialog"), () => $("save-yes"))(e) || outcome || own("KeyD", "save-no");
}

function askSave(m) {
  const yours = m.ended_by === "participant" ? "You ended the episode: " : "";
  $("save-text").textContent = `${yours}${stepsTaken(m)} steps, return ${fmt(m.return)}.`;
  // the study asks whether the player succeeded: Succeeded (S) / Failed (F) save with it,
  // Skip (Enter) saves without an answer
  const ask = Boolean(m.ask_outcome);
  $("save-outcome").hidden = !ask;
  $("save-question").textContent = ask ? "Did you succeed? Your answer is saved with the episode." : "Save this episode?";
  $("save-yes-label").textContent = ask ? "Skip" : "Save";
  $("save-dialog").dataset.ask = ask ? "true" : "false";
  for (const [id, code] of [["save-success", "KeyS"], ["save-failure", "KeyF"], ["save-no", "KeyD"]]) {
    $(id).querySelector("kbd").hidden = state.boundKeys.has(code);
  }
  if ($("save-dialog").open) return; // asked again (a reconnect): its guard runs on
  $("save-dialog").showModal();
  questions.ask($("save-dialog"), { keys: saveKeys, scope: questions.allKeys });
}

/* --- episodes: start, the ready gate, pause, cancel ------------------------------------ */
/** Start an episode of ``envId``; where the environment lets the player choose its task,
    ask which first (task.js) and start with ``taskId``. */
function startEpisode(envId = state.env, taskId = undefined) {
  if (state.phase !== "idle") return;
  $("after-save").hidden = true; playMessage("");
  const env = state.envs[envId || state.env];
  if (taskId === undefined && task.offersChoice(env)) {
    task.chooseTask(env, (id) => startEpisode(envId, id));
    setPhase("idle", task.choosePrompt()); // no Start button meanwhile: the choice starts
    return;
  }
  task.closeChoice();
  setPhase("starting");
  // balanced studies: the server picks the environment
  const message = isParticipant() && balanced() ? { type: "start" } : { type: "start", env_id: envId };
  send(taskId ? { ...message, task_id: taskId } : message);
}

/** The first frame is on screen; nothing steps until the player says go. A gate reached by
    answering the panel after an episode is guarded like a question (GUARD_MS: no key, tap,
    click or gamepad A passes it): Enter mashed through an episode's end may save it and ask
    for the next, but the next game starts only on a press made at its gate. */
const gate = { guardNext: false, timer: null };
function readyGate() {
  setPhase("ready");
  $("screen").focus();
  if (!gate.guardNext) return;
  gate.guardNext = false;
  clearTimeout(gate.timer);
  $("start-btn").disabled = true;
  $("overlay").dataset.guard = "on";
  gate.timer = setTimeout(() => {
    gate.timer = null;
    delete $("overlay").dataset.guard;
    $("start-btn").disabled = !(state.phase === "idle" || state.phase === "ready");
  }, questions.GUARD_MS);
}

function clearCountdown() { clearTimeout(state.countdown); state.countdown = null; }

/** The game and its touch buttons in sight together while playing (a phone in landscape
 *  had the buttons below the fold): scrolled to the stage when they do not fit as they are. */
function inView() {
  const pad = [$("touch-controls"), $("touch-pad")].find((el) => !el.hidden);
  if (!pad) return;
  const top = $("stage").getBoundingClientRect().top, bottom = pad.getBoundingClientRect().bottom;
  if (top < 0 || bottom > innerHeight) $("stage").scrollIntoView({ block: "start" });
}

function go() {
  if (state.phase !== "ready" || gate.timer) return;
  const env = state.envs[state.env];
  let left = state.countdownS ?? ((env && env.mode === "async" && env.countdown_s) || 0);
  const tick = () => {
    if (state.phase !== "countdown" && state.phase !== "ready") return;
    if (left <= 0) { send({ type: "go" }); setPhase("playing"); $("screen").focus(); inView(); return; }
    setPhase("countdown", String(left));
    left -= 1;
    state.countdown = setTimeout(tick, 1000);
  };
  tick();
}

/* Pause is one state: Esc toggles the state the player wants, one request at a time goes to
   the server, and its answer (``paused`` / ``resumed``) sends the next when the two differ. */
const pausing = { want: null, asked: null }; // "paused" / "playing"; the request in flight
const activePhase = () => state.phase === "playing" || state.phase === "paused";
function wantPause(paused) { pausing.want = paused ? "paused" : "playing"; syncPause(); }
function syncPause() {
  if (!pausing.asked && activePhase() && pausing.want && pausing.want !== state.phase) {
    pausing.asked = pausing.want === "paused" ? "pause" : "resume";
    if (pausing.asked === "pause") releaseAll(true);
    send({ type: pausing.asked });
  }
  $("st-phase").dataset.asking = pausing.asked || "";
}
/** The server's answer to a pause or resume: the phase it is in (null: refused). */
function pauseAnswered(phase) {
  pausing.asked = null;
  if (phase) setPhase(phase);
  if (phase === "playing" && !questions.anyOpen()) $("screen").focus();
  if (!phase) pausing.want = null;
  syncPause();
}
function resetPause() { pausing.want = pausing.asked = null; $("st-phase").dataset.asking = ""; }
function togglePause() {
  if (activePhase()) wantPause((pausing.want || state.phase) !== "paused");
}
/** Delete (or the button) asks first, pausing the game meanwhile; after the question's guard,
 *  Delete again or Enter cancels, Esc goes back (resuming what was playing). */
function cancelEpisode() {
  if (!activePhase()) return;
  if (state.askingCancel) { $("cancel-yes").click(); return; } // the button again: as its guard allows
  state.askingCancel = { resume: (pausing.want || state.phase) === "playing" };
  wantPause(true);
  const ask = $("cancel-ask");
  ask.hidden = false;
  const keys = (e) => (e.code === "Delete" ? $("cancel-yes") : e.code === "Escape" ? $("cancel-no")
    : questions.enterAnswers(ask, () => $("cancel-yes"))(e));
  questions.ask(ask, { keys, scope: questions.pageKeys(ask) });
}
function closeCancelAsk() { state.askingCancel = null; $("cancel-ask").hidden = true; }
function confirmCancel() {
  closeCancelAsk();
  if (state.phase === "playing" || state.phase === "paused") send({ type: "cancel" });
  $("screen").focus();
}
function keepPlaying() {
  const { resume } = state.askingCancel || {};
  closeCancelAsk();
  if (resume) wantPause(false);
  $("screen").focus();
}
/** While the cancel question is on screen no other key plays (its own: questions.js). */
const answerCancel = () => Boolean(state.askingCancel);
function primaryAction() {
  if (task.choosing()) return; // the choice takes its own keys
  if (state.phase === "ready") go();
  else if (state.phase === "idle" && !$("after-save").hidden) $("next-btn").click(); // its guard holds
  else if (state.phase === "idle") startEpisode();
}

/** Render from the environment's next camera (C or the button); false when it has one. */
function nextCamera() {
  const select = $("camera");
  if ($("camera-field").hidden || select.options.length < 2) return false;
  const next = select.options[(select.selectedIndex + 1) % select.options.length].value;
  send({ type: "set_camera", camera: next }); // the server's ``setting`` answer selects it
  return true;
}

/** A modal dialog takes every key (the save question, the instructions, the narration). */
const blocked = () => ["save-dialog", "instructions-dialog", "narrate-dialog"].some((id) => $(id).open);
const input = createInput(state, send, { primary: primaryAction, go, togglePause, cancel: cancelEpisode,
  blocked, answer: answerCancel, nextCamera, done: endEpisode });
const { mode, sendInput, releaseAll, onKeyDown, onKeyUp } = input;
input.addDevice(createMouse(state, input));
const spaceMouse = input.addDevice(createSpaceMouse(state, input));
const touchControls = input.addDevice(createTouchControls(state, input, nextCamera));

/** The devices the environment's controls bind: the mouse's hint, the SpaceMouse's button. */
function renderDevices(controls) {
  state.devicesBound = new Set(controls.devices || []);
  const items = state.devicesBound.has("mouse") ? mouseHint(controls.legend) : [];
  const intro = document.createElement("strong");
  intro.textContent = "Mouse: press on the picture and drag, like a joystick (farther is faster; let go to stop).";
  $("mouse-hint").replaceChildren(intro, ...items.map((text) => Object.assign(document.createElement("span"), { textContent: text })));
  $("mouse-hint").hidden = !items.length;
  $("stage").dataset.mouse = items.length ? "true" : "false";
  spaceMouse.render();
  touchControls.render(controls, state.info && state.info.cameras);
}
/** The server refused "I'm done" (before the first step, say): the button works again. */
function endRefused() { state.ending = false; $("done-btn").disabled = !activePhase(); }
Object.assign(flow, { afterHello, goLobby, showNext, enterPlay, setPhase, askSave, readyGate, clearCountdown, input,
  renderDevices, pauseAnswered, resetPause, endRefused });

/* --- wiring ------------------------------------------------------------------------- */
function wire() {
  const canvas = $("screen");
  canvas.addEventListener("keydown", onKeyDown);
  canvas.addEventListener("keyup", onKeyUp);
  canvas.addEventListener("click", () => { canvas.focus(); if (state.phase === "ready") go(); });
  canvas.addEventListener("focus", () => { $("stage").dataset.focused = "true"; });
  canvas.addEventListener("blur", () => { $("stage").dataset.focused = "false"; releaseAll(true); });
  document.addEventListener("keydown", (e) => {
    if (!$("instructions-view").hidden && e.code === "Enter" && e.target.tagName !== "BUTTON") {
      e.preventDefault(); $("instructions-ok").click(); return;
    }
    if (e.target === canvas || $("play-view").hidden || blocked()) return;
    if (["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(e.target.tagName)) return;
    onKeyDown(e);
  });
  $("start-btn").addEventListener("click", primaryAction);
  $("next-btn").addEventListener("click", goNext);
  $("pause-btn").addEventListener("click", togglePause);
  $("cancel-btn").addEventListener("click", cancelEpisode);
  $("done-btn").addEventListener("click", () => { endEpisode(); $("screen").focus(); });
  $("cancel-yes").addEventListener("click", confirmCancel);
  $("cancel-no").addEventListener("click", keepPlaying);
  $("other-env-btn").addEventListener("click", () => { $("after-save").hidden = true; renderLobby(); show("lobby-view"); });
  const endSession = () => { state.closing = true; send({ type: "end_session" }); finish("Your session has ended. You can close this page."); };
  $("end-btn").addEventListener("click", endSession);
  $("lobby-end").addEventListener("click", endSession);
  $("lobby-finish").addEventListener("click", flow.finishStudy);
  $("lobby-instructions").addEventListener("click", () => crowd.openInstructions(state.study.instructions_html));
  // the game's own instructions too: a phone shows no side column
  $("play-instructions").addEventListener("click", () => {
    const env = state.envs[state.env];
    const own = env && env.instructions_html ? `<h3>${$("env-name").innerHTML}</h3>${env.instructions_html}` : "";
    crowd.openInstructions(state.study.instructions_html + own);
  });
  // One answer per episode: the dialog closes at once, so a second Enter cannot answer again.
  const answer = (keep, outcome) => {
    if (!$("save-dialog").open) return;
    $("save-dialog").close(); playMessage(keep ? "Saving…" : "Discarding…", true);
    send(outcome ? { type: "save", keep, outcome } : { type: "save", keep });
  };
  $("save-yes").addEventListener("click", () => answer(true));
  $("save-no").addEventListener("click", () => answer(false));
  $("save-success").addEventListener("click", () => answer(true, "success"));
  $("save-failure").addEventListener("click", () => answer(true, "failure"));
  // an answer is needed: Esc (the pause key) never closes it
  $("save-dialog").addEventListener("keydown", (e) => { if (e.code === "Escape") e.preventDefault(); });
  $("save-dialog").addEventListener("cancel", (e) => e.preventDefault());
  $("speed").addEventListener("change", (e) => send({ type: "set_speed", speed: Number(e.target.value) }));
  $("quality").addEventListener("change", (e) => send({ type: "set_quality", quality: e.target.value }));
  $("camera").addEventListener("change", (e) => send({ type: "set_camera", camera: e.target.value }));
  $("camera-btn").addEventListener("click", () => { nextCamera(); canvas.focus(); }); // keys go on to the game
  $("fullscreen-btn").addEventListener("click", () => {
    if (document.fullscreenElement) document.exitFullscreen(); else $("stage").requestFullscreen().then(() => canvas.focus());
  });
  document.addEventListener("fullscreenchange", () => requestAnimationFrame(fit));
  window.addEventListener("resize", fit);
  window.addEventListener("gamepadconnected", () => {}); // some browsers expose pads only to listeners
  watchDevices(() => { if (state.legend) renderLegend(state, state.legend); }); // a gamepad came, a phone paired
  input.pollGamepad();
}

wire();
flow.boot();