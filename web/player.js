/* RLDS Studio player: joins a study, opens the play socket (docs/protocol.md), draws
   JPEG frames on a canvas, sends keyboard and gamepad input, and acks every frame drawn. */
"use strict";

const PROTOCOL = 1;
const SUBPROTOCOL = "rlds-studio";
const HEADER_BYTES = 24; // episode u32, step u32, server ms f64, return f64 (big-endian)
const PLAYER_KEYS = { start: "Enter", pause: "Escape", cancel: "Delete" };
const GAMEPAD_POLL_MS = 4; // while a gamepad is connected
const GAMEPAD_SEARCH_MS = 250; // looking for one
const $ = (id) => document.getElementById(id);
const now = () => performance.timeOrigin + performance.now();
const params = new URLSearchParams(location.search);

const state = {
  ws: null, sessionId: null, ticket: null, study: null, envs: {}, env: null, info: null,
  phase: "idle", episode: null, step: -1, shownEpisode: 0, lastEnv: null,
  held: [], boundKeys: new Set(), deadzone: 0.15,
  pad: { index: null, buttons: {}, axes: [], signature: "" },
  decoding: false, pending: null, drawnTimes: [], ended: false, retries: 0, closing: false,
  resendTimer: null,
};

/* --- small helpers ------------------------------------------------------------------- */
function show(view) {
  for (const id of ["join-view", "lobby-view", "play-view", "done-view"]) $(id).hidden = id !== view;
}
function pageError(text) { const el = $("page-error"); el.textContent = text; el.hidden = !text; }
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
function storageKey() { return `rlds-player:${params.get("token") || "study-" + params.get("study")}`; }
function remember() {
  sessionStorage.setItem(storageKey(), JSON.stringify({ ticket: state.ticket, session: state.sessionId }));
}
function recall() {
  try { return JSON.parse(sessionStorage.getItem(storageKey()) || "{}"); } catch { return {}; }
}

/* --- entry --------------------------------------------------------------------------- */
async function boot() {
  if (params.get("token")) {
    $("join-form").addEventListener("submit", join);
    const saved = recall();
    state.sessionId = saved.session || null; // kept across a new join: the session resumes
    if (saved.ticket) { state.ticket = saved.ticket; connect(); return; }
    askToJoin("");
  } else if (params.get("study")) {
    state.sessionId = recall().session || null;
    connect();
  } else {
    pageError("This page needs a study link (…/player.html?token=…) from the study's designer.");
  }
}

function askToJoin(text) {
  show("join-view");
  pageError(text);
  $("participant-id").focus();
}

async function join(event) {
  event.preventDefault();
  const id = $("participant-id").value.trim();
  if (!id) { pageError("Please enter your participant ID."); return; }
  $("join-btn").disabled = true;
  try {
    let res;
    try {
      res = await fetch("/api/play/join", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token: params.get("token"), participant_id: id }),
      });
    } catch { pageError("The server cannot be reached. Try again in a moment."); return; }
    const body = await res.json();
    if (!res.ok) {
      const first = Array.isArray(body.detail) ? body.detail[0] : null;
      const detail = typeof body.detail === "string" ? body.detail
        : first && first.type === "value_error" ? first.msg.replace(/^Value error, /, "")
        : "Check your participant ID: letters, digits and . _ @ : + - only.";
      pageError(detail);
      return;
    }
    pageError("");
    state.ticket = body.ticket;
    remember();
    connect();
  } finally { $("join-btn").disabled = false; }
}

/* --- the socket ------------------------------------------------------------------------ */
/* A participant's ticket rides in the Sec-WebSocket-Protocol header, not in the URL, which
   access logs and browser history keep (docs/protocol.md). */
function connect() {
  const q = new URLSearchParams();
  if (!state.ticket) q.set("study", params.get("study"));
  if (state.sessionId) q.set("session", state.sessionId);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const protocols = state.ticket ? [SUBPROTOCOL, `ticket.${state.ticket}`] : [SUBPROTOCOL];
  const ws = new WebSocket(`${scheme}://${location.host}/ws/play?${q}`, protocols);
  ws.binaryType = "arraybuffer";
  let opened = false;
  ws.onopen = () => { opened = true; state.retries = 0; };
  ws.onmessage = (ev) => (typeof ev.data === "string" ? onControl(JSON.parse(ev.data)) : onFrame(ev.data));
  ws.onclose = (ev) => onClose(ev, opened);
  state.ws = ws;
}

