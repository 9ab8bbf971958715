/* The clips of the item being judged (judge.js): each clip fetched in one request with the
   play ticket (a header, so never an <img> URL), split into a JPEG blob per frame as its
   bytes stream in, and played in sync at the study's fps, looping, on one canvas per clip.
   The shorter clip of a pair holds its last frame until the longer one ends; then both
   start again. A frame is decoded when it is shown (a clip has up to 300 frames: decoded
   bitmaps of two would take hundreds of MB on a phone), as narrate.js and the game's screen
   draw theirs (the page's CSP allows no blob: images). Everything of an item is dropped
   when the next one loads: a late answer of the old one never lands on the new. */
import { errorText } from "./crowd.js";

const $ = (id) => document.getElementById(id);
const NO_CONNECTION = "The server could not be reached.";

const player = {
  generation: 0, abort: null, clips: [], fps: 10, length: 0,
  playing: false, origin: 0, position: 0, raf: 0,
};

/** Forget the current item's clips: requests aborted, blobs dropped, canvases blank. */
export function clear() {
  player.generation += 1;
  if (player.abort) player.abort.abort();
  player.abort = null;
  player.clips = [];
  player.length = 0;
  stop();
  for (const k of [0, 1]) {
    const canvas = $(`judge-canvas-${k}`);
    canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
    delete canvas.dataset.frame;
    showError(k, "");
  }
}

/** Fetch ``item``'s clips, each in one request (``.../clips/{k}``: the frames' JPEGs one
    after another, their byte lengths in ``X-Frame-Sizes``), frames split off as their bytes
    stream in (``onProgress(done, total)`` in frames), then play them; resolves once each
    clip has arrived or failed: ``{current}`` false when another item came meanwhile,
    ``failed`` the frames that did not come. */
export async function load(item, ticket, onProgress) {
  clear();
  const generation = player.generation;
  player.abort = new AbortController();
  player.fps = Math.min(Math.max(Number(item.fps) || 10, 1), 60);
  player.clips = item.clips.map((c) => {
    const frames = Math.max(0, Math.floor(Number(c.frames) || 0));
    return { frames, blobs: new Array(frames).fill(null), failed: new Array(frames).fill(""),
      shown: -1, decoding: false };
  });
  player.length = Math.max(1, ...player.clips.map((c) => c.frames));
  const total = player.clips.reduce((n, c) => n + c.frames, 0);
  let done = 0;
  onProgress(0, total);
  const arrived = (k, i) => {
    if (generation !== player.generation) return;
    done += 1;
    onProgress(done, total);
    if (i === 0) draw(k, 0); // something to look at while the rest comes
  };
  await Promise.all(player.clips.map((c, k) => (c.frames ? fetchClip(generation, item.token, ticket, k, arrived) : null)));
  if (generation !== player.generation) return { current: false, failed: 0 };
  player.clips.forEach((c, k) => {
    if (!c.frames) showError(k, "This clip has no frames.");
    else if (c.failed.every(Boolean)) showError(k, `This clip could not be loaded. ${c.failed[0]}`);
  });
  restart();
  return { current: true, failed: player.clips.reduce((n, c) => n + c.failed.filter(Boolean).length, 0) };
}

/** The frames' byte lengths the server sent (``X-Frame-Sizes``: the progress is counted in
    frames from them, so a proxy's compression changes nothing), or null when they do not
    fit ``frames``. */
function frameSizes(res, frames) {
  const sizes = (res.headers.get("X-Frame-Sizes") || "").split(",").map(Number);
  return sizes.length === frames && sizes.every((n) => Number.isInteger(n) && n >= 0) ? sizes : null;
}

