// Episodes page: the return of each listed episode, oldest first, one series per
// environment (an SVG drawn here; a click on a point replays that episode).

import { el } from "../shared/api.js";

const $ = (id) => document.getElementById(id);

/** Return per episode, oldest first: one series (line and dots) per environment, with axes,
 *  drawn into #returns-plot; ``onOpen(id)`` when a point is clicked. */
export function renderPlot(items, onOpen) {
  const box = $("returns-plot");
  $("returns-card").hidden = items.length === 0;
  if (!items.length) { box.replaceChildren(); return; }
  const W = 720, H = 220, L = 56, R = 16, T = 12, B = 40;
  const ys = items.map((e) => e.total_reward);
  let lo = Math.min(0, ...ys), hi = Math.max(...ys);
  if (hi === lo) hi = lo + 1;
  const n = items.length;
  const x = (i) => L + (n === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (n - 1));
  const y = (v) => H - B - ((v - lo) * (H - B - T)) / (hi - lo);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (tag, attrs, text, parent = svg) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    parent.append(node); return node;
  };
  // axes: return (left) with its bounds and zero, episode number (bottom)
  add("line", { x1: L, x2: L, y1: T, y2: H - B, class: "ep-axis" });
  add("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "ep-axis" });
  if (lo < 0) add("line", { x1: L, x2: W - R, y1: y(0), y2: y(0), class: "ep-axis ep-zero" });
  const fmt = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1));
  for (const v of new Set([lo, 0, hi])) add("text", { x: L - 6, y: y(v) + 4, class: "ep-axis-label", "text-anchor": "end" }, fmt(v));
  for (const i of new Set([0, Math.floor((n - 1) / 2), n - 1])) {
    add("text", { x: x(i), y: H - B + 16, class: "ep-axis-label", "text-anchor": "middle" }, String(i + 1));
  }
  add("text", { x: (L + W - R) / 2, y: H - 6, class: "ep-axis-title", "text-anchor": "middle" }, "episode (oldest first)");
  add("text", { x: 12, y: (T + H - B) / 2, class: "ep-axis-title", "text-anchor": "middle",
                transform: `rotate(-90 12 ${(T + H - B) / 2})` }, "return");
  const envs = [...new Set(items.map((e) => e.env_key))];
  envs.forEach((env, k) => {
    const series = add("g", { class: `ep-series ep-series-${k % 6}`, "data-env": env });
    const points = items.map((e, i) => [e, i]).filter(([e]) => e.env_key === env);
    if (points.length > 1) {
      add("polyline", { points: points.map(([e, i]) => `${x(i)},${y(e.total_reward)}`).join(" "), class: "ep-line" }, undefined, series);
    }
    for (const [e, i] of points) {
      const dot = add("circle", { cx: x(i), cy: y(e.total_reward), r: 5, class: `ep-dot ep-dot-${e.status}`,
                                  tabindex: 0, "data-id": e.id }, undefined, series);
      add("title", {}, `${e.env_key} · ${e.status} · return ${e.total_reward.toFixed(2)} · ${e.steps} steps`, dot);
      dot.addEventListener("click", () => onOpen(e.id));
    }
  });
  const legend = el("ul", { class: "ep-legend", "aria-label": "Environments in the plot" },
    envs.map((env, k) => el("li", { class: `ep-series-${k % 6}` }, el("span", { class: "ep-swatch", "aria-hidden": "true" }), env)));
  box.replaceChildren(svg, envs.length > 1 ? legend : "");
}
