// RLDS Studio: the designer's pages (login, studies, study detail, users), on the JSON API.

import { createApi, el, showError, toast } from "../shared/api.js";
import { renderTopbar } from "../shared/topbar.js";
import { initImport, openNewYaml } from "./import.js";
import { copyLink, initLifecycle, lifecycleButtons, rotateLink } from "./lifecycle.js";
import { STATE_LABELS, badge, confirmAction, timeElement } from "./ui.js";
import { initUsers, loadUsers } from "./users.js";
import { confirmLeave, discard, initEditor, loadStudy, save, saveAsVersion, unload, validate } from "../editor/editor.js";
import { needsNewVersion, offerNewVersion, renderVersionButton, renderVersions, versionNote } from "./versions.js";

const $ = (selector) => document.querySelector(selector);
renderTopbar();

const EDITABLE = new Set(["draft", "paused"]);

const state = {
  user: null,
  studies: [],
  selected: null, // the full study (StudyPublic) shown in the detail panel (null: none or new)
};

// --- API --------------------------------------------------------------------------------

/** Call the API; writes carry the CSRF header. Throws ApiError on a non-2xx answer. */
const api = createApi({
  // A 401 anywhere but at login means the session has ended.
  onUnauthorized: (_error, path) => {
    if (path !== "/api/auth/login" && state.user) onSessionLost();
  },
});

// --- session ------------------------------------------------------------------------------

function showView(name) {
  $("#loading").hidden = true;
  $("#login-view").hidden = name !== "login";
  $("#app-view").hidden = name !== "app";
  $("#whoami").hidden = name !== "app";
}

function onSessionLost() {
  state.user = null;
  state.studies = [];
  closeDetail({ force: true });
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
  showView("login");
  showError($("#login-error"), new Error("Your session has ended; log in again."));
}

async function enterApp(user) {
  state.user = user;
  $("#whoami-name").textContent = user.name || user.email;
  $("#whoami-name").title = user.email;
  $("#whoami-role").textContent = user.role;
  $("#users-section").hidden = user.role !== "admin";
  showView("app");
  await loadStudies();
  const wanted = Number(new URLSearchParams(location.hash.slice(1)).get("study"));
  if (wanted) await openStudy(wanted, { quiet: true });
  if (user.role === "admin") await loadUsers();
}

async function login(event) {
  event.preventDefault();
  const form = event.target;
  const email = form.email.value.trim();
  const password = form.password.value;
  if (!email || !password) {
    showError($("#login-error"), new Error("Enter your email and password."));
    return;
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const out = await api("POST", "/api/auth/login", { json: { email, password } });
    if (!document.cookie.split("; ").some((c) => c.startsWith("studio_csrf="))) {
      // The browser dropped the cookies: say why instead of failing silently later.
      throw new Error(cookieRefused(out.secure_cookies));
    }
    showError($("#login-error"), null);
    form.reset();
    await enterApp(out.user);
  } catch (error) {
    showError($("#login-error"), error);
    form.password.select();
  } finally {
    button.disabled = false;
  }
}

/** Why the browser kept no login cookie, and what the operator can do about it. */
function cookieRefused(secure) {
  if (secure && window.location.protocol === "http:") {
    return "Your browser refused the login cookie: this server sends Secure cookies "
      + "(production), which browsers keep over HTTPS only, and this page is plain HTTP. "
      + "Open it over HTTPS, or for a trial on a private network set "
      + "STUDIO_INSECURE_COOKIES=true (docs/deploy.md).";
  }
  return "Your browser refused the login cookie. Allow cookies for this site and try again.";
}

async function logout() {
  if (!(await confirmLeave(confirmAction))) return;
  try {
    await api("POST", "/api/auth/logout");
  } catch (error) {
    if (error.status !== 401) {
      toast(error.message, "error");
      return;
    }
  }
  state.user = null;
  state.studies = [];
  closeDetail({ force: true });
  showError($("#login-error"), null);
  showView("login");
  $("#login-email").focus();
}

// --- study list ---------------------------------------------------------------------------

async function loadStudies() {
  const filter = $("#state-filter").value;
  try {
    state.studies = await api("GET", `/api/studies${filter ? `?state=${filter}` : ""}`);
    showError($("#list-error"), null);
  } catch (error) {
    showError($("#list-error"), error);
    return;
  }
  renderStudies();
}

