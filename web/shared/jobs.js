// An export job followed on a page: its state, a progress bar, episodes and steps, its
// message, Cancel while it runs and Download once it succeeded, kept up to date by polling
// GET /api/exports/{id}. The episodes page's export dialog and the datasets page's Export
// section use it; the elements are <prefix> (the block), <prefix>-state, -counts, -bar,
// -fill, -message, -cancel and -download.

export function createJobView({ prefix, api, toast, startButton }) {
  const part = (name) => document.getElementById(name ? `${prefix}-${name}` : prefix);
  let current = null;

  function show(job) {
    current = job;
    part().hidden = false;
    const pct = Math.round(job.progress * 100);
    part("fill").style.width = `${pct}%`;
    part("bar").setAttribute("aria-valuenow", pct);
    const engine = job.options.engine === "beam" ? " on Apache Beam" : "";
    part("state").textContent = `Export #${job.id}${engine}: ${job.state} — ${pct}%`;
    part("counts").textContent =
      `${job.episodes_done} / ${job.episodes_total} episodes · ${job.steps_done} / ${job.steps_total} RLDS steps (one more an episode than its actions)`;
    part("message").textContent = job.message || "";
    const active = job.state === "queued" || job.state === "running";
    part("cancel").hidden = !active;
    if (startButton) startButton.disabled = active;
    part("download").hidden = !job.download_url;
    if (job.download_url) part("download").href = job.download_url;
  }

  async function follow(id) {
    while (true) {
      const job = await api("GET", `/api/exports/${id}`);
      show(job);
      if (!["queued", "running"].includes(job.state)) {
        toast(`Export #${id} ${job.state}.`, job.state === "succeeded" ? "success" : "error");
        return job;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Cancel stops the job shown (``guard``: the page's error handling). */
  function bindCancel(guard) {
    part("cancel").addEventListener("click", guard(async () => {
      show(await api("POST", `/api/exports/${current.id}/cancel`));
    }));
  }

  return { show, follow, bindCancel, current: () => current };
}
