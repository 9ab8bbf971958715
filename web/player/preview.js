/* A designer's preview as a participant (player.html?preview=<study id>): choose where the
   made-up participant comes from (Prolific, MTurk or the direct link), then the player walks
   the study's crowd screens with a TEST participant — consent, instructions, lobby, ready
   gate, play, save dialog, completion page. Every screen says TEST (the banner, the dialogs,
   the code); its episodes are test plays and nothing counts (docs/review.md). */
import { createApi } from "../shared/api.js";
import * as crowd from "./crowd.js";

const $ = (id) => document.getElementById(id);
const api = createApi();

/** The study id of a preview link, or null (a participant's page). */
export function previewOf(params) {
  const id = params.get("preview");
  return id && /^[1-9][0-9]{0,9}$/.test(id) ? id : null;
}

/** Mark every screen TEST: the banner over the page and a line in each dialog. */
export function markTest() {
  crowd.setTestMode(true);
  document.body.classList.add("test-mode");
  $("test-banner").hidden = false;
  for (const node of document.querySelectorAll(".test-mark")) node.hidden = false;
}

/** The landing page: which platform to preview as; ``onJoined(join's answer)`` goes on. */
export async function choosePlatform(studyId, onJoined) {
  const look = await crowd.call("GET", `/api/play/studies/${studyId}`);
  if (!look.ok) {
    crowd.showStatus({ title: "You cannot preview this study",
      text: look.status === 401
        ? "Log in as one of the study's designers, then open the preview again from the study editor."
        : crowd.errorText(look) });
    return;
  }
  const study = look.body.study;
  $("brand-name").textContent = study.name;
  const start = async (platform, typed) => {
    let body;
    try {
      body = await api("POST", `/api/studies/${studyId}/preview-participant`,
        { json: { platform, ...(typed ? { participant_id: typed } : {}) } });
    } catch (error) {
      if (platform === "direct" && [409, 422].includes(error.status)) {
        crowd.pageError(crowd.errorText({ status: error.status, body: error.body }));
        return;
      }
      crowd.showUnreachable(error.message, () => choosePlatform(studyId, onJoined));
      return;
    }
    onJoined(body);
  };
  const buttons = { "preview-prolific": () => start("prolific"), "preview-mturk": () => start("mturk"),
    "preview-direct": () => crowd.askForId(study, "", (id) => start("direct", id)) };
  for (const [id, onClick] of Object.entries(buttons)) {
    $(id).onclick = async () => {
      $(id).disabled = true;
      try { await onClick(); } finally { $(id).disabled = false; }
    };
  }
  $("preview-study").textContent = study.name;
  crowd.show("preview-view");
  $("preview-prolific").focus();
}
