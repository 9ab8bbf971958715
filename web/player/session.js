/* The player's shared state and small helpers: the study link's parameters, what this
   browser keeps in sessionStorage, the socket's send, and ``flow`` — the steps the player's
   modules call across one another (entry.js: boot, useStudy, route, finishStudy, refusedStart;
   socket.js: connect; player.js: the screens and the episode's phases). */
import * as crowd from "./crowd.js";
import * as preview from "./preview.js";

export const $ = (id) => document.getElementById(id);
export const params = new URLSearchParams(location.search);
export const token = params.get("token");
export const previewId = preview.previewOf(params); // a designer's preview as a participant
export const link = token || (previewId && `preview-${previewId}`); // names what this browser keeps

/** Each module adds the steps it owns (none imports another's: they call each other). */
export const flow = {};

export const state = {
  ws: null, sessionId: null, ticket: null, study: null, envs: {}, env: null, info: null,
  participant: null, phase: "idle", episode: null, step: -1, next: null,
  held: [], boundKeys: new Set(), deadzone: 0.15,
  devices: {}, devicesBound: new Set(), // devices' axes ({mouse: [...]}); devices the study binds
  pad: { index: null, buttons: {}, axes: [], signature: "" },
  retries: 0, closing: false, takeover: false, resendTimer: null, countdown: null, refused: null,
  countdownS: null,
  lanes: [], // more sockets carrying frames in turn (docs/protocol.md, "Lanes")
  inputSeq: 0, // numbers each input: with lanes it goes twice, the server keeps the first
};

export const show = crowd.show;
export function playMessage(text, ok = false) {
  const el = $("play-message");
  el.textContent = text || "";
  el.hidden = !text;
  el.classList.toggle("alert-error", !ok);
  el.classList.toggle("alert-ok", ok);
}
export function send(message) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
  const text = JSON.stringify(message);
  state.ws.send(text);
  // an async game's input goes on every lane too: a retransmission stall on one socket (or
  // two) then delays neither the input nor the frames that show it
  const env = state.envs[state.env];
  if (message.type !== "input" || !env || env.mode !== "async") return;
  for (const lane of state.lanes) if (lane.readyState === WebSocket.OPEN) lane.send(text);
}
/** Send over ``socket`` if it is one of the page's open lanes, else over the play socket. */
export function sendOn(socket, message) {
  if (socket && socket !== state.ws && state.lanes.includes(socket) && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify(message));
  } else {
    send(message);
  }
}
export function closeLanes() {
  for (const lane of state.lanes) lane.close(1000);
  state.lanes = [];
}
export function storageKey() { return `rlds-player:${link || "study-" + params.get("study")}`; }
export function recall() {
  try { return JSON.parse(sessionStorage.getItem(storageKey()) || "{}"); } catch { return {}; }
}
export function remember(extra = {}) {
  sessionStorage.setItem(storageKey(), JSON.stringify({ ...recall(),
    ticket: state.ticket, session: state.sessionId, ...extra }));
}
export function forgetTicket() { state.ticket = null; state.sessionId = null; remember(); }
export const isParticipant = () => state.participant !== null;
export const balanced = () => Boolean(state.study && state.study.assignment === "balanced");

/** Leave the game for a screen of its own: this tab's socket is closed on purpose. */
export function stopPlaying() {
  state.closing = true;
  if (state.ws) state.ws.close(1000);
  state.ws = null;
  closeLanes();
  for (const id of ["save-dialog", "instructions-dialog"]) if ($(id).open) $(id).close();
}

export function finish(text) { $("done-text").textContent = text; show("done-view"); sessionStorage.removeItem(storageKey()); }
