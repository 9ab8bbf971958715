/* Touch controls for continuous actions (a robot arm on a phone: docs/study-format.md, "Touch"),
   where the study allows touch (crowd.inputs) and the environment's controls read the touch
   device (env_ready's controls.touch_controls):
   - two drag pads, each a joystick: the finger's offset from where it pressed, over the pad's
     radius, gives two axes in [-1, 1] (a pad whose one axis is bound is a slider); lifting the
     finger, a cancel (the browser took the touch, the finger left the screen) or a lost
     capture returns them to 0. Each pad follows one finger; more fingers on it are ignored;
   - big buttons (TouchA..TouchD, held while touched), sent in ``keys`` as a key press is;
   - the camera button, where the environment has more than one camera;
   - the phone's own tilt (deviceorientation, web/shared/motion.js) as an option, where a
     binding reads it and the phone reports it: "Tilt" on takes the pose of that moment as
     level, off lets go.
   Sent as ``devices.touch`` = [pad 1 x, pad 1 y, pad 2 x, pad 2 y, tilt forward, tilt right]
   (x right +, y down +), at most once per tick of the control rate however fast the fingers
   move (input.deviceChanged). */
import { createMotion } from "../shared/motion.js";
import { button, canTouch } from "./touch.js";
import { touchOnly } from "./words.js";

const $ = (id) => document.getElementById(id);
const AXES = 6;
const RADIUS_SHARE = 0.42; // of the pad's shorter side: that far from the press is full speed
const MIN_RADIUS_PX = 36;
const round = (v) => Math.round(Math.max(-1, Math.min(1, v)) * 100) / 100 || 0;