function onClose(ev, opened) {
  state.ws = null;
  if (state.closing || ev.code === 4001) { finish("Your session has ended. You can close this page."); return; }
  if (ev.code === 4000) { pageError("This session was opened in another tab."); return; }
  if (!opened && state.retries === 0) {
    // refused on arrival: the session may be over (start a new one), or else the ticket
    if (state.sessionId) { state.sessionId = null; remember(); connect(); return; }
    if (state.ticket) { // expired, or the study's link was replaced: join again
      state.ticket = null; remember();
      askToJoin("Your entry has expired. Enter your participant ID again to go on.");
      return;
    }
    pageError("You cannot test-play this study: log in as one of its designers first.");
    return;
  }
  if (ev.code === 1008) { pageError(`Disconnected: ${ev.reason || "policy violation"}.`); return; }
  if (!opened && state.ticket && state.retries >= 3) { // the ticket may have expired meanwhile
    state.ticket = null; remember(); state.retries = 0; playMessage("");
    askToJoin("The connection could not be restored. Enter your participant ID again to go on.");
    return;
  }
  state.retries++;
  playMessage("Connection lost — reconnecting…");
  setTimeout(connect, Math.min(1000 * state.retries, 5000));
}

function finish(text) { $("done-text").textContent = text; show("done-view"); sessionStorage.removeItem(storageKey()); }

const handlers = {
  hello(m) {
    if (m.protocol !== PROTOCOL) { pageError(`The server speaks protocol ${m.protocol}; reload the page.`); return; }
    state.sessionId = m.session_id;
    remember();
    state.study = m.study;
    state.envs = Object.fromEntries(m.study.environments.map((e) => [e.id, e]));
    $("brand-name").textContent = m.study.name;
    document.title = `${m.study.name} — RLDS Studio`;
    renderLobby();
    playMessage("");
    setPhase(m.phase);
    if (m.episode) {
      state.episode = m.episode; state.step = m.episode.step;
      enterPlay(m.episode.env_id);
      updateStatus({ step: m.episode.step, ret: m.episode.return });
    } else if (!m.resumed || !state.env) {
      show("lobby-view");
    }
  },
  env_ready(m) { state.info = m; if (state.envs[m.env_id]) enterPlay(m.env_id); renderControls(m); },
  episode_started(m) {
    state.episode = m.episode; state.step = 0; state.ended = false;
    $("after-save").hidden = true; playMessage("");
    setPhase("playing");
    $("screen").focus();
  },
  paused() { setPhase("paused"); },
  resumed() { setPhase("playing"); $("screen").focus(); },
  episode_ended(m) {
    setPhase("ended");
    releaseAll(false);
    $("save-text").textContent = `${m.steps} steps, return ${fmt(m.return)}.`;
    if (!$("save-dialog").open) $("save-dialog").showModal();
  },
  episode_saved(m) {
    if ($("save-dialog").open) $("save-dialog").close();
    setPhase("idle");
    state.episode = null;
    for (const [key, n] of Object.entries(m.completed || {})) if (state.envs[key]) state.envs[key].completed = n;
    renderLobby();
    const words = { completed: "Episode saved.", rejected: "Episode discarded.", canceled: "Episode canceled.",
      abandoned: "The episode was abandoned." };
    $("after-save-text").textContent = `${words[m.status] || m.status} ${m.steps} steps, return ${fmt(m.return)}.`;
    $("after-save").hidden = false;
    $("next-btn").focus();
  },
  episode_failed(m) { setPhase("idle"); state.episode = null; playMessage(m.message); $("after-save").hidden = false;
    $("after-save-text").textContent = "The environment failed; this episode is kept as failed."; },
  setting(m) {
    if (m.speed !== undefined) $("speed").value = String(m.speed);
    if (m.quality !== undefined) $("quality").value = m.quality;
    if (m.camera !== undefined) $("camera").value = m.camera;
  },
  stats(m) { $("st-latency").textContent = m.latency_ms == null ? "–" : `${Math.round(m.latency_ms)} ms`; },
  session_ended() { state.closing = true; },
  error(m) {
    if (m.for === "input" && m.code === "wrong_state") return; // a key in flight as the state changed
    if (m.for === "input" && m.code === "rate_limited" && mode() === "async") {
      // the server still holds an older input: send the current one once the limit allows
      clearTimeout(state.resendTimer);
      state.resendTimer = setTimeout(() => { if (state.phase === "playing") sendInput(); }, 100);
      return;
    }
    if (m.for === "start" && state.phase === "starting") setPhase("idle");
    playMessage(`${m.message}`);
  },
  pong() {},
};