function renderStudies() {
  const filter = $("#state-filter").value;
  const body = $("#studies-body");
  body.replaceChildren(
    ...state.studies.map((study) => {
      const selected = state.selected && state.selected.id === study.id;
      const envs = study.kind === "feedback" ? "— (judges recorded episodes)" : study.environments.map((env) => env.name).join(", ");
      return el(
        "tr",
        { class: selected ? "selected" : "", dataset: { studyId: study.id } },
        el("td", {},
          el("button", {
            type: "button",
            class: "link-button",
            "aria-current": selected ? "true" : undefined,
            onclick: () => openStudy(study.id),
          }, study.name),
          versionNote(study, openStudy)),
        el("td", {}, badge(study.state)),
        el("td", { title: study.environments.map((env) => env.source_ref).join(", ") }, envs),
        el("td", {}, timeElement(study.updated_at)),
      );
    }),
  );
  const empty = state.studies.length === 0;
  $("#studies-table").hidden = empty;
  $("#studies-empty").hidden = !empty;
  if (empty) {
    $("#studies-empty-title").textContent = filter
      ? `No ${STATE_LABELS[filter].toLowerCase()} studies`
      : "No studies yet — import a study file or create one";
    $("#studies-empty-hint").hidden = Boolean(filter);
    $("#studies-empty-actions").hidden = Boolean(filter);
  }
}

// --- creating studies ---------------------------------------------------------------------

/** The form editor for a new study (saved as a draft). */
async function openNewStudy() {
  if (!state.user || !(await confirmLeave(confirmAction))) return;
  state.selected = null;
  showError($("#detail-error"), null);
  $("#detail").hidden = false;
  $("#detail-name").textContent = "New study";
  $("#detail-state").replaceWith(Object.assign(el("span", { class: "badge badge-draft" }, "Not saved"), { id: "detail-state" }));
  $("#detail-meta").textContent = "Saving creates it as a draft; you can test-play it before activating.";
  renderVersions({ state: "draft" }, openStudy);
  renderVersionButton({ state: "draft" }, saveAsNewVersion);
  $("#lifecycle").replaceChildren();
  $("#permalink").hidden = true;
  $("#study-links").hidden = true;
  $("#edit-hint").textContent = "Fill in the study, add environments from the catalog, validate and save.";
  if (location.hash) history.replaceState(null, "", location.pathname);
  renderStudies();
  await loadStudy(null, "", true);
  document.querySelector("#editor-form input")?.focus();
}

// --- study detail -------------------------------------------------------------------------

async function openStudy(id, { quiet = false, asked = false } = {}) {
  if (!asked && state.selected?.id !== id && !(await confirmLeave(confirmAction))) return;
  let study;
  let yaml;
  try {
    [study, yaml] = await Promise.all([
      api("GET", `/api/studies/${id}`),
      api("GET", `/api/studies/${id}/export`),
    ]);
  } catch (error) {
    if (!quiet && error.status !== 401) toast(error.message, "error");
    return;
  }
  showError($("#detail-error"), null);
  await renderDetail(study, yaml);
  history.replaceState(null, "", `#study=${id}`);
  renderStudies();
}

async function closeDetail({ force = false } = {}) {
  if (!force && !(await confirmLeave(confirmAction))) return;
  unload();
  state.selected = null;
  $("#detail").hidden = true;
  if (location.hash) history.replaceState(null, "", location.pathname);
  renderStudies();
}

async function renderDetail(study, yaml) {
  state.selected = study;
  $("#detail").hidden = false;
  $("#detail-name").textContent = study.name;
  $("#detail-state").replaceWith(Object.assign(badge(study.state), { id: "detail-state" }));
  const envs = study.environments.length, judged = study.kind === "feedback";
  $("#detail-meta").replaceChildren(
    judged ? "Feedback study (judges recorded episodes) · created " : `${envs} environment${envs === 1 ? "" : "s"} · created `,
    timeElement(study.created_at),
    " · updated ",
    timeElement(study.updated_at),
  );
  renderVersions(study, openStudy);
  renderVersionButton(study, saveAsNewVersion);
  $("#lifecycle").replaceChildren(...lifecycleButtons(study));

  const linkShown = Boolean(study.permalink_token) && ["active", "paused"].includes(study.state);
  $("#permalink").hidden = !linkShown;
  if (linkShown) $("#permalink-url").value = permalinkUrl(study);

  $("#study-links").hidden = false;
  Object.assign($("#test-play"), { href: `/player.html?study=${study.id}`, hidden: judged }); // nothing to play
  $("#preview-participant").href = `/player.html?preview=${study.id}`;
  $("#episodes-link").href = `/episodes.html?study=${study.id}`;
  $("#participants-link").href = `/participants.html?study=${study.id}`;
  $("#live-link").href = `/live.html?study=${study.id}`;
  $("#download-yaml").href = `/api/studies/${study.id}/export`;
  $("#edit-hint").textContent = EDITABLE.has(study.state)
    ? "Edit the study with the form or as YAML, validate and save; the format is in docs/study-format.md."
    : study.state === "active"
      ? "An active study cannot be edited: pause it first."
      : "A closed study cannot be edited.";
  if (yaml !== undefined) await loadStudy(study, yaml, EDITABLE.has(study.state));
}