/** Clip ``k`` in one request; ``arrived(k, i)`` for each frame as its last byte comes. */
async function fetchClip(generation, token, ticket, k, arrived) {
  const clip = player.clips[k];
  let next = 0; // the first frame not split off yet
  const failRest = (text) => {
    for (; next < clip.frames; next++) { clip.failed[next] = text; arrived(k, next); }
  };
  const url = `/api/play/judge/${encodeURIComponent(token)}/clips/${k}`;
  try {
    const res = await fetch(url, { headers: { "X-Play-Ticket": ticket }, signal: player.abort.signal });
    if (generation !== player.generation) return;
    if (!res.ok) {
      let body = {};
      try { body = await res.json(); } catch { body = {}; }
      failRest(errorText({ status: res.status, body })); // the server's sentence
      return;
    }
    const sizes = frameSizes(res, clip.frames);
    if (!sizes) { failRest("The server's answer did not hold this clip's frames."); return; }
    let pending = []; // chunks not split into frames yet, their bytes
    let pendingBytes = 0;
    const split = () => {
      if (next >= sizes.length || pendingBytes < sizes[next]) return;
      const joined = pending.length === 1 ? pending[0] : concat(pending, pendingBytes);
      let at = 0;
      while (next < sizes.length && joined.length - at >= sizes[next]) {
        const size = sizes[next];
        if (size) clip.blobs[next] = new Blob([joined.subarray(at, at + size)], { type: "image/jpeg" });
        else clip.failed[next] = "This frame was not recorded.";
        at += size;
        arrived(k, next);
        next += 1;
      }
      pending = at < joined.length ? [joined.subarray(at)] : [];
      pendingBytes = joined.length - at;
    };
    const chunks = res.body ? res.body.getReader() : null;
    split(); // frames recorded without a JPEG at the start (0 bytes)
    if (!chunks) { pending = [new Uint8Array(await res.arrayBuffer())]; pendingBytes = pending[0].length; split(); }
    while (chunks && next < sizes.length) {
      const { value, done } = await chunks.read();
      if (generation !== player.generation) { chunks.cancel().catch(() => {}); return; }
      if (done) break;
      pending.push(value);
      pendingBytes += value.length;
      split();
    }
    if (next < sizes.length) failRest(NO_CONNECTION); // the answer ended early
  } catch (err) {
    if (err && err.name === "AbortError") return;
    if (generation === player.generation) failRest(NO_CONNECTION);
  }
}

function concat(chunks, bytes) {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

/* --- playback ------------------------------------------------------------------------- */
/** From the first frame, playing. */
export function restart() {
  player.position = 0;
  play();
}

export function play() {
  if (!player.clips.length) return;
  player.playing = true;
  player.origin = performance.now() - (player.position * 1000) / player.fps;
  cancelAnimationFrame(player.raf);
  player.raf = requestAnimationFrame(tick);
  changed();
}

function pause() {
  stop();
  changed();
}

export function toggle() { if (player.playing) pause(); else play(); }

function stop() {
  player.playing = false;
  cancelAnimationFrame(player.raf);
  player.raf = 0;
}

function tick(now) {
  if (!player.playing) return;
  const position = Math.floor(((now - player.origin) * player.fps) / 1000) % player.length;
  if (position !== player.position) { player.position = position; changed(); }
  player.clips.forEach((_, k) => draw(k, position)); // a frame skipped while decoding: now
  player.raf = requestAnimationFrame(tick);
}

/** Clip ``k`` at the shared position ``position`` (its last frame once it has ended). */
function draw(k, position) {
  const clip = player.clips[k];
  if (!clip || !clip.frames) return;
  const i = Math.min(position, clip.frames - 1);
  if (clip.failed[i]) {
    if (clip.shown === i) return;
    if (!clip.failed.every(Boolean)) showError(k, `Frame ${i + 1} of this clip could not be loaded.`);
    blank(k);
    clip.shown = i;
    return;
  }
  const blob = clip.blobs[i];
  if (!blob || clip.shown === i || clip.decoding) return; // not here yet, already shown, or busy
  clip.decoding = true;
  const generation = player.generation;
  createImageBitmap(blob).then((image) => {
    if (generation === player.generation) paint(k, image, i);
    image.close();
  }, () => {
    if (generation === player.generation) clip.failed[i] = "it is not an image";
  }).finally(() => { clip.decoding = false; });
}

function paint(k, image, i) {
  const canvas = $(`judge-canvas-${k}`);
  if (canvas.width !== image.width || canvas.height !== image.height) {
    canvas.width = image.width; canvas.height = image.height;
  }
  canvas.getContext("2d").drawImage(image, 0, 0);
  canvas.dataset.frame = String(i);
  player.clips[k].shown = i;
  showError(k, "");
}

function blank(k) {
  const canvas = $(`judge-canvas-${k}`);
  canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
  delete canvas.dataset.frame;
}

function showError(k, text) {
  const el = $(`judge-error-${k}`);
  if (el.textContent !== text) el.textContent = text;
  el.hidden = !text;
}

/** The play button and the position, as they are now. */
function changed() {
  $("judge-play").firstChild.textContent = player.playing ? "Pause " : "Play ";
  $("judge-play").setAttribute("aria-pressed", String(!player.playing));
  $("judge-frame").textContent = player.clips.length ? `Frame ${player.position + 1} of ${player.length}` : "";
}