function onControl(m) { const h = handlers[m.type]; if (h) h(m); }

/* --- frames -------------------------------------------------------------------------- */
function onFrame(buffer) {
  const view = new DataView(buffer);
  const frame = { episode: view.getUint32(0), step: view.getUint32(4), ret: view.getFloat64(16),
    jpeg: new Uint8Array(buffer, HEADER_BYTES) };
  state.pending = frame; // only the newest waiting frame is decoded
  if (!state.decoding) decodeNext();
}

async function decodeNext() {
  const frame = state.pending;
  if (!frame) return;
  state.pending = null;
  state.decoding = true;
  try {
    const image = await decodeJpeg(frame.jpeg);
    draw(image);
    image.close();
    const drawn = now();
    send({ type: "ack", episode: frame.episode, step: frame.step, drawn_ms: drawn });
    state.shownEpisode = frame.episode;
    state.step = frame.step;
    countFrame(drawn);
    updateStatus({ episode: frame.episode, step: frame.step, ret: frame.ret });
  } catch (err) {
    console.warn("frame not drawn", err);
  } finally {
    state.decoding = false;
    if (state.pending) decodeNext();
  }
}

/* WebCodecs' ImageDecoder decodes a small JPEG in about a quarter of createImageBitmap's time
   in Chromium (0.4 vs 1.5 ms); it exists only in secure contexts (https, localhost). */
async function decodeJpeg(bytes) {
  if (!window.ImageDecoder) return createImageBitmap(new Blob([bytes], { type: "image/jpeg" }));
  const decoder = new ImageDecoder({ data: bytes, type: "image/jpeg" });
  try {
    return (await decoder.decode()).image; // a VideoFrame
  } finally {
    decoder.close();
  }
}

function draw(image) {
  const canvas = $("screen");
  const width = image.displayWidth ?? image.width, height = image.displayHeight ?? image.height;
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width; canvas.height = height; fit();
  }
  canvas.getContext("2d").drawImage(image, 0, 0);
  canvas.dataset.frames = String(Number(canvas.dataset.frames || 0) + 1);
}

function fit() {
  const canvas = $("screen"), stage = $("stage");
  const scale = Math.min(stage.clientWidth / canvas.width, stage.clientHeight / canvas.height);
  canvas.style.width = `${Math.floor(canvas.width * scale)}px`;
  canvas.style.height = `${Math.floor(canvas.height * scale)}px`;
}

function countFrame(t) {
  state.drawnTimes.push(t);
  while (state.drawnTimes.length && state.drawnTimes[0] < t - 1000) state.drawnTimes.shift();
}

function fmt(x) { return Number.isInteger(x) ? String(x) : Number(x).toFixed(2); }
function updateStatus({ episode, step, ret }) {
  if (episode !== undefined) $("st-episode").textContent = episode;
  if (step !== undefined) $("st-step").textContent = step;
  if (ret !== undefined) $("st-return").textContent = fmt(ret);
}
setInterval(() => {
  const t = now();
  $("st-fps").textContent = state.drawnTimes.filter((x) => x > t - 1000).length;
}, 500);

