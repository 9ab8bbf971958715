/* The player's stage: binary frames decoded and drawn on the canvas, the status bar, the
   frames-per-second count, and reading a gamepad (docs/protocol.md, "Frames"). */

// episode u32, step u32, server ms f64, return f64, who drives u8 (big-endian)
const HEADER_BYTES = 25;
// the header's control byte (shared autonomy): 0 no policy, 1 the player, 2 the policy
const DRIVERS = { 1: ["human", "You are driving"], 2: ["policy", "Robot driving — move to take over"] };
const $ = (id) => document.getElementById(id);

export const now = () => performance.timeOrigin + performance.now();

let pending = null; // only the newest waiting frame is decoded
let newest = [0, -1]; // [episode, step] of the newest frame received: lanes may reorder them
let decoding = false;
let drawnTimes = [];
let onDrawn = () => {};
let onSkipped = () => {};

/** Call ``fn(frame, drawnMs)`` after each frame is on screen (the page acks it). */
export function onFrameDrawn(fn) { onDrawn = fn; }
/** Call ``fn(frame)`` for a frame that will not be drawn: a newer one came first (lanes). */
export function onFrameSkipped(fn) { onSkipped = fn; }

/** A new connection: the next frame is drawn whatever its number. */
export function resetFrames() { newest = [0, -1]; }

/** A frame from ``socket`` (the play socket or a lane: its ack goes back the same way). */
export function onFrame(buffer, socket) {
  const view = new DataView(buffer);
  const episode = view.getUint32(0), step = view.getUint32(4);
  // a frame that a newer one overtook on another socket (lanes) is not drawn
  if (episode < newest[0] || (episode === newest[0] && step <= newest[1])) {
    onSkipped({ episode, step, socket });
    return;
  }
  newest = [episode, step];
  if (pending) onSkipped(pending); // only the newest waiting frame is decoded
  pending = { episode, step, socket, ret: view.getFloat64(16),
    control: view.getUint8(24), jpeg: new Uint8Array(buffer, HEADER_BYTES) };
  if (!decoding) decodeNext();
}

async function decodeNext() {
  const frame = pending;
  if (!frame) return;
  pending = null;
  decoding = true;
  try {
    const image = await decodeJpeg(frame.jpeg);
    draw(image);
    image.close();
    const drawn = now();
    drawnTimes.push(drawn);
    drawnTimes = drawnTimes.filter((t) => t > drawn - 1000);
    updateStatus({ episode: frame.episode, step: frame.step, ret: frame.ret });
    showDriver(frame.control);
    onDrawn(frame, drawn);
  } catch (err) {
    console.warn("frame not drawn", err);
  } finally {
    decoding = false;
    if (pending) decodeNext();
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

/** Scale the canvas to the stage, keeping the frame's aspect ratio. */
export function fit() {
  const canvas = $("screen"), stage = $("stage");
  const scale = Math.min(stage.clientWidth / canvas.width, stage.clientHeight / canvas.height);
  if (!Number.isFinite(scale) || scale <= 0) return; // the stage is hidden
  canvas.style.width = `${Math.floor(canvas.width * scale)}px`;
  canvas.style.height = `${Math.floor(canvas.height * scale)}px`;
}

/** The steps an episode took, as the status bar counts them (its last step's index, and
 *  what max_steps limits): a message's ``steps`` counts the first observation too. */
export function stepsTaken(m) { return m.steps != null ? Math.max(m.steps - 1, 0) : m.step; }

export function fmt(x) { return Number.isInteger(x) ? String(x) : Number(x).toFixed(2); }

export function updateStatus({ episode, step, ret }) {
  if (episode !== undefined) $("st-episode").textContent = episode;
  if (step !== undefined) $("st-step").textContent = step;
  if (ret !== undefined) $("st-return").textContent = fmt(ret);
}

/* Why the policy stopped this episode (policy_failed's reason): the badge then says so in
   words, instead of a bare "You are driving" while the arm sits still. */
const STOPPED = {
  slow: "The robot stopped helping (it was too slow): you are driving now",
  failed: "The robot stopped helping (it ran into an error): you are driving now",
};
let stopped = "";

/** The badge saying who drives this frame (hidden without shared autonomy). */
export function showDriver(control) {
  const badge = $("driver");
  const driver = DRIVERS[control];
  badge.hidden = !driver;
  if (!driver) return;
  const [who, text] = stopped && driver[0] === "human" ? ["stopped", STOPPED[stopped] || STOPPED.failed] : driver;
  if (badge.dataset.driver === who) return;
  badge.dataset.driver = who;
  badge.textContent = text;
}

/** The policy stopped for this episode (``reason``: slow, failed), or a new episode (""). */
export function policyStopped(reason) {
  stopped = reason;
  $("driver").dataset.driver = ""; // the next frame words it again
}

setInterval(() => {
  const t = now();
  const drawn = drawnTimes.filter((x) => x > t - 1000).length;
  // one frame a second is a still picture (the ready gate, a pause, a turn), not a rate
  $("st-fps").textContent = drawn > 1 ? drawn : "–";
}, 500);

/** A gamepad's pressed buttons ({index: value}) and axes (0 inside the dead zone). */
export function readPad(pad, deadzone) {
  const buttons = {};
  pad.buttons.forEach((b, i) => {
    const v = typeof b === "number" ? b : b.value || (b.pressed ? 1 : 0);
    if (v > 0.05) buttons[i] = Math.round(v * 100) / 100;
  });
  const axes = [...pad.axes].map((v) => (Math.abs(v) < deadzone ? 0 : Math.round(v * 100) / 100));
  return { index: pad.index, buttons, axes, signature: JSON.stringify([buttons, axes]) };
}
