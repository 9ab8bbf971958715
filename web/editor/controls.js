// The controls editor: bind each action of an environment to keys, gamepad buttons, axes and
// devices (mouse, SpaceMouse, a paired phone: devices.js).
//
//   mountControlsEditor(container, { actions, meanings, dimensions, controls, defaults, problems, onChange })
//
// ``actions`` is the action space as validation reports it (``action_space``: a discrete
// space has ``num_values``; a Box has ``shape``, ``minimum``, ``maximum``), or null when it
// is not known yet (then the bindings and ``meanings`` say what they can). ``meanings`` are
// the action names of environments that name them (Atari: NOOP, FIRE, UP...), ``dimensions``
// the catalog's names of a vector action's dimensions (an arm's x, y, z, roll, pitch, yaw,
// gripper). ``controls``
// is the study spec's ``controls`` mapping (null: the defaults are used), ``defaults`` the
// catalog's controls. ``onChange(newControls)`` fires on every change with a fresh object in
// the study format (docs/study-format.md, "Controls"). An action no control reaches can be
// marked "not for players" (``not_for_players``); a key another action holds moves only
// once the designer says so. ``problems``: what the server refused ({loc, msg}), shown at the
// axis field they name. Returns ``{ controls, destroy }``.

import { el } from "../shared/api.js";
import { actionModel, describe, normalize, same, tidy, valueText } from "./controls-model.js";
import { axesTable, axisName, axisProblems, deviceMenu, isPad } from "./devices.js";

const CAPTURE_TIMEOUT_MS = 15000;
const PRESSED = 0.5; // a gamepad button, or an axis moved this far, counts as pressed

// --- the editor ------------------------------------------------------------------------------

