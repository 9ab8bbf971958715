/* The play socket (docs/protocol.md): connect with the ticket, reconnect or explain a close,
   and the server's control messages, each handled by moving the screens along; frames are
   binary and go to the stage. */
import * as crowd from "./crowd.js";
import { phoneHandlers } from "./phone.js";
import * as narrate from "./narrate.js";
import * as questions from "./questions.js";
import { showTask } from "./task.js";
import { renderTouch } from "./touch.js";
import * as views from "./views.js";
import { fmt, now, onFrame, onFrameDrawn, onFrameSkipped, policyStopped, resetFrames, stepsTaken, updateStatus } from "./stage.js";
import { $, closeLanes, finish, flow, forgetTicket, isParticipant, params, playMessage, remember, send, sendOn, state, stopPlaying } from "./session.js";

const PROTOCOL = 1;
const SUBPROTOCOL = "rlds-studio";

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
  ws.onmessage = (ev) => { if (state.ws === ws) (typeof ev.data === "string" ? onControl(JSON.parse(ev.data)) : onFrame(ev.data, ws)); };
  ws.onclose = (ev) => { if (state.ws === ws) onClose(ev, opened); };
  state.ws = ws;
}

/* Lanes: more sockets the server sends frames over in turn (its hello offers them). A lane
   only receives frames (and sends their acks and a copy of each input); the play socket
   stays the session's. */
function openLanes(offer) {
  closeLanes();
  if (!offer || !offer.count) return;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  for (let i = 0; i < offer.count; i++) {
    const lane = new WebSocket(`${scheme}://${location.host}/ws/play?lane=${encodeURIComponent(offer.key)}`, [SUBPROTOCOL]);
    lane.binaryType = "arraybuffer";
    lane.onmessage = (ev) => { if (typeof ev.data !== "string" && state.lanes.includes(lane)) onFrame(ev.data, lane); };
    state.lanes.push(lane);
  }
}

function takeOver() { state.takeover = true; state.sessionId = null; connect(); }

/** "Continue here": a question too (a key held for the game does not move the study). */
function askTakeOver(title, text) {
  crowd.showStatus({ title, text, button: { label: "Continue here", onClick: takeOver } });
  const view = $("status-view");
  questions.ask(view, { keys: questions.enterAnswers(view, () => $("status-btn")), scope: questions.pageKeys(view) });
}

function onClose(ev, opened) {
  state.ws = null;
  closeLanes();
  flow.clearCountdown();
  if (ev.code === 4002) {
    askTakeOver("This study is open in another tab",
      "You can take part in one tab or window at a time. Continue here to move your study to this tab (the other one will stop).");
    return;
  }
  if (ev.code === 4000) {
    stopPlaying();
    askTakeOver("Continued in another tab",
      "This study was opened in another tab or window, so it stopped here. Nothing you did is lost.");
    return;
  }
  if (state.closing) return;
  if (ev.code === 4001) {
    if (!isParticipant()) { finish("Your session has ended. You can close this page."); return; }
    crowd.showStatus({ title: "Your session has ended", text: "You can go on where you left off.",
      button: { label: "Continue", onClick: flow.boot } });
    return;
  }
  if (!opened && state.retries === 0) {
    // refused on arrival: the session may be over (start a new one), or else the ticket
    if (state.sessionId) { state.sessionId = null; remember(); connect(); return; }
    if (state.ticket) { forgetTicket(); flow.boot(); return; } // expired, replaced link, study paused
    crowd.pageError("You cannot test-play this study: log in as one of its designers first.");
    return;
  }
  if (ev.code === 1008) { crowd.showUnreachable(`Disconnected: ${ev.reason || "policy violation"}.`, flow.boot); return; }
  if (!opened && state.ticket && state.retries >= 3) { forgetTicket(); state.retries = 0; flow.boot(); return; }
  state.retries++;
  playMessage("Connection lost — reconnecting…");
  setTimeout(connect, Math.min(1000 * state.retries, 5000));
}

