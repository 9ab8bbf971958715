/* RLDS Studio player: a participant's way through a study — entry, consent, instructions,
   lobby, ready gate, episodes, completion — and the play socket (docs/protocol.md). Every
   screen has a way forward; a reload finds its place again from the server (/api/play/me,
   the session id) with the ticket kept in sessionStorage. */
import * as crowd from "./crowd.js";
import { createInput, PLAYER_KEYS } from "./input.js";
import * as preview from "./preview.js";
import { renderTouch } from "./touch.js";
import * as views from "./views.js";
import { fit, fmt, onFrame, onFrameDrawn, updateStatus } from "./stage.js";
import { renderTopbar } from "../shared/topbar.js";

const PROTOCOL = 1;
const SUBPROTOCOL = "rlds-studio";
const $ = (id) => document.getElementById(id);
renderTopbar({ home: false, skipLink: false }); // a participant has no studies page
const params = new URLSearchParams(location.search);
const token = params.get("token");
const previewId = preview.previewOf(params); // a designer's preview as a participant
const link = token || (previewId && `preview-${previewId}`); // names what this browser keeps

const state = {
  ws: null, sessionId: null, ticket: null, study: null, envs: {}, env: null, info: null,
  participant: null, phase: "idle", episode: null, step: -1, next: null,
  held: [], boundKeys: new Set(), deadzone: 0.15,
  pad: { index: null, buttons: {}, axes: [], signature: "" },
  retries: 0, closing: false, takeover: false, resendTimer: null, countdown: null, refused: null,
  countdownS: null,
};

/* --- small helpers ------------------------------------------------------------------- */
const show = crowd.show;
function playMessage(text, ok = false) {
  const el = $("play-message");
  el.textContent = text || "";
  el.hidden = !text;
  el.classList.toggle("alert-error", !ok);
  el.classList.toggle("alert-ok", ok);
}
function send(message) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(message));
}
function storageKey() { return `rlds-player:${link || "study-" + params.get("study")}`; }
function recall() {
  try { return JSON.parse(sessionStorage.getItem(storageKey()) || "{}"); } catch { return {}; }
}
function remember(extra = {}) {
  sessionStorage.setItem(storageKey(), JSON.stringify({ ...recall(),
    ticket: state.ticket, session: state.sessionId, ...extra }));
}
function forgetTicket() { state.ticket = null; state.sessionId = null; remember(); }
const isParticipant = () => state.participant !== null;
const balanced = () => Boolean(state.study && state.study.assignment === "balanced");

/** Leave the game for a screen of its own: this tab's socket is closed on purpose. */
function stopPlaying() {
  state.closing = true;
  if (state.ws) state.ws.close(1000);
  state.ws = null;
  for (const id of ["save-dialog", "instructions-dialog"]) if ($(id).open) $(id).close();
}

/* --- entry: link, platform ids, consent ------------------------------------------------ */
async function boot() {
  state.closing = false;
  if (previewId) { await bootPreview(); return; }
  if (!token) {
    if (params.get("study")) { state.sessionId = recall().session || null; connect(); return; }
    crowd.showStatus({ title: "No study link",
      text: "This page needs a study link (…/player.html?token=…) from the study's researchers." });
    return;
  }
  const saved = recall();
  crowd.useBrowserKeyOf(token, saved.who);
  state.ticket = saved.ticket || null;
  state.sessionId = saved.session || null;
  const look = await crowd.call("POST", "/api/play/preview", { token });
  if (look.status === 404) { crowd.showInvalidLink(); return; }
  if (!look.ok) { crowd.showUnreachable(crowd.errorText(look), boot); return; }
  useStudy(look.body.study);
  const ids = crowd.platformParams(params);
  if (ids.assignmentId === crowd.MTURK_PREVIEW) { crowd.showPreview(state.study); return; }
  if (!state.ticket && !recall().deviceOk && !crowd.deviceCanPlay(state.study.inputs)) {
    const leave = Object.keys(ids).length ? () => join({ params: ids }, false, true) : null; // screened out
    crowd.showDeviceCannotPlay(state.study.inputs, () => { remember({ deviceOk: true }); boot(); }, leave);
    return;
  }
  if (state.ticket) {
    const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
    if (me.ok) { route(me.body); return; }
    if (me.status === 0) { crowd.showUnreachable(crowd.errorText(me), boot); return; }
    forgetTicket(); // expired, or the link was replaced: join again
  }
  const anonymous = localStorage.getItem(anonKey()); // a returning anonymous participant
  if (look.body.state !== "active" && !Object.keys(ids).length && !anonymous) { crowd.showNotOpen(look.body.state, boot); return; }
  if (Object.keys(ids).length) { await join({ params: ids }, false); return; }
  if (anonymous && state.study.allow_anonymous) { await join({ participant_id: anonymous }, false); return; }
  crowd.askForId(state.study, "", (id) => join(id ? { participant_id: id } : {}, true));
}