export function mountControlsEditor(container, { actions = null, meanings = null, dimensions = null, controls = null, defaults = null, problems = [], onChange = () => {} } = {}) {
  const defaultControls = normalize(defaults);
  let current = normalize(controls ?? defaults);
  let stopCapture = () => {};
  let status = "";
  let pending = null; // a key another action holds, waiting for the designer's answer
  let vectors = false; // the actions are vectors (a Box): keys may toggle
  const refused = axisProblems(problems); // "axis.field" → the server's message

  const root = el("div", { class: "controls-editor" });
  container.replaceChildren(root);

  function changed() {
    render();
    onChange(tidy(current));
  }

  // bindings of a row: keys, buttons, axes
  function bindingsOf(model, row) {
    const out = [];
    for (const [combo, value] of Object.entries(current.keys)) {
      if (row.matches(value)) out.push({ kind: "key", name: combo });
    }
    for (const [button, value] of Object.entries(current.buttons)) {
      if (row.matches(value)) out.push({ kind: "button", name: button });
    }
    current.axes.forEach((axis, i) => {
      const name = axisName(axis);
      if (model.discrete) {
        if (axis.negative !== null && axis.negative !== undefined && row.matches(axis.negative)) out.push({ kind: "axis", index: i, side: "negative", name: `${name} −` });
        if (axis.positive !== null && axis.positive !== undefined && row.matches(axis.positive)) out.push({ kind: "axis", index: i, side: "positive", name: `${name} +` });
      } else if ((axis.dim ?? 0) === row.dim && Number.isFinite(axis.scale ?? 1) && (axis.scale ?? 1) !== 0) {
        // a stick drives its dimension both ways: the direction that moves this row's way
        const direction = row.sign * Math.sign(axis.scale ?? 1);
        out.push({ kind: "axis", index: i, name: `${name} ${direction > 0 ? "+" : "−"}` });
      }
    });
    return out;
  }

  function removeBinding(binding) {
    if (binding.kind === "key") {
      delete current.keys[binding.name];
      delete current.labels[binding.name];
      setToggle(binding.name, false);
    } else if (binding.kind === "button") {
      delete current.buttons[binding.name];
    } else if (binding.side) {
      const axis = current.axes[binding.index];
      axis[binding.side] = null;
      if ((axis.negative ?? null) === null && (axis.positive ?? null) === null) current.axes.splice(binding.index, 1);
    } else {
      current.axes.splice(binding.index, 1);
    }
    refused.clear(); // the axes' indices moved
    changed();
  }

  /** ``name`` of ``keys`` latches (a press turns it on until the next), or not. */
  function setToggle(name, on) {
    const rest = (current.toggle || []).filter((k) => k !== name);
    if (on) rest.push(name);
    if (rest.length) current.toggle = rest;
    else delete current.toggle;
  }

  function chip(binding) {
    const text = binding.kind === "button" ? `button ${binding.name}` : binding.name;
    const parts = [el("span", { class: "binding-name" }, text)];
    if (binding.kind === "key") {
      parts.push(el("input", {
        type: "text",
        class: "binding-label",
        placeholder: "label",
        value: current.labels[binding.name] ?? "",
        "aria-label": `Label of ${binding.name}`,
        onchange: (event) => {
          const label = event.target.value.trim();
          if (label) current.labels[binding.name] = label;
          else delete current.labels[binding.name];
          changed();
        },
      }));
      if (vectors) {
        parts.push(el("label", { class: "small binding-toggle", title: "A press turns it on until the next press (a gripper held shut)" },
          el("input", { type: "checkbox", checked: (current.toggle || []).includes(binding.name) ? "" : undefined,
            "aria-label": `${binding.name} toggles`,
            onchange: (event) => {
              setToggle(binding.name, event.target.checked);
              status = `${binding.name} ${event.target.checked ? "now toggles" : "acts while held"}.`;
              changed();
            } }), " toggle"));
      }
    }
    parts.push(el("button", {
      type: "button",
      class: "btn btn-ghost btn-small",
      "aria-label": `Remove ${text}`,
      onclick: () => removeBinding(binding),
    }, "×"));
    return el("span", { class: "binding" }, parts);
  }

  // --- capturing a key, a gamepad button or an axis ------------------------------------------
  function captureKey(row, button) {
    stopCapture();
    const held = [];
    button.textContent = "Press a key… (Esc cancels)";
    button.classList.add("capturing");
    const down = (event) => {
      event.preventDefault();
      event.stopPropagation();
      if (!root.isConnected) { stop(); return; } // the form was redrawn while listening
      if (event.repeat) return;
      if (event.code === "Escape" && held.length === 0) {
        stop();
        render();
        return;
      }
      if (!held.includes(event.code)) held.push(event.code);
    };
    const up = (event) => {
      event.preventDefault();
      event.stopPropagation();
      if (!held.length) return;
      stop();
      offerKey(held.join("+"), row);
    };
    const stop = () => {
      window.removeEventListener("keydown", down, true);
      window.removeEventListener("keyup", up, true);
      stopCapture = () => {};
    };
    window.addEventListener("keydown", down, true);
    window.addEventListener("keyup", up, true);
    stopCapture = () => { stop(); };
  }

  /** Bind ``combo`` (a key, a combination or a device button's code) to ``row``. */
  function offerKey(combo, row) {
    const before = current.keys[combo];
    if (before !== undefined && !row.matches(before) && !same(before, row.value)) {
      // the key sends another action: ask before taking it from that action
      pending = { combo, row, before };
      render();
      root.querySelector(".rebind-ask .btn-primary")?.focus();
      return;
    }
    bindKey(combo, row);
  }

  function bindKey(combo, row) {
    pending = null;
    current.keys[combo] = row.value;
    status = `${combo} → ${row.title}`;
    changed();
  }

  /** "KeyJ already sends 1: move it here?", answered with the buttons, Enter or Esc. */
  function rebindQuestion() {
    if (!pending) return null;
    const { combo, row, before } = pending;
    const keep = () => {
      pending = null;
      status = `${combo} kept on ${valueText(before)}.`;
      render();
    };
    const box = el("div", { class: "alert alert-warning rebind-ask", role: "alertdialog", "aria-label": `${combo} is already bound`,
      onkeydown: (event) => {
        if (event.key === "Escape") {
          event.preventDefault();
          event.stopPropagation();
          keep();
        }
      } },
    el("p", {}, `${combo} already sends ${valueText(before)}. Move it to ${row.title}? That action loses it.`),
    el("button", { type: "button", class: "btn btn-small btn-primary", onclick: () => bindKey(combo, row) }, `Move ${combo} to ${row.title}`),
    " ",
    el("button", { type: "button", class: "btn btn-small", onclick: keep }, `Keep it on ${valueText(before)}`));
    return box;
  }

  /** What marks ``row`` "not for players": its name or index (a vector: its dimension). */
  const markOf = (model, row) => (model.discrete ? row.value : row.dim);
  const marked = (model, row) => (current.not_for_players || []).some((m) => String(m) === String(markOf(model, row)));

  function setMarked(model, row, on) {
    const mark = markOf(model, row);
    const rest = (current.not_for_players || []).filter((m) => String(m) !== String(mark));
    if (on) rest.push(mark);
    if (rest.length) current.not_for_players = rest;
    else delete current.not_for_players;
    status = on ? `${row.title} is not for players.` : `${row.title} is for players again.`;
    changed();
  }

  function captureGamepad(model, row, button) {
    stopCapture();
    const pads = () => [...(navigator.getGamepads ? navigator.getGamepads() : [])].filter(Boolean);
    const baseline = new Map(pads().map((p) => [p.index, [...p.axes]]));
    const started = performance.now();
    let frame = 0;
    button.textContent = "Press a button or move a stick…";
    button.classList.add("capturing");
    const stop = () => {
      cancelAnimationFrame(frame);
      stopCapture = () => {};
    };
    const bind = (apply, text) => {
      stop();
      apply();
      status = `${text} → ${row.title}`;
      changed();
    };
    const poll = () => {
      if (!root.isConnected) { stop(); return; } // the form was redrawn while listening
      for (const pad of pads()) {
        const pressed = pad.buttons.findIndex((b) => b.pressed || b.value > PRESSED);
        if (pressed >= 0) {
          bind(() => { current.buttons[String(pressed)] = row.value; }, `button ${pressed}`);
          return;
        }
        const rest = baseline.get(pad.index) || pad.axes.map(() => 0);
        const moved = pad.axes.findIndex((v, i) => Math.abs(v - (rest[i] ?? 0)) > PRESSED);
        if (moved >= 0) {
          const direction = Math.sign(pad.axes[moved] - (rest[moved] ?? 0));
          bind(() => bindAxis(model, row, moved, direction), `axis ${moved} ${direction > 0 ? "+" : "−"}`);
          return;
        }
      }
      if (performance.now() - started > CAPTURE_TIMEOUT_MS) {
        stop();
        status = pads().length ? "No gamepad input: try again." : "No gamepad found: connect one, press a button, try again.";
        render();
        return;
      }
      frame = requestAnimationFrame(poll);
    };
    frame = requestAnimationFrame(poll);
    stopCapture = () => { stop(); };
  }

  function bindAxis(model, row, axisIndex, direction) {
    if (model.discrete) {
      let axis = current.axes.find((a) => a.axis === axisIndex && isPad(a));
      if (!axis) {
        axis = { axis: axisIndex, negative: null, positive: null };
        current.axes.push(axis);
      }
      axis[direction > 0 ? "positive" : "negative"] = row.value;
    } else {
      current.axes = current.axes.filter((a) => a.axis !== axisIndex || !isPad(a)); // a device's axis stays
      current.axes.push({ axis: axisIndex, dim: row.dim, scale: row.sign * direction * row.magnitude });
    }
  }

  // --- rendering ------------------------------------------------------------------------------
  function render() {
    stopCapture();
    const model = actionModel(actions, meanings, current, dimensions);
    vectors = !model.discrete;
    const noop = current.noop;
    const rows = model.rows.map((row) => {
      const bindings = bindingsOf(model, row);
      const isNoop = noop !== null && (row.matches(noop) || same(noop, row.value));
      const notForPlayers = marked(model, row);
      const unbound = bindings.length === 0 && !isNoop && !notForPlayers;
      const keyButton = el("button", { type: "button", class: "btn btn-small" }, "Press a key…");
      keyButton.addEventListener("click", () => captureKey(row, keyButton));
      keyButton.setAttribute("aria-label", `Bind a key to ${row.title}`);
      const padButton = el("button", { type: "button", class: "btn btn-small" }, "Gamepad…");
      padButton.addEventListener("click", () => captureGamepad(model, row, padButton));
      padButton.setAttribute("aria-label", `Bind a gamepad button or axis to ${row.title}`);
      const device = deviceMenu(row, {
        onButton: (code) => offerKey(code, row),
        onAxis: (source, axis) => {
          current.axes.push(model.discrete ? { source, axis, negative: null, positive: row.value }
            : { source, axis, dim: row.dim, scale: row.sign * row.magnitude });
          status = `${axisName({ source, axis })} → ${row.title}: set its scale and dead zone under Axes.`;
          changed();
        },
      });
      return el("tr", { class: unbound ? "unbound" : "", dataset: { action: row.title } },
        el("td", { class: "action-name" }, el("strong", {}, row.title),
          isNoop ? el("span", { class: "muted small" }, " (when nothing is pressed)") : null,
          unbound ? el("span", { class: "badge badge-problem flag-unbound" }, "unbound") : null,
          notForPlayers ? el("span", { class: "badge flag-not-for-players" }, "not for players") : null,
          (bindings.length === 0 && !isNoop) || notForPlayers
            ? el("label", { class: "small not-for-players" },
              el("input", { type: "checkbox", checked: notForPlayers ? "" : undefined,
                "aria-label": `${row.title} is not for players`,
                onchange: (event) => setMarked(model, row, event.target.checked) }),
              " not for players")
            : null),
        el("td", {}, bindings.length ? bindings.map(chip) : el("span", { class: "muted small" }, "—")),
        el("td", { class: "right bind-cell" }, keyButton, " ", padButton, " ", device));
    });

    // bindings that reach no action of this environment
    const matched = (v) => model.rows.some((r) => r.matches(v));
    const stray = [
      ...Object.entries(current.keys).map(([name, value]) => ({ kind: "key", name, value })),
      ...Object.entries(current.buttons).map(([name, value]) => ({ kind: "button", name, value })),
    ].filter((b) => !matched(b.value));
    const strayRows = stray.map((b) => {
      const invalid = !model.valid(b.value);
      return el("li", { class: invalid ? "stray invalid" : "stray" },
        chip(b), " → ", el("code", {}, valueText(b.value)), " ",
        invalid
          ? el("span", { class: "badge badge-problem flag-invalid" }, "bound to nothing")
          : el("span", { class: "muted small" }, "(several dimensions at once)"));
    });

    const deadzone = el("input", {
      type: "number", min: "0", max: "0.95", step: "0.05", value: String(current.deadzone),
      class: "deadzone", id: `deadzone-${uid}`,
      onchange: (event) => {
        const v = Number(event.target.value);
        if (Number.isFinite(v) && v >= 0 && v < 1) {
          current.deadzone = v;
          changed();
        }
      },
    });
    const atDefaults = same(normalize(current), defaultControls);
    const defaultsText = describe(defaultControls, dimensions);
    root.replaceChildren(...[
      el("table", { class: "table controls-table", "aria-label": "Controls" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Action"), el("th", { scope: "col" }, "Bound to"), el("th", { scope: "col" }, ""))),
        el("tbody", {}, rows)),
      rebindQuestion(),
      axesTable(current, model, refused, (text) => { if (text) status = text; changed(); }),
      strayRows.length ? el("div", { class: "stray-bindings" }, el("p", { class: "small" }, "Bindings that reach no action:"), el("ul", {}, strayRows)) : null,
      el("div", { class: "controls-footer" },
        el("label", { for: `deadzone-${uid}` }, "Stick dead zone "), deadzone,
        el("button", { type: "button", class: "btn btn-small", disabled: atDefaults, onclick: () => { current = normalize(defaultControls); status = "Reset to the defaults."; changed(); } }, "Reset to defaults"),
        el("span", { class: "muted small", role: "status" }, status)),
      el("details", { class: "controls-defaults" }, el("summary", { class: "small" }, atDefaults ? "These are the catalog's defaults" : "Defaults"),
        el("p", { class: "small code" }, defaultsText || "The catalog has no defaults for this environment.")),
    ].filter(Boolean));
  }

  const uid = Math.random().toString(36).slice(2, 8);
  render();
  return {
    get controls() { return tidy(current); },
    destroy() { stopCapture(); root.remove(); },
  };
}