const handlers = {
  hello(m) {
    if (m.protocol !== PROTOCOL) { crowd.pageError(`The server speaks protocol ${m.protocol}; reload the page.`); return; }
    state.sessionId = m.session_id;
    state.takeover = false;
    remember();
    resetFrames(); // frame order starts again with this connection
    openLanes(m.lanes);
    flow.useStudy(m.study);
    phoneHandlers.phone_study(m.study);
    if (m.participant !== undefined) state.participant = m.participant;
    playMessage("");
    flow.resetPause(); // the phase below is the server's: nothing is asked of it yet
    flow.setPhase(m.phase);
    showTask(m.episode && m.episode.task); // a reload mid-episode shows its task again
    if (m.episode) {
      state.episode = m.episode; state.step = m.episode.step;
      flow.enterPlay(m.episode.env_id);
      updateStatus({ step: m.episode.step, ret: m.episode.return });
      if (m.phase === "ended") flow.askSave(m.episode);
      if (m.phase === "ready" || m.episode.ready_gate) flow.readyGate();
    } else if (!m.resumed || $("play-view").hidden) {
      flow.afterHello(); // a reconnect in the middle of the play view keeps its screen
    }
  },
  env_ready(m) {
    state.info = m;
    // a resumed session re-announces its worker: move to the game only when one is starting
    if (state.envs[m.env_id] && (state.phase !== "idle" || state.episode)) flow.enterPlay(m.env_id);
    views.renderControls(state, m);
    renderTouch(state, m.controls, flow.input);
    flow.renderDevices(m.controls);
  },
  episode_started(m) {
    state.episode = m.episode; state.step = 0; state.next = null;
    policyStopped(""); // a new episode: the policy drives again
    if (m.episode.env_id && state.envs[m.episode.env_id]) flow.enterPlay(m.episode.env_id);
    showTask(m.episode.task);
    $("after-save").hidden = true; playMessage("");
    $("screen").focus();
    state.countdownS = m.countdown_s || 0;
    if (m.ready_gate) flow.readyGate(); else flow.setPhase("playing");
  },
  started() { if (state.phase === "countdown" || state.phase === "ready") flow.setPhase("playing"); },
  paused() { flow.pauseAnswered("paused"); }, // also the answer to a second pause
  resumed() { flow.pauseAnswered("playing"); },
  episode_ended(m) { flow.setPhase("ended"); flow.input.releaseAll(false); flow.askSave(m); },
  episode_saved(m) {
    if ($("save-dialog").open) $("save-dialog").close();
    playMessage("");
    flow.setPhase("idle");
    state.episode = null;
    showTask(null);
    if (m.participant) state.participant = m.participant;
    for (const [key, n] of Object.entries(m.completed || {})) if (state.envs[key]) state.envs[key].completed = n;
    const words = { completed: "Episode saved.", rejected: "Episode discarded.", canceled: "Episode canceled.",
      abandoned: "The episode was abandoned.", failed: "The game stopped." };
    const text = `${words[m.status] || m.status} ${stepsTaken(m)} steps, return ${fmt(m.return)}.`;
    // a study that asks for it: the participant narrates a saved episode, then goes on
    if (m.status === "completed" && narrate.asked(state)) narrate.open(m.episode_id, state.ticket, () => flow.showNext(m.next, text));
    else flow.showNext(m.next, text);
  },
  // the policy stopped for the rest of the episode: the badge says why; a designer also
  // reads the error itself
  policy_failed(m) { policyStopped(m.reason || "failed"); if (m.message) playMessage(m.message); },
  episode_failed(m) {
    flow.setPhase("idle"); state.episode = null; showTask(null);
    // the server words it plainly for a participant (the designer finds the details with the episode)
    playMessage(m.message);
    flow.showNext(m.next, isParticipant() ? "" : "The environment failed; this episode is kept as failed.");
  },
  setting(m) {
    if (m.speed !== undefined) $("speed").value = String(m.speed);
    if (m.quality !== undefined) {
      $("quality").value = m.quality;
      const fewer = m.stream_every > 1 ? ` (one frame in ${m.stream_every} shown)` : "";
      $("quality").title = m.adaptive ? `Adjusted to your connection${fewer}; choose another to change the most it may use` : "";
    }
    if (m.camera !== undefined) $("camera").value = m.camera;
  },
  stats(m) { $("st-latency").textContent = m.latency_ms == null ? "–" : `${Math.round(m.latency_ms)} ms`; },
  session_ended() { state.closing = !isParticipant(); },
  error(m) {
    if (m.for === "input" && m.code === "wrong_state") return; // a key in flight as the state changed
    if (m.code === "open_elsewhere") return; // the close (4002) that follows says it
    if (m.for === "end_episode") {
      flow.endRefused();
      if (m.code === "already_ended") return; // a second press: the save question is on its way
    }
    if (m.for === "pause" || m.for === "resume") {
      flow.pauseAnswered(null); // the episode ended or was left meanwhile: nothing to say
      if (m.code === "wrong_state") return;
    }
    if (m.for === "input" && m.code === "rate_limited" && flow.input.mode() === "async") {
      // the server still holds an older input: send the current one once the limit allows
      clearTimeout(state.resendTimer);
      state.resendTimer = setTimeout(() => { if (state.phase === "playing") flow.input.sendInput(); }, 100);
      return;
    }
    if (m.for === "start" && state.phase === "starting") {
      flow.setPhase("idle");
      if (m.code === "unknown_task") { playMessage(m.message); return; } // Start asks again
      if (isParticipant()) { flow.refusedStart(m); return; }
    }
    playMessage(`${m.message}`);
  },
  pong() {},
  phone_pairing: phoneHandlers.phone_pairing,
  phone: phoneHandlers.phone,
};

function onControl(m) { const h = handlers[m.type]; if (h) h(m); }

/* Each frame is acked over the socket it came on: that socket's frame window (server side)
   then follows that socket's own stalls, and a stall on the play socket holds up no lane. */
onFrameDrawn((frame, drawn) => {
  sendOn(frame.socket, { type: "ack", episode: frame.episode, step: frame.step, drawn_ms: drawn });
  state.step = frame.step;
});
onFrameSkipped((frame) => {
  if (!state.lanes.length) return; // one socket: the next frame's ack settles this one too
  sendOn(frame.socket, { type: "ack", episode: frame.episode, step: frame.step, drawn_ms: now(), skipped: true });
});

Object.assign(flow, { connect });