/* --- views ------------------------------------------------------------------------- */
function renderLobby() {
  const s = state.study;
  $("study-name").textContent = s.name;
  $("study-instructions").innerHTML = s.instructions_html; // rendered server-side, HTML disabled
  $("study-instructions-side").innerHTML = s.instructions_html;
  const list = $("env-list");
  list.replaceChildren();
  for (const env of Object.values(state.envs)) {
    const li = document.createElement("li");
    const text = document.createElement("div");
    const name = document.createElement("strong");
    name.textContent = env.name;
    const meta = document.createElement("div");
    meta.className = "env-meta";
    meta.textContent = `${env.mode === "sync" ? "turn by turn" : `real time, ${env.fps} fps`} · ` +
      `${env.completed} of ${env.episodes_per_participant} episodes done`;
    text.append(name, meta);
    const button = document.createElement("button");
    button.type = "button"; button.className = "btn btn-primary"; button.textContent = `Play ${env.name}`;
    button.dataset.env = env.id;
    button.addEventListener("click", () => { enterPlay(env.id); startEpisode(); });
    li.append(text, button);
    list.append(li);
  }
}

function enterPlay(envId) {
  const env = state.envs[envId];
  state.env = envId;
  $("env-name").textContent = env.name;
  $("env-instructions").innerHTML = env.instructions_html || "<p class=\"muted\">No extra instructions.</p>";
  $("speed-field").hidden = env.mode !== "async";
  show("play-view");
  requestAnimationFrame(fit);
}

function renderControls(info) {
  const body = $("legend").tBodies[0];
  body.replaceChildren();
  for (const row of info.controls.legend) {
    const tr = document.createElement("tr");
    const a = document.createElement("td"); const b = document.createElement("td");
    a.textContent = row.input; b.textContent = row.label;
    tr.append(a, b); body.append(tr);
  }
  state.boundKeys = new Set(info.controls.keys);
  state.deadzone = info.controls.deadzone;
  $("quality").value = info.quality;
  $("speed").value = String(info.speed);
  const cams = info.cameras || [];
  $("camera-field").hidden = cams.length < 2;
  $("camera").replaceChildren(...cams.map((c) => new Option(c, c, false, c === info.camera)));
}

function setPhase(phase) {
  state.phase = phase;
  $("st-phase").textContent = phase;
  const active = phase === "playing" || phase === "paused";
  $("pause-btn").disabled = !active;
  $("cancel-btn").disabled = !active;
  $("start-btn").disabled = phase !== "idle";
  $("pause-btn").firstChild.textContent = phase === "paused" ? "Resume " : "Pause ";
  const overlay = { paused: "Paused — press Esc or Resume to continue", idle: "Press Enter to start",
    starting: "Starting…", ended: "Episode over" }[phase];
  $("overlay").hidden = !overlay;
  $("overlay-text").textContent = overlay || "";
}

function startEpisode() {
  if (state.phase !== "idle" || !state.env) return;
  $("after-save").hidden = true; playMessage("");
  setPhase("starting");
  send({ type: "start", env_id: state.env });
}
function togglePause() {
  if (state.phase === "playing") { releaseAll(true); send({ type: "pause" }); }
  else if (state.phase === "paused") send({ type: "resume" });
}
function cancelEpisode() { if (state.phase === "playing" || state.phase === "paused") send({ type: "cancel" }); }

/* --- input ----------------------------------------------------------------------------- */
function mode() { return state.env ? state.envs[state.env].mode : "sync"; }
function sendInput() {
  const pad = state.pad;
  send({ type: "input", keys: [...state.held], buttons: pad.buttons, axes: pad.axes,
    client_ms: now(), seen_step: state.step });
}
function releaseAll(notify) {
  const had = state.held.length > 0;
  state.held = [];
  if (notify && had && mode() === "async" && state.phase === "playing") sendInput();
}

function onKeyDown(e) {
  if (e.code === PLAYER_KEYS.start && state.phase === "idle" && !$("save-dialog").open) { e.preventDefault(); startEpisode(); return; }
  if (e.code === PLAYER_KEYS.pause) { e.preventDefault(); togglePause(); return; }
  if (e.code === PLAYER_KEYS.cancel) { e.preventDefault(); cancelEpisode(); return; }
  if (!state.boundKeys.has(e.code)) return;
  e.preventDefault();
  if (e.repeat || state.phase !== "playing") return;
  state.held = state.held.filter((k) => k !== e.code).concat(e.code);
  sendInput(); // sync: one step per key press; async: the held set changed
}
function onKeyUp(e) {
  if (!state.held.includes(e.code)) return;
  e.preventDefault();
  state.held = state.held.filter((k) => k !== e.code);
  if (mode() === "async" && state.phase === "playing") sendInput();
}

