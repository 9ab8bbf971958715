// Episodes page: the study's tasks (each episode of an environment that lists tasks drew one,
// docs/study-format.md) as the list's Task filter and its Task column. Labels and
// instructions are the designer's text: set as text and titles, never as markup.
import { el } from "../shared/api.js";

/** The filter's value for episodes without a task (server/schemas/episodes.py NO_TASK). */
export const NO_TASK = "-";
const ANY = "";
// "env/task" -> the task of that environment; "task" -> the first environment's task of that id
const known = new Map();

/** The Task filter's options from the study's spec: any task, each task id of its
 *  environments once (its label, and the environments when several list it), no task.
 *  A study without tasks hides the filter. */
export function fillTaskOptions(select, spec) {
  known.clear();
  const byId = new Map();
  for (const env of spec?.environments || []) {
    for (const task of env.tasks || []) {
      known.set(`${env.id}/${task.id}`, task);
      if (!known.has(task.id)) known.set(task.id, task);
      if (!byId.has(task.id)) byId.set(task.id, { task, envs: [] });
      byId.get(task.id).envs.push(env.name || env.id);
    }
  }
  const multi = (spec?.environments || []).length > 1;
  select.replaceChildren(
    el("option", { value: ANY, selected: "" }, "any task"),
    ...[...byId.values()].map(({ task, envs }) => el("option", { value: task.id, title: task.instruction },
      `${task.label || task.id}${multi ? ` (${envs.join(", ")})` : ""}`)),
    el("option", { value: NO_TASK }, "no task"));
  select.size = Math.min(6, select.options.length);
  select.closest("label").hidden = byId.size === 0;
}

/** Select ``value`` (a deep link may name a task the spec no longer lists: it is added; a
 *  study without tasks shows the filter while it is set). */
export function setTask(select, value) {
  if (value && ![...select.options].some((o) => o.value === value)) {
    select.append(el("option", { value }, value));
    select.size = Math.min(6, select.options.length);
  }
  if (value) select.closest("label").hidden = false;  // a filter in force is never hidden
  select.value = value || ANY;
}

/** How the list names a task: its label, else its id. */
export function taskName(envKey, taskKey) {
  const task = known.get(`${envKey}/${taskKey}`) || known.get(taskKey);
  return task?.label || taskKey;
}

/** An episode's Task cell: the task's label or id, the instruction it was shown as title. */
export function taskCell(e) {
  if (!e.task_key) return el("td", { class: "ep-task muted", title: "No task" }, "–");
  return el("td", { class: "ep-task", title: e.instruction || "" }, taskName(e.env_key, e.task_key));
}

/** " · task <name>" when the list is filtered by task (the export panel's selection). */
export function taskNote(select) {
  if (!select.value) return "";
  return select.value === NO_TASK ? " · without a task" : ` · task ${select.selectedOptions[0]?.textContent ?? select.value}`;
}