/** A preview: back where it was (the ticket kept), else the platform to preview as. */
async function bootPreview() {
  preview.markTest();
  const saved = recall();
  crowd.useBrowserKeyOf(link, saved.who);
  state.ticket = saved.ticket || null;
  state.sessionId = saved.session || null;
  if (state.ticket) {
    const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
    if (me.ok) { route(me.body); return; }
    forgetTicket();
  }
  await preview.choosePlatform(previewId, joined);
}

function anonKey() { return `rlds-anon:${token}`; }

async function join(body, typed, leaving = false) {
  const who = (body.params && (body.params.PROLIFIC_PID || body.params.workerId)) || body.participant_id;
  const key = crowd.useBrowserKeyOf(token, who);
  const res = await crowd.call("POST", "/api/play/join", { token, ...body, ...(key ? { browser_key: key } : {}) });
  if (!res.ok) {
    if (res.status === 404) crowd.showInvalidLink();
    else if (res.status === 409 && res.body.code === "preview") crowd.showPreview(state.study);
    else if (res.status === 409) crowd.showNotOpen(res.body.code, boot, crowd.errorText(res));
    else if (typed && res.status === 422) crowd.pageError(crowd.errorText(res));
    else crowd.showUnreachable(crowd.errorText(res), boot);
    return;
  }
  if (res.body.participant.platform === "anonymous") localStorage.setItem(anonKey(), res.body.participant.external_id);
  await joined(res.body, leaving);
}

/** Join's answer (or a preview's): keep the ticket and browser key, then the next screen
    (``leaving``: the participant chose to leave before consent, which declines it). */
async function joined(body, leaving = false) {
  state.ticket = body.ticket;
  crowd.useBrowserKeyOf(link, body.participant_id);
  crowd.keepBrowserKey(body);
  remember({ who: body.participant_id });
  useStudy(body.study);
  if (leaving) await answerConsent(false); else route(body.participant);
}

function useStudy(study) {
  state.study = study;
  state.envs = Object.fromEntries(study.environments.map((e) => [e.id, e]));
  $("brand-name").textContent = study.name;
  document.title = `${study.name} — RLDS Studio`;
}

/** The screen a participant's state calls for (ParticipantState, docs/protocol.md). */
async function route(ps) {
  state.participant = ps;
  if (ps.screened_out) { stopPlaying(); crowd.showCode("screenout", ps.screenout); return; }
  if (ps.completed && ps.completion) { stopPlaying(); crowd.showCode("completion", ps.completion); return; }
  if (ps.full && ps.full_outcome) { stopPlaying(); crowd.showCode("full", ps.full_outcome); return; }
  if (ps.code_elsewhere) {
    stopPlaying();
    crowd.showStatus({ title: "You have already taken part",
      text: "Your code was shown in the browser where you took part. Open the study link there to see it again." });
    return;
  }
  if (ps.done) { await finishStudy(); return; }
  if (ps.consent_required && !ps.consented) { crowd.showConsent(state.study.consent_html, answerConsent); return; }
  if (!state.ws) connect();
}

async function answerConsent(accept) {
  const res = await crowd.call("POST", "/api/play/consent", { accept }, state.ticket);
  crowd.keepBrowserKey(res.body);
  if (res.ok) { route(res.body); return; }
  if ([401, 403, 404].includes(res.status)) { forgetTicket(); boot(); return; }
  crowd.pageError(crowd.errorText(res));
}

