// Episodes page: the bulk bar — what is checked (or all the filter matches) and the actions
// on it (tags, outcome, exclude from exports, delete), run at once or as a background job.

import { filterParams } from "./filters.js";

const $ = (id) => document.getElementById(id);

/** The bulk actions; ``list`` is the page's list: {totalText, load, render, refreshEpisode, writeUrl}. */
export function createBulk({ api, study, state, toast, replay, list }) {
  const plural = (n) => `${n} episode${n === 1 ? "" : "s"}`;

  /** The bulk bar: what is selected, and the actions when something is. */
  function renderBulk() {
    const all = state.allMatching !== null, n = all ? state.total : state.checked.size;
    $("bulk-bar").hidden = state.total === 0 && !n;
    $("bulk-count").textContent = all ? `All ${state.exact ? plural(n) : `${list.totalText()} episodes`} matching selected`
      : n ? `${plural(n)} selected` : "Check rows, or";
    $("bulk-all").textContent = `Select all ${list.totalText()} matching`;
    $("bulk-all").hidden = all || state.total === 0;
    const busy = state.bulkJob !== null;
    for (const id of ["bulk-add", "bulk-remove", "bulk-delete", "bulk-clear", "bulk-set-outcome",
                      "bulk-exclude", "bulk-include"]) $(id).disabled = !n || busy;
    $("check-all").checked = all || (state.items.length > 0 && state.items.every((i) => state.checked.has(i.id)));
    $("check-all").disabled = all;
  }

  function clearSelection() {
    state.allMatching = null; state.checked.clear();
    $("ex-checked-count").textContent = "(0)";
  }

  /** Ask before deleting; resolves true when confirmed (Esc or Cancel: false). */
  function confirmDelete(n) {
    const dialog = $("bulk-dialog");
    $("bulk-dialog-text").textContent = `Delete ${plural(n)} and their recordings? This cannot be undone.`;
    dialog.returnValue = "";
    dialog.showModal();
    $("bulk-dialog-cancel").focus();  // a destructive default is not one Enter away
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    });
  }

  const DONE_WORDS = {
    add_tags: (r, b) => `Tagged ${plural(r.changed)} “${b.tags[0]}” (${r.matched} selected).`,
    remove_tags: (r, b) => `Removed “${b.tags[0]}” from ${plural(r.changed)}.`,
    set_outcome: (r, b) => `Outcome ${b.outcome ?? "unset"} on ${plural(r.changed)} (${r.matched} selected).`,
    exclude: (r) => `Excluded ${plural(r.changed)} from exports.`,
    include: (r) => `Included ${plural(r.changed)} in exports again.`,
    delete: (r) => `Deleted ${plural(r.changed)}${r.skipped_recording ? `; ${r.skipped_recording} still recording, kept` : ""}.`,
  };

  async function bulk(action) {
    const all = state.allMatching !== null;
    let n = all ? state.total : state.checked.size;
    if (!n || state.bulkJob) return;
    if (all && !state.exact && action === "delete") n = await exactCount();
    const body = { action, selection: all ? { filter: state.allMatching } : { episode_ids: [...state.checked] } };
    if (action === "add_tags" || action === "remove_tags") {
      const tag = $("bulk-tag").value.trim();
      if (!tag) { toast("Type a tag first.", "error"); $("bulk-tag").focus(); return; }
      body.tags = [tag];
    } else if (action === "set_outcome") {
      body.outcome = $("bulk-outcome").value || null;
    } else if (action === "delete" && !(await confirmDelete(n))) return;
    const res = await api("POST", `/api/studies/${study}/episodes/bulk`, { json: body });
    // a filter or many episodes: a background job (202) whose progress shows under the bar
    const result = res.state ? await followBulkJob(res) : res;
    // the selection stays for the next action until cleared; deleted episodes leave it
    const kept = state.allMatching;
    if (!result) { await list.load(); state.allMatching = kept; list.render(); return; }
    toast(DONE_WORDS[action](result, body));
    if (action === "delete") {
      if (replay.episode && (all || state.checked.has(replay.episode.id))) { replay.close(); list.writeUrl(); }
      clearSelection();
      state.offset = 0;
    } else if (replay.episode) await list.refreshEpisode();
    await list.load();
    if (action !== "delete") { state.allMatching = kept; list.render(); }
  }

  /** Every episode the list's filters match (the list itself counts up to 10,000). */
  async function exactCount() {
    const p = filterParams();
    p.set("limit", 1); p.set("exact_count", "true");
    return (await api("GET", `/api/studies/${study}/episodes?${p}`)).total;
  }

  function showBulkJob(job) {
    const pct = Math.round(job.progress * 100);
    $("bulk-job").hidden = false;
    $("bulk-job-fill").style.width = `${pct}%`;
    $("bulk-job-bar").setAttribute("aria-valuenow", pct);
    $("bulk-job-state").textContent = `Bulk ${job.action.replace("_", " ")} #${job.id}: ${job.state} — ${pct}%`;
    $("bulk-job-counts").textContent = `${job.done} / ${job.total} episodes`;
  }

  /** Follow a bulk job to its end: its counts when it succeeded, else null (a toast says why). */
  async function followBulkJob(job) {
    state.bulkJob = job; renderBulk();
    try {
      while (true) {
        showBulkJob(job);
        if (!["queued", "running"].includes(job.state)) break;
        await new Promise((r) => setTimeout(r, 300));
        job = await api("GET", `/api/bulk-jobs/${job.id}`);
      }
    } finally { state.bulkJob = null; renderBulk(); }
    if (job.state !== "succeeded") {
      toast(`Bulk action #${job.id} ${job.state}${job.message ? `: ${job.message}` : "."}`, "error");
      return null;
    }
    return { matched: job.total, changed: job.changed, skipped_recording: job.skipped_recording };
  }

  return { renderBulk, clearSelection, bulk };
}