/** The touch controls; ``input`` = {press, release, deviceChanged, period}; ``nextCamera()``. */
export function createTouchControls(state, input, nextCamera) {
  const box = $("touch-controls");
  const values = new Array(AXES).fill(0);
  const pads = []; // each with reset()
  let tilt = null; // {motion, timer} while the tilt drives

  function write() {
    if (values.every((v) => v === 0)) delete state.devices.touch;
    else state.devices.touch = values.slice();
    input.deviceChanged();
  }

  function pad(index, bound, labels) {
    const [ax, ay] = [2 * index, 2 * index + 1];
    const shape = bound.has(ax) && bound.has(ay) ? "xy" : bound.has(ay) ? "y" : "x";
    const el = document.createElement("div");
    el.className = "touch-stick";
    el.dataset.shape = shape;
    el.setAttribute("role", "group");
    const words = [labels[ax], labels[ay]].filter(Boolean);
    el.setAttribute("aria-label", `Pad ${index + 1}: drag for ${words.join(", ")}`);
    const caption = document.createElement("span");
    caption.className = "touch-stick-caption";
    caption.setAttribute("aria-hidden", "true");
    caption.append(...[["←→", labels[ax]], ["↑↓", labels[ay]]].filter(([, text]) => text)
      .map(([arrows, text]) => Object.assign(document.createElement("span"), { textContent: `${arrows} ${text}` })));
    const knob = document.createElement("span");
    knob.className = "touch-knob";
    el.append(caption, knob);
    let finger = null; // {id, x, y, radius}
    const show = (dx, dy) => { knob.style.transform = `translate(${dx * 100}%, ${dy * 100}%)`; };
    function set(dx, dy) {
      values[ax] = bound.has(ax) ? round(dx) : 0;
      values[ay] = bound.has(ay) ? round(dy) : 0;
      write();
    }
    el.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      if (finger) return; // one finger per pad: a second one on it does nothing
      if (state.phase === "ready") { input.press([]); return; } // a touch starts the episode
      if (state.phase !== "playing") return;
      const rect = el.getBoundingClientRect();
      finger = { id: e.pointerId, x: e.clientX, y: e.clientY,
        radius: Math.max(MIN_RADIUS_PX, RADIUS_SHARE * Math.min(rect.width, rect.height)) };
      if (el.setPointerCapture) { try { el.setPointerCapture(e.pointerId); } catch { /* gone */ } }
      el.classList.add("pressed");
    });
    el.addEventListener("pointermove", (e) => {
      if (!finger || e.pointerId !== finger.id) return;
      let dx = bound.has(ax) ? (e.clientX - finger.x) / finger.radius : 0;
      let dy = bound.has(ay) ? (e.clientY - finger.y) / finger.radius : 0;
      const length = Math.hypot(dx, dy);
      if (length > 1) { dx /= length; dy /= length; } // the pad's rim
      show(dx, dy);
      set(dx, dy);
    });
    const up = (e) => {
      if (!finger || (e && e.pointerId !== finger.id)) return;
      reset();
      write();
    };
    function reset() { finger = null; el.classList.remove("pressed"); show(0, 0); values[ax] = values[ay] = 0; }
    for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) el.addEventListener(type, up);
    el.addEventListener("contextmenu", (e) => e.preventDefault());
    pads.push({ reset });
    return el;
  }

  function say(text) { const note = $("touch-note"); note.textContent = text; note.hidden = !text; }

  function tiltButton(labels) {
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "btn touch-btn touch-tilt";
    btn.setAttribute("aria-pressed", "false");
    btn.textContent = "Tilt to move";
    btn.title = [labels[4], labels[5]].filter(Boolean).join(" · ");
    btn.addEventListener("click", async () => {
      if (tilt) { stopTilt(); return; }
      const motion = createMotion((text) => say(text ? "This phone reports no tilt: use the pads." : ""));
      if (motion.needsPermission) await motion.enable(); else motion.listen();
      motion.down(); // level is the pose of this moment
      tilt = { motion, timer: null };
      btn.setAttribute("aria-pressed", "true");
      btn.textContent = "Tilt on";
      const tick = () => {
        if (!tilt) return;
        const [forward, right] = motion.heard ? motion.axes : [0, 0];
        if (values[4] !== round(forward) || values[5] !== round(right)) {
          values[4] = round(forward); values[5] = round(right);
          write();
        }
        tilt.timer = setTimeout(tick, input.period());
      };
      tick();
    });
    function stopTilt() {
      if (!tilt) return;
      clearTimeout(tilt.timer);
      tilt.motion.up();
      tilt = null;
      values[4] = values[5] = 0;
      btn.setAttribute("aria-pressed", "false");
      btn.textContent = "Tilt to move";
      write();
    }
    pads.push({ reset: () => { if (tilt) { clearTimeout(tilt.timer); tilt.motion.up(); tilt = null; }
      values[4] = values[5] = 0; btn.setAttribute("aria-pressed", "false"); btn.textContent = "Tilt to move"; } });
    return btn;
  }

  /** Show the touch controls of ``controls.touch_controls`` (or hide them). */
  function render(controls, cameras) {
    reset();
    pads.length = 0;
    const spec = controls && controls.touch_controls;
    const allowed = Boolean(state.study && (state.study.inputs || []).includes("touch"));
    box.hidden = !(allowed && spec && canTouch());
    $("touch-note").hidden = true;
    if (box.hidden) {
      box.replaceChildren();
      // a phone that went on anyway (the device check said it) hears it again at the game
      if (allowed && touchOnly() && $("touch-pad").hidden) {
        const needs = ["keyboard", "gamepad"].filter((i) => state.study.inputs.includes(i)).map((i) => `a ${i}`);
        say(`This game has no touch controls: it needs ${needs.join(" or ") || "a keyboard"}.`);
      }
      return;
    }
    const labels = Object.fromEntries(Object.entries(spec.axes).map(([k, v]) => [Number(k), v]));
    const bound = new Set(Object.keys(labels).map(Number));
    const left = side("left"), right = side("right");
    if (bound.has(0) || bound.has(1)) left.append(pad(0, bound, labels));
    if (bound.has(2) || bound.has(3)) right.append(pad(1, bound, labels));
    const buttons = spec.buttons.map((b) => button({ keys: [b.key], label: b.label }, input));
    const extra = [];
    if ((cameras || []).length > 1) {
      const cam = document.createElement("button");
      cam.type = "button"; cam.className = "btn touch-btn"; cam.textContent = "Camera";
      cam.setAttribute("aria-label", "Next camera");
      cam.addEventListener("click", () => nextCamera());
      extra.push(cam);
    }
    if ((bound.has(4) || bound.has(5)) && typeof DeviceOrientationEvent !== "undefined") extra.push(tiltButton(labels));
    left.append(row(buttons));
    right.append(row(extra));
    box.replaceChildren(left, right);
  }
  const side = (name) => Object.assign(document.createElement("div"), { className: `touch-side touch-${name}` });
  const row = (items) => {
    const div = document.createElement("div");
    div.className = "touch-row";
    div.append(...items);
    return div;
  };

  /** Every finger lets go (the episode paused or ended, the page lost focus). */
  function reset() {
    for (const p of pads) p.reset();
    values.fill(0);
    delete state.devices.touch;
  }
  return { render, reset };
}