function pollGamepad() {
  const pads = navigator.getGamepads ? [...navigator.getGamepads()].filter(Boolean) : [];
  const pad = pads[0];
  const status = $("gamepad-status");
  if (!pad) {
    if (status.dataset.connected === "true") { status.dataset.connected = "false"; status.textContent = "No gamepad"; }
    state.pad = { index: null, buttons: {}, axes: [], signature: "" };
  } else {
    if (status.dataset.connected !== "true") { status.dataset.connected = "true"; status.textContent = `Gamepad: ${pad.id}`; }
    readPad(pad);
  }
  // Timers, not requestAnimationFrame: a rAF loop keeps the page painting, and Chromium then
  // holds back the frame that answers a key press until the next paint (8 ms on average).
  setTimeout(pollGamepad, pad ? GAMEPAD_POLL_MS : GAMEPAD_SEARCH_MS);
}

function readPad(pad) {
  const buttons = {};
  pad.buttons.forEach((b, i) => { const v = typeof b === "number" ? b : b.value || (b.pressed ? 1 : 0); if (v > 0.05) buttons[i] = Math.round(v * 100) / 100; });
  const axes = [...pad.axes].map((v) => (Math.abs(v) < state.deadzone ? 0 : Math.round(v * 100) / 100));
  const signature = JSON.stringify([buttons, axes]);
  $("gamepad-status").dataset.buttons = Object.keys(buttons).join(",");
  const before = state.pad;
  state.pad = { index: pad.index, buttons, axes, signature };
  if (signature === before.signature || state.phase !== "playing") return;
  if (mode() === "async") { sendInput(); return; }
  // sync: a step per newly pressed button or axis pushed past the dead zone
  const pressed = Object.keys(buttons).some((i) => buttons[i] > 0.5 && !(before.buttons[i] > 0.5));
  const pushed = axes.some((v, i) => v !== 0 && !before.axes[i]);
  if (pressed || pushed) sendInput();
}

/* --- wiring ------------------------------------------------------------------------- */
function wire() {
  const canvas = $("screen");
  canvas.addEventListener("keydown", onKeyDown);
  canvas.addEventListener("keyup", onKeyUp);
  canvas.addEventListener("click", () => canvas.focus());
  canvas.addEventListener("focus", () => { $("stage").dataset.focused = "true"; });
  canvas.addEventListener("blur", () => { $("stage").dataset.focused = "false"; releaseAll(true); });
  document.addEventListener("keydown", (e) => {
    if (e.target === canvas || $("play-view").hidden || $("save-dialog").open) return;
    if (["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName)) return;
    if (e.code === PLAYER_KEYS.start && state.phase === "idle" && e.target.tagName !== "BUTTON") { e.preventDefault(); startEpisode(); }
    if (e.code === PLAYER_KEYS.pause) { e.preventDefault(); togglePause(); }
    if (e.code === PLAYER_KEYS.cancel) { e.preventDefault(); cancelEpisode(); }
  });
  $("start-btn").addEventListener("click", startEpisode);
  $("next-btn").addEventListener("click", startEpisode);
  $("pause-btn").addEventListener("click", togglePause);
  $("cancel-btn").addEventListener("click", cancelEpisode);
  $("other-env-btn").addEventListener("click", () => { $("after-save").hidden = true; show("lobby-view"); });
  const endSession = () => { state.closing = true; send({ type: "end_session" }); };
  $("end-btn").addEventListener("click", endSession);
  $("lobby-end").addEventListener("click", endSession);
  $("save-yes").addEventListener("click", () => send({ type: "save", keep: true }));
  $("save-no").addEventListener("click", () => send({ type: "save", keep: false }));
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
  pollGamepad();
}

wire();
boot();
