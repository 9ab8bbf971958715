/* The episode's task (docs/protocol.md, "Tasks"): its instruction, large, above the stage at
   the ready gate and while playing (never over the picture: a phone keeps the frame whole),
   and in the ready gate's overlay; and the choice of a task before an episode where the
   environment lets the player choose (``task_order`` "choice"), by a click or the digit keys
   1..9 shown on each. An instruction is plain text: set as textContent, never as HTML. */
import * as questions from "./questions.js";
import { tapOr } from "./words.js";

const $ = (id) => document.getElementById(id);
const DIGIT = /^(?:Digit|Numpad)([1-9])$/;

/** Show the episode's ``task`` ({id, label, instruction}; null: none, nothing is shown). */
export function showTask(task) {
  const text = (task && task.instruction) || "";
  $("task-text").textContent = text;
  $("task-banner").hidden = !text;
  $("overlay-task").textContent = text ? `Your task: ${text}` : "";
  $("overlay-task").hidden = !text;
  // back in sight when the page was scrolled down (to the choice, the panel after an episode)
  if (text && $("task-banner").getBoundingClientRect().top < 0) $("task-banner").scrollIntoView({ block: "start" });
}

/** Does ``env`` (the hello's environment view) let the player choose its task? */
export const offersChoice = (env) => Boolean(env && env.task_order === "choice" && (env.tasks || []).length);

/** Is the task choice on screen? */
export const choosing = () => !$("task-choice").hidden;

/** The overlay's words while the player chooses. */
export const choosePrompt = () => tapOr("Choose your task below", "Choose your task below — press its number");

/** Ask which of ``env``'s tasks to play; ``onChosen(taskId)`` once one is picked. A question
    (questions.js): guarded when it opens, then its digit keys pick (Enter: a focused one). */
export function chooseTask(env, onChosen) {
  const panel = $("task-choice");
  const buttons = env.tasks.map((task, i) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "btn task-option";
    button.dataset.task = task.id;
    const key = document.createElement("kbd");
    key.textContent = String(i + 1);
    key.hidden = i >= 9; // digit keys 1..9; the rest by a click
    const words = document.createElement("span");
    words.className = "task-words";
    if (task.label) {
      const label = document.createElement("strong");
      label.textContent = task.label;
      words.append(label, " ");
    }
    words.append(task.instruction);
    button.append(key, " ", words);
    button.addEventListener("click", () => { closeChoice(); onChosen(button.dataset.task); });
    const item = document.createElement("li");
    item.append(button);
    return item;
  });
  $("task-list").replaceChildren(...buttons);
  const many = Math.min(env.tasks.length, 9);
  $("task-choice-hint").textContent = tapOr("Tap the task you want to do.",
    `Press ${many > 1 ? `1 to ${many}` : "1"} or click the task you want to do.`);
  panel.hidden = false;
  const keys = (e) => {
    const digit = DIGIT.exec(e.code);
    if (digit) return panel.querySelectorAll(".task-option")[Number(digit[1]) - 1] || null;
    return questions.enterAnswers(panel, () => null)(e);
  };
  questions.ask(panel, { keys, scope: questions.pageKeys(panel) });
  panel.scrollIntoView({ block: "nearest" });
}

export function closeChoice() { $("task-choice").hidden = true; }
