// The page of a `narrator pack --web` folder: pick a lesson and a chain or activity, hear it,
// see each word lit as it is heard, tap the tiles of an activity. No daemon: the engine runs
// in the page's AudioWorklet (narrator-web.js).
import { loadPack, WebPlayer } from "./narrator-web.js";

const $ = (id) => document.getElementById(id);
const state = { pack: null, player: null, lessons: new Map(), playing: false };
window.standalone = state;

function say(text) {
  $("status").textContent = text;
}

async function lessonJSON(path) {
  const file = state.pack.manifest.files.find((entry) => entry.path === path);
  return (await fetch(new URL(file.url, state.pack.base))).json();
}

function listPrograms() {
  const lesson = state.pack.lesson($("lesson").value);
  const select = $("program");
  select.replaceChildren();
  for (const chain of lesson.chains) select.append(new Option(`chain ${chain}`, JSON.stringify({ chain })));
  for (const activity of lesson.activities) {
    const states = activity.states && activity.states.length ? activity.states : [null];
    for (const start of states) {
      const label = start ? `activity ${activity.id} (${start})` : `activity ${activity.id}`;
      select.append(new Option(label, JSON.stringify({ activity: activity.id, live: true, ...(start ? { state: start } : {}) })));
    }
  }
}

function showTiles(lesson, program) {
  const tiles = $("tiles");
  tiles.replaceChildren();
  if (!program.activity) return;
  const activity = lesson.activities?.[program.activity];
  const names = new Set();
  for (const step of activity?.steps ?? []) for (const name of step.choices ?? [step.answer]) names.add(name);
  for (const name of names) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = name;
    button.dataset.answer = name;
    button.addEventListener("click", () => state.player && state.player.tap(name).catch((error) => say(error.message)));
    tiles.append(button);
  }
}

async function start() {
  const path = $("lesson").value;
  const program = JSON.parse($("program").value);
  if (state.player) await state.player.close().catch(() => {});
  if (!state.player || state.player.lessonPath !== path) {
    say("Preparing…");
    state.player = await WebPlayer.create(state.pack, path);
    state.player.addEventListener("clipStart", () => ($("words").textContent = ""));
    state.player.addEventListener("word", (event) => {
      const span = document.createElement("span");
      span.textContent = event.detail.text + " ";
      span.className = "heard";
      for (const old of $("words").querySelectorAll(".heard")) old.className = "";
      $("words").append(span);
    });
    state.player.addEventListener("pulse", (event) => {
      for (const button of $("tiles").children) {
        if (`tile-${button.dataset.answer}` === event.detail.target || button.dataset.answer === event.detail.target) {
          button.classList.remove("pulse");
          void button.offsetWidth;
          button.classList.add("pulse");
        }
      }
    });
    state.player.addEventListener("ended", () => {
      state.playing = false;
      say("Done.");
    });
  }
  showTiles(await lessonJSON(path), program);
  $("words").textContent = "";
  await state.player.play({ ...program, seed: Date.now() % 1000000 });
  state.playing = true;
  $("pause").disabled = false;
  say("Playing.");
}

async function main() {
  state.pack = await loadPack("./");
  for (const lesson of state.pack.lessons) $("lesson").append(new Option(lesson.path, lesson.path));
  $("lesson").addEventListener("change", listPrograms);
  listPrograms();
  $("start").addEventListener("click", () => start().catch((error) => say(error.message)));
  $("pause").addEventListener("click", async () => {
    if (!state.player) return;
    if (state.player.paused) {
      await state.player.resume();
      $("pause").textContent = "Pause";
    } else {
      await state.player.pause();
      $("pause").textContent = "Resume";
    }
  });
  say(`${state.pack.lessons.length} lessons. Pick one and press Start.`);
  window.ready = true;
}

main().catch((error) => say(`Could not load the pack: ${error.message}`));