function permalinkUrl(study) {
  return `${location.origin}/player.html?token=${encodeURIComponent(study.permalink_token)}`;
}

/** Apply a study returned by a write: refresh the panel (and its YAML) and the list. */
async function refreshAfterWrite(study) {
  let yaml;
  try {
    yaml = await api("GET", `/api/studies/${study.id}/export`);
  } catch {
    yaml = undefined;
  }
  await renderDetail(study, yaml);
  await loadStudies();
}

async function withDetailErrors(work) {
  const buttons = document.querySelectorAll("#detail button");
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await work();
    showError($("#detail-error"), null);
  } catch (error) {
    showError($("#detail-error"), error);
    if (needsNewVersion(error)) offerNewVersion($("#detail-error"));
    if (error.status === 404) await loadStudies();
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

/** Save the editor's study; a new one is created as a draft and opened. */
function saveSpec() {
  return withDetailErrors(() => save($("#detail-error")));
}

/** Save the editor's study as a new draft linked to the open one, and open it. */
function saveAsNewVersion() {
  return withDetailErrors(async () => {
    const created = await saveAsVersion();
    await openDraft(created.id, { asked: true });
    toast(`Saved as “${created.name}”, a new draft version.`, "success");
  });
}

/** Open a new draft: the list shows it (a state filter that hides drafts is cleared). */
async function openDraft(id, options) {
  if ($("#state-filter").value && $("#state-filter").value !== "draft") $("#state-filter").value = "";
  await loadStudies();
  await openStudy(id, options);
}

async function afterSave(study, created) {
  if (created) {
    toast(`Created the draft “${study.name}”.`, "success");
    await openDraft(study.id, { asked: true });
  } else {
    await refreshAfterWrite(study);
    toast("Saved.", "success");
  }
}

// --- keyboard shortcuts -------------------------------------------------------------------

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || !state.user) return;
  const anyDialogOpen = document.querySelector("dialog[open]");
  if (event.key === "Escape") {
    // Open dialogs close themselves on Escape.
    if (!anyDialogOpen && !$("#detail").hidden) closeDetail();
    return;
  }
  const target = event.target;
  const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
  if (typing || anyDialogOpen) return;
  if (event.key === "n") {
    event.preventDefault();
    openNewStudy();
  } else if (event.key === "/") {
    event.preventDefault();
    $("#state-filter").focus();
  }
}

// --- wiring -------------------------------------------------------------------------------

function wire() {
  $("#login-form").addEventListener("submit", login);
  $("#logout-btn").addEventListener("click", logout);
  $("#state-filter").addEventListener("change", loadStudies);
  $("#new-study-btn").addEventListener("click", openNewStudy);
  $("#new-yaml-btn").addEventListener("click", openNewYaml);
  $("#import-file-btn").addEventListener("click", () => $("#import-file").click());
  $("#studies-empty").addEventListener("click", (event) => {
    const action = event.target.closest("[data-action]")?.dataset.action;
    if (action === "new-study") openNewStudy();
    if (action === "import-file") $("#import-file").click();
  });
  $("#detail-close").addEventListener("click", () => closeDetail());
  $("#copy-link").addEventListener("click", copyLink);
  $("#rotate-link").addEventListener("click", rotateLink);
  $("#save-spec").addEventListener("click", saveSpec);
  $("#validate-btn").addEventListener("click", () => withDetailErrors(validate));
  $("#reset-spec").addEventListener("click", () => {
    discard();
    showError($("#detail-error"), null);
  });
  initEditor({ api, onSaved: afterSave });
  initLifecycle({
    api,
    selected: () => state.selected,
    withDetailErrors,
    refreshAfterWrite,
    deleted: async () => {
      await closeDetail({ force: true });
      await loadStudies();
    },
  });
  initImport({ api, signedIn: () => Boolean(state.user), opened: (study) => openDraft(study.id) });
  initUsers({ api, confirmAction, currentUser: () => state.user });
  document.addEventListener("keydown", onKey);
}

async function start() {
  wire();
  let user = null;
  try {
    user = await api("GET", "/api/auth/me");
  } catch (error) {
    if (error.status !== 401) showError($("#login-error"), error);
  }
  if (user) {
    await enterApp(user);
  } else {
    showView("login");
    $("#login-email").focus();
  }
}

start();
