/* The Controls legend beside the game: the environment's rows grouped by meaning (env_ready's
   ``controls.groups``: server/player/legend.py — an arm's Move, Rotate, Gripper), then the
   page's own keys (the camera, the episode). A row shows the inputs of the devices this
   participant has, each in its own words: keys as printed on them (on a computer, never on a
   phone), a connected gamepad's buttons and sticks, a connected SpaceMouse's, a paired
   phone's; a row none of them reaches is left out, and so is the legend when nothing is left
   (a phone with no gamepad: its game buttons say what they do). The mouse has its hint under
   the game (mouse.js). Drawn again when a device comes or goes. */
import { PLAYER_KEYS } from "./input.js";
import { onPhone, touchOnly } from "./words.js";

const $ = (id) => document.getElementById(id);

/** The devices a legend can name, in its columns' order, with their headings. */
const COLUMNS = [["keyboard", "Key"], ["gamepad", "Gamepad"], ["spacemouse", "SpaceMouse"], ["phone", "Phone"]];

/** The page's own keys (input.js PLAYER_KEYS), as the legend lists them after the game's. */
export function pageGroups(state, cameras) {
  const groups = [];
  if (cameras > 1 && !state.boundKeys.has(PLAYER_KEYS.camera)) { // the C key is the game's when it binds it
    groups.push({ name: "Camera", rows: [{ label: "next camera", inputs: { keyboard: [["C"]] } }] });
  }
  groups.push({ name: "Episode", rows: [
    { label: "start", inputs: { keyboard: [["Enter"]], gamepad: [["A"]] } },
    { label: "pause / resume", inputs: { keyboard: [["Esc"]] } },
    { label: "cancel the episode (asks first)", inputs: { keyboard: [["Delete"]] } },
  ] });
  // "I'm done" where the environment lets the participant end an episode, unless X is the game's
  const env = state.envs[state.env];
  if (env && env.allow_end && !state.boundKeys.has(PLAYER_KEYS.done)) {
    groups[groups.length - 1].rows.push({ label: "I'm done: end the episode, then save it", inputs: { keyboard: [["X"]] } });
  }
  return groups;
}

/** The devices this participant has now. */
function present(state) {
  const on = (id) => $(id).dataset.connected === "true";
  return new Set([
    ...(onPhone() && !document.body.dataset.keyboard ? [] : ["keyboard"]), // a phone's keyboard: watchKeyboard
    ...(on("gamepad-status") ? ["gamepad"] : []),
    ...(on("spacemouse-status") ? ["spacemouse"] : []),
    ...(state.phone === "connected" ? ["phone"] : []),
  ]);
}

/** A device's inputs of one row: a dimension's keys side by side ("← →": one way, the other),
 *  anything else's as alternatives ("↑ / W"). */
function inputCell(device, combos, heading, kind) {
  const td = document.createElement("td");
  td.className = device === "keyboard" ? "legend-keys" : "legend-device";
  td.dataset.device = device;
  (combos || []).forEach((parts, i) => {
    if (i) td.append(device !== "keyboard" ? ", " : kind === "dimension" ? " " : " / ");
    parts.forEach((part, j) => {
      if (j) td.append("+");
      const el = document.createElement(device === "keyboard" ? "kbd" : "span");
      el.textContent = part;
      td.append(el);
    });
  });
  if (heading) td.setAttribute("aria-label", `${heading}: ${td.textContent || "none"}`);
  return td;
}

/** A phone or a tablet with a keyboard attached (its participant said so: ``said``, or pressed
 *  a key) is shown the keys too: the legend's and the buttons' hints. Returns what says so. */
export function watchKeyboard(state, said) {
  const attached = () => {
    if (document.body.dataset.keyboard) return;
    document.body.dataset.keyboard = "true";
    if (state.legend) renderLegend(state, state.legend);
  };
  if (onPhone() || touchOnly()) {
    if (said) attached();
    document.addEventListener("keydown", (e) => { if (e.isTrusted) attached(); });
  }
  return attached;
}

/** Draw the legend of ``groups`` (the environment's, then the page's) for the devices at hand. */
export function renderLegend(state, groups) {
  const devices = present(state);
  const columns = COLUMNS.filter(([d]) => devices.has(d) && groups.some((g) => g.rows.some((r) => r.inputs[d])));
  const table = $("legend");
  const bodies = groups.map((group) => {
    const rows = group.rows.filter((r) => columns.some(([d]) => r.inputs[d]));
    if (!rows.length) return null;
    const body = document.createElement("tbody");
    body.dataset.group = group.name;
    const head = document.createElement("tr");
    head.className = "legend-group";
    const th = document.createElement("th");
    th.scope = "rowgroup"; th.colSpan = columns.length + 1; th.textContent = group.name;
    head.append(th);
    body.append(head);
    for (const row of rows) {
      const tr = document.createElement("tr");
      const label = document.createElement("td");
      label.className = "legend-label";
      label.textContent = row.label;
      tr.append(...columns.map(([d, heading]) => inputCell(d, row.inputs[d], columns.length > 1 ? heading : "", row.kind)), label);
      body.append(tr);
    }
    return body;
  }).filter(Boolean);
  const header = table.tHead || table.createTHead();
  header.replaceChildren();
  if (columns.length > 1) { // which column is which device
    const tr = header.insertRow();
    for (const [, heading] of [...columns, [null, "Does"]]) {
      const th = document.createElement("th"); th.scope = "col"; th.textContent = heading; tr.append(th);
    }
  }
  header.hidden = columns.length < 2;
  for (const body of [...table.tBodies]) body.remove();
  table.append(...bodies);
  $("controls-section").hidden = !bodies.length;
}

/** Draw the legend again whenever a device comes or goes (its status on the page says so). */
export function watchDevices(redraw) {
  const watch = new MutationObserver(redraw);
  for (const [id, attribute] of [["gamepad-status", "data-connected"], ["spacemouse-status", "data-connected"], ["phone-state", "data-state"]]) {
    watch.observe($(id), { attributes: true, attributeFilter: [attribute] });
  }
}
