/* The player's input: keyboard, gamepad and devices (mouse.js, spacemouse.js) to `input`
   messages (one step per press in sync mode, the held set in async mode), plus the player's
   own keys (start, pause, cancel, I'm done). Analog input (sticks, triggers, devices) is sent at most
   once per tick of the environment's control rate, whose clock applies the latest input. */
import { now, readPad } from "./stage.js";

export const PLAYER_KEYS = { start: "Enter", pause: "Escape", cancel: "Delete", camera: "KeyC", done: "KeyX" };
const GAMEPAD_POLL_MS = 4; // while a gamepad is connected
const GAMEPAD_SEARCH_MS = 250; // looking for one
const MAX_ANALOG_HZ = 100; // under the server's 120 inputs/s, keys included
const $ = (id) => document.getElementById(id);

/** Input for the page's ``state``; ``act`` = {primary, go, togglePause, cancel, blocked,
 *  answer(e): true when a question on screen took the key, nextCamera(): true when it
 *  switched the view, done(): true when it ended the episode ("I'm done")}. */
export function createInput(state, send, act) {
  function mode() { return state.env && state.envs[state.env] ? state.envs[state.env].mode : "sync"; }
  function sendInput() {
    const pad = state.pad;
    clearTimeout(soon); soon = null; lastSent = now();
    send({ type: "input", keys: [...state.held], buttons: pad.buttons, axes: pad.axes,
      devices: { ...state.devices }, client_ms: now(), seen_step: state.step, seq: ++state.inputSeq });
  }
  /** One tick of the environment's clock, in ms (its fps at the speed in force). */
  function period() {
    const env = state.envs[state.env];
    const hz = env && env.mode === "async" ? env.fps * (Number($("speed").value) || env.speed || 1) : 60;
    return 1000 / Math.min(Math.max(hz, 1), MAX_ANALOG_HZ);
  }
  let soon = null, lastSent = 0;
  /** Analog input changed: async, sent within a tick (sync: it rides on the next step). */
  function deviceChanged() {
    if (mode() !== "async" || state.phase !== "playing" || soon) return;
    const wait = lastSent + period() - now();
    if (wait <= 0) sendInput();
    else soon = setTimeout(() => { soon = null; if (state.phase === "playing") sendInput(); }, wait);
  }
  function releaseAll(notify) {
    const had = state.held.length > 0 || Object.keys(state.devices).length > 0;
    state.held = [];
    for (const device of devices) device.reset();
    if (notify && had && mode() === "async" && state.phase === "playing") sendInput();
  }

  function onKeyDown(e) {
    if (act.blocked()) return;
    if (act.answer(e)) { e.preventDefault(); return; } // a question on screen takes the keys
    if (e.code === PLAYER_KEYS.start && (state.phase === "idle" || state.phase === "ready")) { e.preventDefault(); act.primary(); return; }
    if (e.code === PLAYER_KEYS.pause) { e.preventDefault(); act.togglePause(); return; }
    if (e.code === PLAYER_KEYS.cancel) { e.preventDefault(); act.cancel(); return; }
    // the camera and "I'm done" keys, unless the game binds them (the game's keys come first)
    if (e.code === PLAYER_KEYS.camera && !state.boundKeys.has(e.code) && !e.repeat && act.nextCamera()) { e.preventDefault(); return; }
    if (e.code === PLAYER_KEYS.done && !state.boundKeys.has(e.code) && !e.repeat && act.done()) { e.preventDefault(); return; }
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
    const down = (pad, i) => pad.buttons[i] > 0.5;
    const pressed = Object.keys(next.buttons).filter((i) => down(next, i) && !down(before, i));
    if (state.phase === "ready" && pressed.includes("0")) { act.go(); return; } // gamepad A
    if (state.phase !== "playing") return;
    const pushed = next.axes.some((v, i) => v !== 0 && !before.axes[i]);
    if (mode() === "async") {
      // a button or stick going on or off is sent at once; moves in between once a tick
      const crossed = pushed || pressed.length || Object.keys(before.buttons).some((i) => down(before, i) && !down(next, i))
        || before.axes.some((v, i) => v !== 0 && !next.axes[i]);
      if (crossed) sendInput(); else deviceChanged();
      return;
    }
    // sync: a step per newly pressed button or axis pushed past the dead zone
    if (pressed.length || pushed) sendInput();
  }

  const devices = []; // each with reset(): let go of everything
  return { mode, sendInput, releaseAll, onKeyDown, onKeyUp, press, release, pollGamepad, deviceChanged,
    period, addDevice: (device) => { devices.push(device); return device; } };
}
