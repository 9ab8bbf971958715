/* The phone's motion: orientation (deviceorientation's alpha, beta, gamma) relative to the
   pose when the clutch went down, as three axes in [-1, 1]:
     0 forward: the top edge tipped away from you (beta falls), 30° = 1;
     1 right:   the right edge tipped down (gamma rises), 30° = 1;
     2 up:      twisted left, counter-clockwise seen from above (alpha rises), 45° = 1.
   Without sensors (or without permission) the sliders give the same axes while held. */

const TILT_DEG = 30;
const TWIST_DEG = 45;
export const ROTATE_SCALES = [TILT_DEG, TILT_DEG, TWIST_DEG]; // degrees for 1, per axis
const NO_READING_MS = 3000; // listening this long without a reading: say so, offer sliders

export const clamp = (v) => Math.max(-1, Math.min(1, v));
const wrap = (deg) => ((deg + 540) % 360) - 180; // to [-180, 180)

/** ``say(text, offerSliders)`` tells the page what it found. */
export function createMotion(say) {
  let last = null; // the latest reading
  let ref = null; // the reading when the clutch went down
  let held = false;
  let heard = false;
  const axes = [0, 0, 0];

  function onOrientation(e) {
    if (e.beta == null || e.gamma == null) return; // a desktop's empty event
    last = { alpha: e.alpha ?? 0, beta: e.beta, gamma: e.gamma };
    if (!heard) { heard = true; say("", false); }
    if (held && !ref) ref = last;
    if (held) update();
  }
  function update() {
    axes[0] = clamp(-(last.beta - ref.beta) / TILT_DEG);
    axes[1] = clamp(wrap(last.gamma - ref.gamma) / TILT_DEG);
    axes[2] = clamp(wrap(last.alpha - ref.alpha) / TWIST_DEG);
  }
  function listen() {
    window.addEventListener("deviceorientation", onOrientation);
    setTimeout(() => {
      if (!heard) say("No motion sensor readings from this phone: use the on-screen sliders instead.", true);
    }, NO_READING_MS);
  }

  return {
    axes,
    /** True when the browser asks for permission first (iOS): enable() on a tap. */
    needsPermission: typeof DeviceOrientationEvent !== "undefined" && typeof DeviceOrientationEvent.requestPermission === "function",
    available: typeof DeviceOrientationEvent !== "undefined",
    listen,
    async enable() {
      try {
        if ((await DeviceOrientationEvent.requestPermission()) !== "granted") throw new Error("denied");
        listen();
        say("", false);
      } catch {
        say("Motion sensors are not allowed on this phone: use the on-screen sliders instead.", true);
      }
    },
    down() { held = true; ref = last; if (ref) update(); },
    up() { held = false; ref = null; axes.fill(0); },
    get held() { return held; },
    /** True once a reading arrived: only then does the tilt move anything. */
    get heard() { return heard; },
  };
}