/** Ask for the completion code; when something is still missing, say what and go on playing. */
async function finishStudy() {
  const res = await crowd.call("POST", "/api/play/complete", {}, state.ticket);
  crowd.keepBrowserKey(res.body);
  if (res.ok && (res.body.completion || res.body.full_outcome || res.body.code_elsewhere)) { route(res.body); return; }
  if ([401, 403, 404].includes(res.status)) { forgetTicket(); boot(); return; }
  // not done after all (the server says what is missing): back to the games
  if (res.ok) state.participant = res.body;
  if (state.participant) state.participant.done = false;
  state.refused = res.ok ? "Some of the study is still to do." : crowd.errorText(res);
  if (!state.ws) { connect(); return; }
  goLobby();
}

/* --- the socket ------------------------------------------------------------------------ */
/* A participant's ticket rides in the Sec-WebSocket-Protocol header, not in the URL, which
   access logs and browser history keep (docs/protocol.md). */
function connect() {
  state.closing = false;
  const q = new URLSearchParams();
  if (!state.ticket) q.set("study", params.get("study"));
  if (state.sessionId) q.set("session", state.sessionId);
  if (state.takeover) q.set("takeover", "1");
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const protocols = state.ticket ? [SUBPROTOCOL, `ticket.${state.ticket}`] : [SUBPROTOCOL];
  const ws = new WebSocket(`${scheme}://${location.host}/ws/play?${q}`, protocols);
  ws.binaryType = "arraybuffer";
  let opened = false;
  ws.onopen = () => { opened = true; state.retries = 0; };
  ws.onmessage = (ev) => { if (state.ws === ws) (typeof ev.data === "string" ? onControl(JSON.parse(ev.data)) : onFrame(ev.data)); };
  ws.onclose = (ev) => { if (state.ws === ws) onClose(ev, opened); };
  state.ws = ws;
}

function takeOver() { state.takeover = true; state.sessionId = null; connect(); }

function onClose(ev, opened) {
  state.ws = null;
  clearCountdown();
  if (ev.code === 4002) {
    crowd.showStatus({ title: "This study is open in another tab",
      text: "You can take part in one tab or window at a time. Continue here to move your study to this tab (the other one will stop).",
      button: { label: "Continue here", onClick: takeOver } });
    return;
  }
  if (ev.code === 4000) {
    stopPlaying();
    crowd.showStatus({ title: "Continued in another tab",
      text: "This study was opened in another tab or window, so it stopped here. Nothing you did is lost.",
      button: { label: "Continue here", onClick: takeOver } });
    return;
  }
  if (state.closing) return;
  if (ev.code === 4001) {
    if (!isParticipant()) { finish("Your session has ended. You can close this page."); return; }
    crowd.showStatus({ title: "Your session has ended", text: "You can go on where you left off.",
      button: { label: "Continue", onClick: boot } });
    return;
  }
  if (!opened && state.retries === 0) {
    // refused on arrival: the session may be over (start a new one), or else the ticket
    if (state.sessionId) { state.sessionId = null; remember(); connect(); return; }
    if (state.ticket) { forgetTicket(); boot(); return; } // expired, replaced link, study paused
    crowd.pageError("You cannot test-play this study: log in as one of its designers first.");
    return;
  }
  if (ev.code === 1008) { crowd.showUnreachable(`Disconnected: ${ev.reason || "policy violation"}.`, boot); return; }
  if (!opened && state.ticket && state.retries >= 3) { forgetTicket(); state.retries = 0; boot(); return; }
  state.retries++;
  playMessage("Connection lost — reconnecting…");
  setTimeout(connect, Math.min(1000 * state.retries, 5000));
}

function finish(text) { $("done-text").textContent = text; show("done-view"); sessionStorage.removeItem(storageKey()); }

