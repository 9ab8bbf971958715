/* The player's input: keyboard and gamepad to `input` messages (one step per press in sync
   mode, the held set in async mode), plus the player's own keys (start, pause, cancel). */
import { now, readPad } from "./stage.js";

export const PLAYER_KEYS = { start: "Enter", pause: "Escape", cancel: "Delete", camera: "KeyC" };
const GAMEPAD_POLL_MS = 4; // while a gamepad is connected
const GAMEPAD_SEARCH_MS = 250; // looking for one
const $ = (id) => document.getElementById(id);

/** Input for the page's ``state``; ``act`` = {primary, go, togglePause, cancel, blocked,
 *  answer(e): true when a question on screen took the key, nextCamera(): true when it
 *  switched the view}. */
export function createInput(state, send, act) {
  function mode() { return state.env && state.envs[state.env] ? state.envs[state.env].mode : "sync"; }
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
    if (act.blocked()) return;
    if (act.answer(e)) { e.preventDefault(); return; } // a question on screen takes the keys
    if (e.code === PLAYER_KEYS.start && (state.phase === "idle" || state.phase === "ready")) { e.preventDefault(); act.primary(); return; }
    if (e.code === PLAYER_KEYS.pause) { e.preventDefault(); act.togglePause(); return; }
    if (e.code === PLAYER_KEYS.cancel) { e.preventDefault(); act.cancel(); return; }
    // the camera key, unless the game binds it (the game's keys come first)
    if (e.code === PLAYER_KEYS.camera && !state.boundKeys.has(e.code) && !e.repeat && act.nextCamera()) { e.preventDefault(); return; }
    if (!state.boundKeys.has(e.code)) return;
    e.preventDefault();
    if (!e.repeat) press([e.code]);
  }
  function onKeyUp(e) { if (release([e.code])) e.preventDefault(); }
  /** Bound keys go down (a key press, or a tap on an on-screen button: the same input). */
  function press(codes) {
    if (state.phase === "ready") { act.go(); return; } // this key only starts the episode
    if (state.phase !== "playing") return;
    state.held = state.held.filter((k) => !codes.includes(k)).concat(codes);
    sendInput(); // sync: one step per key press; async: the held set changed
  }
  /** Keys come up; false when none of them was held. */
  function release(codes) {
    if (!codes.some((k) => state.held.includes(k))) return false;
    state.held = state.held.filter((k) => !codes.includes(k));
    if (mode() === "async" && state.phase === "playing") sendInput();
    return true;
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
      onPad(readPad(pad, state.deadzone));
    }
    // Timers, not requestAnimationFrame: a rAF loop keeps the page painting, and Chromium then
    // holds back the frame that answers a key press until the next paint (8 ms on average).
    setTimeout(pollGamepad, pad ? GAMEPAD_POLL_MS : GAMEPAD_SEARCH_MS);
  }

  function onPad(next) {
    $("gamepad-status").dataset.buttons = Object.keys(next.buttons).join(",");
    const before = state.pad;
    state.pad = next;
    if (next.signature === before.signature) return;
    const pressed = Object.keys(next.buttons).filter((i) => next.buttons[i] > 0.5 && !(before.buttons[i] > 0.5));
    if (state.phase === "ready" && pressed.includes("0")) { act.go(); return; } // gamepad A
    if (state.phase !== "playing") return;
    if (mode() === "async") { sendInput(); return; }
    // sync: a step per newly pressed button or axis pushed past the dead zone
    const pushed = next.axes.some((v, i) => v !== 0 && !before.axes[i]);
    if (pressed.length || pushed) sendInput();
  }

  return { mode, sendInput, releaseAll, onKeyDown, onKeyUp, press, release, pollGamepad };
}
