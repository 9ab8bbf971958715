/* The mouse as a device (docs/study-format.md, "Devices"), where the study binds it: pressing
   on the picture and dragging is a virtual joystick — the offset from the press point over a
   radius gives two axes in [-1, 1], and letting go returns them to 0; Shift+drag drives the
   other plane (axes 3 and 4); the wheel gives a third axis, an impulse that decays over about
   200 ms. Sent as ``devices.mouse`` = [x, y, wheel, shift-x, shift-y] (x right, y down, wheel
   + when turned away from you), with ``MouseLeft`` / ``MouseRight`` in ``keys`` while held. */

const $ = (id) => document.getElementById(id);
const RADIUS_SHARE = 0.2; // of the picture's shorter side: that far from the press is full speed
const MIN_RADIUS_PX = 40;
const WHEEL_FULL_PX = 100; // one notch of a usual wheel (deltaY 100) is a full push
const WHEEL_DECAY_MS = 60; // e-folding time: a push is under 5% after about 200 ms
const BUTTONS = { 0: "MouseLeft", 2: "MouseRight" };
const round = (v) => Math.round(Math.max(-1, Math.min(1, v)) * 100) / 100 || 0;

/** Wire the mouse on the canvas; ``input`` = {press, release, deviceChanged, period}. */
export function createMouse(state, input) {
  const canvas = $("screen");
  const stick = $("mouse-stick");
  let drag = null; // {x, y, radius} of the press, in client pixels
  let wheel = 0, wheelAt = 0, decay = null;
  const bound = () => state.devicesBound.has("mouse");
  const playing = () => state.phase === "playing";

  function write(plane, dx, dy) {
    const v = state.devices.mouse = [0, 0, wheelNow(), 0, 0];
    v[plane ? 3 : 0] = round(dx); v[plane ? 4 : 1] = round(dy);
    if (v.every((x) => x === 0)) delete state.devices.mouse;
    input.deviceChanged();
  }
  function wheelNow() { return round(wheel * Math.exp(-(performance.now() - wheelAt) / WHEEL_DECAY_MS)); }

  function showStick(x, y, radius, dx = 0, dy = 0) {
    const box = $("stage").getBoundingClientRect();
    stick.hidden = false;
    stick.style.left = `${x - box.left - radius}px`; stick.style.top = `${y - box.top - radius}px`;
    stick.style.width = stick.style.height = `${2 * radius}px`;
    stick.firstElementChild.style.transform = `translate(${dx * radius}px, ${dy * radius}px)`;
  }

  canvas.addEventListener("pointerdown", (e) => {
    if (!bound() || e.pointerType === "touch") return;
    if (!(e.button in BUTTONS)) return;
    canvas.focus();
    if (!playing()) return; // the click starts the episode at the ready gate
    e.preventDefault();
    if (canvas.setPointerCapture) { try { canvas.setPointerCapture(e.pointerId); } catch { /* gone */ } }
    input.press([BUTTONS[e.button]]);
    if (e.button !== 0) return;
    const rect = canvas.getBoundingClientRect();
    drag = { x: e.clientX, y: e.clientY, radius: Math.max(MIN_RADIUS_PX, RADIUS_SHARE * Math.min(rect.width, rect.height)) };
    showStick(drag.x, drag.y, drag.radius);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    let dx = (e.clientX - drag.x) / drag.radius, dy = (e.clientY - drag.y) / drag.radius;
    const length = Math.hypot(dx, dy);
    if (length > 1) { dx /= length; dy /= length; } // the stick's rim
    showStick(drag.x, drag.y, drag.radius, dx, dy);
    write(e.shiftKey, dx, dy);
  });
  const up = (e) => {
    if (e.type === "pointerup" && !(e.button in BUTTONS)) return;
    const released = e.type === "pointerup" ? [BUTTONS[e.button]] : Object.values(BUTTONS);
    if (drag && released.includes("MouseLeft")) { drag = null; stick.hidden = true; write(false, 0, 0); }
    input.release(released);
  };
  for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) canvas.addEventListener(type, up);
  canvas.addEventListener("contextmenu", (e) => { if (bound()) e.preventDefault(); }); // the right button plays
  canvas.addEventListener("wheel", (e) => {
    if (!bound() || !playing()) return;
    e.preventDefault(); // the page does not scroll under the game
    const px = e.deltaMode === 1 ? e.deltaY * 40 : e.deltaMode === 2 ? e.deltaY * 800 : e.deltaY;
    wheel = Math.max(-1, Math.min(1, wheelNow() - px / WHEEL_FULL_PX)); wheelAt = performance.now();
    tick();
  }, { passive: false });

  /** While the wheel's push decays, its value is sent again at the control rate. */
  function tick() {
    clearTimeout(decay);
    const v = (state.devices.mouse || [0, 0, 0, 0, 0]).slice();
    v[2] = wheelNow();
    state.devices.mouse = v;
    if (v.every((x) => x === 0)) delete state.devices.mouse;
    input.deviceChanged();
    if (v[2] !== 0) decay = setTimeout(tick, input.period());
  }

  /** Everything lets go (the episode paused or ended, the page lost focus). */
  function reset() { drag = null; wheel = 0; stick.hidden = true; clearTimeout(decay); delete state.devices.mouse; }
  return { reset };
}

/** The hint under the game: what drag, wheel and buttons do here (the legend's mouse rows,
 *  drags first); empty when nothing reads the mouse. */
export function mouseHint(legend) {
  const rows = legend.filter((r) => /^(Shift \+ )?mouse |mouse button$/.test(r.input));
  rows.sort((a, b) => rank(a.input) - rank(b.input));
  return rows.map((r) => `${r.input.replace("Shift + mouse drag", "Shift+drag").replace(/^mouse /, "")}: ${r.label}`);
}
const rank = (input) => ["mouse drag", "Shift", "mouse wheel"].findIndex((p) => input.startsWith(p)) >>> 0;