const handlers = {
  hello(m) {
    if (m.protocol !== PROTOCOL) { crowd.pageError(`The server speaks protocol ${m.protocol}; reload the page.`); return; }
    state.sessionId = m.session_id;
    state.takeover = false;
    remember();
    useStudy(m.study);
    if (m.participant !== undefined) state.participant = m.participant;
    playMessage("");
    setPhase(m.phase);
    if (m.episode) {
      state.episode = m.episode; state.step = m.episode.step;
      enterPlay(m.episode.env_id);
      updateStatus({ step: m.episode.step, ret: m.episode.return });
      if (m.phase === "ended") askSave(m.episode);
      if (m.phase === "ready" || m.episode.ready_gate) readyGate();
    } else if (!m.resumed || $("play-view").hidden) {
      afterHello(); // a reconnect in the middle of the play view keeps its screen
    }
  },
  env_ready(m) {
    state.info = m;
    // a resumed session re-announces its worker: move to the game only when one is starting
    if (state.envs[m.env_id] && (state.phase !== "idle" || state.episode)) enterPlay(m.env_id);
    views.renderControls(state, m);
    renderTouch(state, m.controls, input);
  },
  episode_started(m) {
    state.episode = m.episode; state.step = 0; state.next = null;
    if (m.episode.env_id && state.envs[m.episode.env_id]) enterPlay(m.episode.env_id);
    $("after-save").hidden = true; playMessage("");
    $("screen").focus();
    state.countdownS = m.countdown_s || 0;
    if (m.ready_gate) readyGate(); else setPhase("playing");
  },
  started() { if (state.phase === "countdown" || state.phase === "ready") setPhase("playing"); },
  paused() { setPhase("paused"); },
  resumed() { setPhase("playing"); $("screen").focus(); },
  episode_ended(m) { setPhase("ended"); releaseAll(false); askSave(m); },
  episode_saved(m) {
    if ($("save-dialog").open) $("save-dialog").close();
    playMessage("");
    setPhase("idle");
    state.episode = null;
    if (m.participant) state.participant = m.participant;
    for (const [key, n] of Object.entries(m.completed || {})) if (state.envs[key]) state.envs[key].completed = n;
    const words = { completed: "Episode saved.", rejected: "Episode discarded.", canceled: "Episode canceled.",
      abandoned: "The episode was abandoned.", failed: "The game stopped." };
    showNext(m.next, `${words[m.status] || m.status} ${m.steps} steps, return ${fmt(m.return)}.`);
  },
  episode_failed(m) {
    setPhase("idle"); state.episode = null;
    // the server words it plainly for a participant (the designer finds the details with the episode)
    playMessage(m.message);
    showNext(m.next, isParticipant() ? "" : "The environment failed; this episode is kept as failed.");
  },
  setting(m) {
    if (m.speed !== undefined) $("speed").value = String(m.speed);
    if (m.quality !== undefined) {
      $("quality").value = m.quality;
      $("quality").title = m.adaptive ? "Adjusted to your connection; choose another to change the most it may use" : "";
    }
    if (m.camera !== undefined) $("camera").value = m.camera;
  },
  stats(m) { $("st-latency").textContent = m.latency_ms == null ? "–" : `${Math.round(m.latency_ms)} ms`; },
  session_ended() { state.closing = !isParticipant(); },
  error(m) {
    if (m.for === "input" && m.code === "wrong_state") return; // a key in flight as the state changed
    if (m.code === "open_elsewhere") return; // the close (4002) that follows says it
    if (m.for === "input" && m.code === "rate_limited" && mode() === "async") {
      // the server still holds an older input: send the current one once the limit allows
      clearTimeout(state.resendTimer);
      state.resendTimer = setTimeout(() => { if (state.phase === "playing") sendInput(); }, 100);
      return;
    }
    if (m.for === "start" && state.phase === "starting") {
      setPhase("idle");
      if (isParticipant()) { refusedStart(m); return; }
    }
    playMessage(`${m.message}`);
  },
  pong() {},
};

function onControl(m) { const h = handlers[m.type]; if (h) h(m); }

onFrameDrawn((frame, drawn) => {
  send({ type: "ack", episode: frame.episode, step: frame.step, drawn_ms: drawn });
  state.step = frame.step;
});

/* --- where to go next --------------------------------------------------------------- */
/** A participant's start was refused (a game filled up meanwhile, the study was paused...):
    the server sent their state and the way forward; follow it, never back into the same
    refusal. */
function refusedStart(m) {
  if (m.participant) state.participant = m.participant;
  const kind = m.next ? m.next.kind : null;
  if (kind === "done") { finishStudy(); return; }
  if (kind === "paused") { crowd.showNotOpen("paused", checkBack); return; }
  if (kind === "closed") {
    if (state.participant && state.participant.done) finishStudy();
    else { stopPlaying(); crowd.showNotOpen("closed", checkBack); }
    return;
  }
  playMessage(m.message);
  showNext(m.next, "");
}

