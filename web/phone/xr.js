/* The phone's WebXR pose, where the browser has one: the viewer pose of an immersive-ar
   session (else a tracking inline one) in its "local" reference space, relative to the pose when the
   clutch went down, as six axes in [-1, 1]:
     0 forward: the top edge tipped away (a rotation about the phone's x axis), 30° = 1;
     1 right:   the right edge tipped down (about its y axis), 30° = 1;
     2 up:      twisted left, counter-clockwise seen from the screen (about its z axis), 45° = 1;
     3 right, 4 away, 5 up: the phone moved, in metres, MOVE_M = 1. "Away" is the way the
       phone faced at the press (its back camera; the top edge when held flat), level.
   Axes 0-2 mean what motion.js's tilt means, so a study bound to them plays either way. */

import { ROTATE_SCALES, clamp } from "../shared/motion.js";

export const MOVE_M = 0.2;
const NO_POSE_MS = 10000; // a session this long without a pose (tracking starts in a few
// seconds): give up, back to tilt

/** The session mode this browser offers ("immersive-ar", else "inline" where an inline
    session tracks the phone: its "local" space is granted), else null. Every browser with
    WebXR has inline sessions, but most (a desktop's) track nothing in them. */
export async function xrMode() {
  const xr = navigator.xr;
  if (!xr || typeof xr.isSessionSupported !== "function") return null;
  const supported = (mode) => xr.isSessionSupported(mode).catch(() => false);
  if (await supported("immersive-ar")) return "immersive-ar";
  if (!(await supported("inline"))) return null;
  let probe = null;
  try {
    probe = await xr.requestSession("inline", { optionalFeatures: ["local"] });
    await probe.requestReferenceSpace("local");
    return "inline";
  } catch {
    return null; // no inline session, or one whose pose would never move
  } finally {
    if (probe) probe.end().catch(() => {});
  }
}

/* --- quaternions {x, y, z, w} ------------------------------------------------------------ */
const conj = (q) => ({ x: -q.x, y: -q.y, z: -q.z, w: q.w });
function mul(a, b) {
  return {
    w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
    y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
    z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
  };
}
function rotate(q, v) {
  const r = mul(mul(q, { x: v[0], y: v[1], z: v[2], w: 0 }), conj(q));
  return [r.x, r.y, r.z];
}
/** A rotation as its rotation vector (axis × angle, degrees), the short way round. */
function rotationVector(q) {
  const s = q.w < 0 ? -1 : 1; // q and -q are the same rotation
  const w = Math.min(1, s * q.w);
  const half = Math.acos(w);
  const sin = Math.sin(half);
  if (sin < 1e-9) return [0, 0, 0];
  const k = (2 * half * 180) / Math.PI / sin;
  return [s * q.x * k, s * q.y * k, s * q.z * k];
}
/** Level unit vectors (right, away) of the way a pose faces, in the reference space. */
function heading(q) {
  let [x, , z] = rotate(q, [0, 0, -1]); // the back camera's direction
  if (Math.hypot(x, z) < 0.5) [x, , z] = rotate(q, [0, 1, 0]); // held flat: its top edge
  const n = Math.hypot(x, z) || 1;
  const away = [x / n, z / n];
  return { away, right: [-away[1], away[0]] };
}

/** ``say(text)`` tells the page what happened; ``lost()`` that the session is gone. */
export function createXr(mode, say, lost) {
  let session = null;
  let space = null;
  let last = null; // the latest pose {p: [x, y, z], q}
  let ref = null; // the pose when the clutch went down
  let held = false;
  const axes = [0, 0, 0, 0, 0, 0];

  function update() {
    const rot = rotationVector(mul(conj(ref.q), last.q)); // in the phone's frame at the press
    axes[0] = clamp(-rot[0] / ROTATE_SCALES[0]);
    axes[1] = clamp(rot[1] / ROTATE_SCALES[1]);
    axes[2] = clamp(rot[2] / ROTATE_SCALES[2]);
    const d = [0, 1, 2].map((i) => last.p[i] - ref.p[i]);
    const { away, right } = ref.heading;
    axes[3] = clamp((d[0] * right[0] + d[2] * right[1]) / MOVE_M);
    axes[4] = clamp((d[0] * away[0] + d[2] * away[1]) / MOVE_M);
    axes[5] = clamp(d[1] / MOVE_M);
  }
  function onFrame(_time, frame) {
    if (!session) return;
    session.requestAnimationFrame(onFrame);
    const pose = frame.getViewerPose(space);
    if (!pose) return; // tracking lost for a moment: keep the last pose
    const { position: p, orientation: q } = pose.transform;
    const values = [p.x, p.y, p.z, q.x, q.y, q.z, q.w];
    if (!values.every(Number.isFinite)) return;
    const norm = Math.hypot(q.x, q.y, q.z, q.w);
    if (norm < 1e-6) return;
    const first = !last;
    last = { p: [p.x, p.y, p.z], q: { x: q.x / norm, y: q.y / norm, z: q.z / norm, w: q.w / norm } };
    if (first) say("");
    if (held && !ref) ref = { ...last, heading: heading(last.q) };
    if (held) update();
  }
  const ended = new WeakSet(); // sessions the browser ended itself

  /** Leave the session (``text`` says why; the page goes back to tilt). */
  function stop(text) {
    const was = session;
    session = null; space = null; last = null; ref = null; axes.fill(0);
    if (!was) return;
    if (!ended.has(was)) was.end().catch(() => {});
    lost(text);
  }

  return {
    axes,
    mode,
    /** Start the session (on a tap: browsers ask for one). Throws when it cannot. */
    async start() {
      const options = { optionalFeatures: ["local", "dom-overlay"] };
      if (mode === "immersive-ar") options.domOverlay = { root: document.body }; // keep the buttons
      const s = await navigator.xr.requestSession(mode, options);
      try {
        space = await s.requestReferenceSpace("local"); // y up, from where the session began
      } catch (err) {
        s.end().catch(() => {});
        throw err;
      }
      session = s;
      s.addEventListener("end", () => { ended.add(s); if (session === s) stop("The AR session ended."); });
      s.requestAnimationFrame(onFrame);
      setTimeout(() => { if (session === s && !last) stop("The AR session gave no pose."); }, NO_POSE_MS);
    },
    stop,
    get active() { return session !== null; },
    down() { held = true; ref = last ? { ...last, heading: heading(last.q) } : null; if (ref) update(); },
    up() { held = false; ref = null; axes.fill(0); },
    get held() { return held; },
  };
}
