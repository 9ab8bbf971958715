/* A 3Dconnexion SpaceMouse through WebHID (docs/study-format.md, "Devices"), where the study
   binds it: "Connect SpaceMouse" asks the browser for the device (Chrome and Edge have WebHID;
   elsewhere the page says so). Its input reports: 1 = translation x, y, z as int16
   little-endian (newer devices send all six axes in report 1), 2 = rotation rx, ry, rz, 3 =
   the buttons' bitmask. Each axis is divided by about 350 (its full push) and clamped to
   [-1, 1]; sent as ``devices.spacemouse`` = [x, y, z, rx, ry, rz] (3Dconnexion's axes: x right,
   y toward you, z down), the buttons as ``SpaceMouseLeft`` / ``SpaceMouseRight`` in ``keys``. */

const $ = (id) => document.getElementById(id);
export const VENDOR_IDS = [0x256f, 0x046d]; // 3Dconnexion, and Logitech's older 3Dconnexion devices
const FULL_PUSH = 350;
const BUTTONS = ["SpaceMouseLeft", "SpaceMouseRight"]; // bits 0 and 1 of report 3

const norm = (v) => Math.round(Math.max(-1, Math.min(1, v / FULL_PUSH)) * 100) / 100 || 0;

/** Wire the "Connect SpaceMouse" button; ``input`` = {press, release, deviceChanged}. */
export function createSpaceMouse(state, input) {
  const axes = [0, 0, 0, 0, 0, 0];
  let buttons = 0;
  let device = null;
  const hid = navigator.hid;

  function status(text, connected) {
    $("spacemouse-status").textContent = text;
    $("spacemouse-status").dataset.connected = connected ? "true" : "false";
    $("spacemouse-btn").hidden = Boolean(connected) || !hid;
  }

  function onReport(e) {
    const data = e.data;
    const read = (i) => (data.byteLength >= 2 * i + 2 ? norm(data.getInt16(2 * i, true)) : 0);
    if (e.reportId === 1) {
      axes[0] = read(0); axes[1] = read(1); axes[2] = read(2);
      if (data.byteLength >= 12) { axes[3] = read(3); axes[4] = read(4); axes[5] = read(5); }
    } else if (e.reportId === 2) {
      axes[3] = read(0); axes[4] = read(1); axes[5] = read(2);
    } else if (e.reportId === 3 && data.byteLength >= 1) {
      const next = data.getUint8(0);
      BUTTONS.forEach((code, bit) => {
        const was = buttons & (1 << bit), now = next & (1 << bit);
        if (now && !was) input.press([code]);
        if (was && !now) input.release([code]);
      });
      buttons = next;
      return;
    } else {
      return;
    }
    if (axes.every((v) => v === 0)) delete state.devices.spacemouse;
    else state.devices.spacemouse = axes.slice();
    input.deviceChanged();
  }

  async function use(next) {
    if (!next.opened) await next.open();
    device = next;
    device.addEventListener("inputreport", onReport);
    status(`SpaceMouse: ${device.productName || "connected"}`, true);
  }

  async function connect() {
    try {
      const found = await hid.requestDevice({ filters: VENDOR_IDS.map((vendorId) => ({ vendorId })) });
      if (!found || !found.length) { status("No SpaceMouse chosen.", false); return; }
      await use(found[0]);
    } catch (err) {
      status(`The SpaceMouse could not be opened: ${err.message || err}`, false);
    }
    $("screen").focus(); // the game keeps the keys
  }

  /** Show the button (or say WebHID is missing) when the study binds the SpaceMouse. */
  function render() {
    const wanted = state.devicesBound.has("spacemouse");
    $("spacemouse-field").hidden = !wanted;
    if (!wanted || device) return;
    if (!hid) { status("This browser cannot reach a SpaceMouse (it needs WebHID: Chrome or Edge).", false); return; }
    status("", false);
    // a SpaceMouse this site was allowed before is opened without asking again
    hid.getDevices().then((known) => {
      const pad = known.find((d) => VENDOR_IDS.includes(d.vendorId));
      if (pad && !device) use(pad).catch(() => {});
    }).catch(() => {});
  }

  function reset() {
    axes.fill(0); delete state.devices.spacemouse;
    BUTTONS.forEach((code, bit) => { if (buttons & (1 << bit)) input.release([code]); });
    buttons = 0;
  }

  $("spacemouse-btn").addEventListener("click", connect);
  if (hid) {
    hid.addEventListener("disconnect", (e) => {
      if (e.device !== device) return;
      device = null; reset(); input.deviceChanged();
      status("SpaceMouse disconnected.", false);
    });
  }
  return { render, reset };
}