/** Back from a paused study: the state again, then on where it leads. */
async function checkBack() {
  const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
  if (!me.ok) { boot(); return; }
  state.participant = me.body;
  if (me.body.study_state === "paused") { crowd.showNotOpen("paused", checkBack); return; }
  if (!state.ws) { route(me.body); return; }
  goLobby();
}

/** First screen of a (new) socket with no episode running. */
function afterHello() {
  if (!isParticipant()) { renderLobby(); show("lobby-view"); return; }
  const ps = state.participant;
  if (ps.done && !state.refused) { finishStudy(); return; }
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
  if (ps && ps.done && !state.refused) { finishStudy(); return; }
  if (isParticipant() && balanced()) {
    const first = ps.assigned_env || Object.keys(state.envs)[0];
    enterPlay(first);
    startEpisode(null);
    return;
  }
  renderLobby();
  show("lobby-view");
  if (state.refused) { crowd.pageError(state.refused); state.refused = null; }
  const first = $("env-list").querySelector("button:not(:disabled)");
  if (first) first.focus();
}

/** After an episode: one obvious way forward, reachable with Enter (``next`` from the server). */
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
  setPhase("idle", `${label} — press Enter`);
  $("next-btn").focus({ preventScroll: true });
}

function goNext() {
  const { kind, env } = $("next-btn").dataset;
  $("after-save").hidden = true;
  if (kind === "done") { finishStudy(); return; }
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
  if ($("play-view").hidden) { show("play-view"); requestAnimationFrame(fit); }
}

const OVERLAYS = { paused: "Paused — press Esc or Resume to continue", idle: "Press Enter to start",
  starting: "Starting…", ended: "Episode over",
  ready: "Press Enter, any game key or gamepad A to start" };

function setPhase(phase, overlay = OVERLAYS[phase]) {
  state.phase = phase;
  $("st-phase").textContent = phase;
  const active = phase === "playing" || phase === "paused";
  if (!active && state.askingCancel) closeCancelAsk(); // the episode ended meanwhile
  $("pause-btn").disabled = !active;
  $("cancel-btn").disabled = !active;
  $("start-btn").disabled = !(phase === "idle" || phase === "ready");
  $("start-btn").hidden = phase === "idle" && !$("after-save").hidden; // the panel has the way on
  $("pause-btn").firstChild.textContent = phase === "paused" ? "Resume " : "Pause ";
  $("overlay").hidden = !overlay;
  $("overlay").dataset.phase = phase;
  $("overlay-text").textContent = overlay || "";
}

function askSave(m) {
  $("save-text").textContent = `${m.steps ?? m.step} steps, return ${fmt(m.return)}.`;
  // the study asks whether the player succeeded: Succeeded (S) / Failed (F) save with it,
  // Skip (Enter) saves without an answer
  const ask = Boolean(m.ask_outcome);
  $("save-outcome").hidden = !ask;
  $("save-question").textContent = ask ? "Did you succeed? Your answer is saved with the episode." : "Save this episode?";
  $("save-yes-label").textContent = ask ? "Skip" : "Save";
  $("save-dialog").dataset.ask = ask ? "true" : "false";
  if (!$("save-dialog").open) $("save-dialog").showModal();
  $("save-yes").focus();
}

/* --- episodes: start, the ready gate, pause, cancel ------------------------------------ */
function startEpisode(envId = state.env) {
  if (state.phase !== "idle") return;
  $("after-save").hidden = true; playMessage("");
  setPhase("starting");
  // balanced studies: the server picks the environment
  send(isParticipant() && balanced() ? { type: "start" } : { type: "start", env_id: envId });
}

/** The first frame is on screen; nothing steps until the player says go. */
function readyGate() {
  setPhase("ready");
  $("screen").focus();
}

function clearCountdown() { clearTimeout(state.countdown); state.countdown = null; }

