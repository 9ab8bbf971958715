// The live dashboard's part of a feedback study: judgements per minute over the last ten
// minutes (a column a minute, the newest on the right), progress to the quota, agreement so
// far, and the preference dataset's downloads (../participants/judging.js).

import { el } from "../shared/api.js";
import { downloads, percent } from "../participants/judging.js";

const $ = (id) => document.getElementById(id);
let shown = null; // the judgement count the downloads were drawn for (kept between ticks)

function rate(perMinute) {
  const most = Math.max(1, ...perMinute);
  const last = perMinute.length - 1;
  return perMinute.map((n, i) => {
    const ago = last - i;
    const bar = el("span", { "data-minute": String(ago), title: `${n} judgement${n === 1 ? "" : "s"} ${ago ? `${ago}–${ago + 1} min ago` : "in the last minute"}` });
    bar.style.height = `${(100 * n) / most}%`;
    return bar;
  });
}

/** Draw the judging card from the snapshot's ``feedback`` (``counts`` makes dt/dd pairs). */
export function renderJudging(study, f, counts) {
  $("rate").replaceChildren(...rate(f.per_minute));
  $("rate").setAttribute("aria-label", `judgements per minute, oldest first: ${f.per_minute.join(", ")}`);
  $("rate-mean").textContent = `· ${f.rate_per_minute.toFixed(1)} a minute`;
  const peak = Math.max(0, ...f.per_minute);
  $("rate-peak").textContent = peak ? `tallest: ${peak}` : "";
  const q = f.quota;
  $("judging-quota").textContent = q.total ? `${q.counted} / ${q.total}${q.reached ? " · reached" : ""}` : `${q.counted} (no quota)`;
  $("judging-progress").hidden = !q.total;
  if (q.total) { $("judging-progress").max = q.total; $("judging-progress").value = Math.min(q.counted, q.total); }
  $("judging-counts").replaceChildren(...counts([
    ["judgements", f.answered],
    ["in the last minute", f.per_minute[f.per_minute.length - 1] ?? 0],
    ["agreement", f.pairs ? `${percent(f.agreement)} of ${f.pairs} pairs` : "– (no item has two judges yet)"],
    ["active judges", f.participants.active],
  ]));
  if (shown !== f.answered) { // redrawn only when the count changes: a click is never lost
    shown = f.answered;
    $("judging-downloads").replaceChildren(downloads(study, f.answered));
  }
}