function go() {
  if (state.phase !== "ready") return;
  const env = state.envs[state.env];
  let left = state.countdownS ?? ((env && env.mode === "async" && env.countdown_s) || 0);
  const tick = () => {
    if (state.phase !== "countdown" && state.phase !== "ready") return;
    if (left <= 0) { send({ type: "go" }); setPhase("playing"); $("screen").focus(); return; }
    setPhase("countdown", String(left));
    left -= 1;
    state.countdown = setTimeout(tick, 1000);
  };
  tick();
}

function togglePause() {
  if (state.phase === "playing") { releaseAll(true); send({ type: "pause" }); }
  else if (state.phase === "paused") send({ type: "resume" });
}
/** Delete (or the button) asks first, pausing the game meanwhile; Delete again or Enter
 *  cancels, Esc goes back (resuming what was playing). */
function cancelEpisode() {
  if (state.phase !== "playing" && state.phase !== "paused") return;
  if (state.askingCancel) { confirmCancel(); return; }
  state.askingCancel = { resume: state.phase === "playing" };
  if (state.phase === "playing") { releaseAll(true); send({ type: "pause" }); }
  $("cancel-ask").hidden = false;
  $("screen").focus(); // its keys: Delete / Enter / Esc
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
  if (resume) send({ type: "resume" });
  $("screen").focus();
}
/** The keys while the cancel question is on screen: all of them go to it. */
function answerCancel(e) {
  if (!state.askingCancel) return false;
  if (e.code === "Delete" || e.code === "Enter" || e.code === "NumpadEnter") confirmCancel();
  else if (e.code === "Escape") keepPlaying();
  return true;
}
function primaryAction() {
  if (state.phase === "ready") go();
  else if (state.phase === "idle" && !$("after-save").hidden) goNext();
  else if (state.phase === "idle") startEpisode();
}

const input = createInput(state, send, { primary: primaryAction, go, togglePause, cancel: cancelEpisode,
  blocked: () => $("save-dialog").open || $("instructions-dialog").open, answer: answerCancel });
const { mode, sendInput, releaseAll, onKeyDown, onKeyUp } = input;

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
    if (e.target === canvas || $("play-view").hidden || $("save-dialog").open || $("instructions-dialog").open) return;
    if (["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(e.target.tagName)) return;
    onKeyDown(e);
  });
  $("start-btn").addEventListener("click", primaryAction);
  $("next-btn").addEventListener("click", goNext);
  $("pause-btn").addEventListener("click", togglePause);
  $("cancel-btn").addEventListener("click", cancelEpisode);
  $("cancel-yes").addEventListener("click", confirmCancel);
  $("cancel-no").addEventListener("click", keepPlaying);
  $("other-env-btn").addEventListener("click", () => { $("after-save").hidden = true; renderLobby(); show("lobby-view"); });
  const endSession = () => { state.closing = true; send({ type: "end_session" }); finish("Your session has ended. You can close this page."); };
  $("end-btn").addEventListener("click", endSession);
  $("lobby-end").addEventListener("click", endSession);
  $("lobby-finish").addEventListener("click", finishStudy);
  for (const id of ["lobby-instructions", "play-instructions"]) {
    $(id).addEventListener("click", () => crowd.openInstructions(state.study.instructions_html));
  }
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
  $("save-dialog").addEventListener("keydown", (e) => {
    if ($("save-dialog").dataset.ask !== "true" || e.repeat || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.code === "KeyS") { e.preventDefault(); answer(true, "success"); }
    else if (e.code === "KeyF") { e.preventDefault(); answer(true, "failure"); }
  });
  $("save-dialog").addEventListener("cancel", (e) => e.preventDefault()); // an answer is needed
  $("speed").addEventListener("change", (e) => send({ type: "set_speed", speed: Number(e.target.value) }));
  $("quality").addEventListener("change", (e) => send({ type: "set_quality", quality: e.target.value }));
  $("camera").addEventListener("change", (e) => send({ type: "set_camera", camera: e.target.value }));
  $("fullscreen-btn").addEventListener("click", () => {
    if (document.fullscreenElement) document.exitFullscreen(); else $("stage").requestFullscreen().then(() => canvas.focus());
  });
  document.addEventListener("fullscreenchange", () => requestAnimationFrame(fit));
  window.addEventListener("resize", fit);
  window.addEventListener("gamepadconnected", () => {}); // some browsers expose pads only to listeners
  input.pollGamepad();
}

wire();
boot();
