// The read-along page: any chain or activity of the daemon's library, driven only by the
// daemon's WebSocket events (docs/read-along.md).
//
// Address: /read-along.html?lesson=L&chain=C (or &activity=A, [&state=S]) [&seed=N] #token=T. Without a lesson
// it plays the library's picture-dictionary popup, else its first program; the menu at the top
// (the daemon's "library" listing) picks another.
//
// For what it plays it first asks for the cue schedule ("cues"), only as a book of each clip's
// words and sentences and of the pulse targets; then it plays ("play") and lays out a clip's text
// when that clip's clipStart is heard (a clip the schedule did not show, such as the feedback
// after an answer, is laid out word by word as its cues come; a clip without words shows its
// transcript, the program's "texts", highlighted as a whole while it plays). Each "sentence" cue
// highlights its sentence (and says it to a screen reader, politely), each "word" cue turns its
// word red, each "pulse" cue pulses the tile of its target. In an activity the answers are tiles
// too: a tap on one sends "tap", and a target the program links to an answer ("pulseAnswers":
// the tile-see a step answered "see" pulses in its hints) pulses that answer's tile. The
// controls: pause/play, a tap on a word (said on its own, then back where playback was), replay,
// close, the music volume and the speed (docs/controls.md).
"use strict";

const query = new URLSearchParams(location.search);
const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const seed = /^[0-9]{1,9}$/.test(query.get("seed") || "") ? Number(query.get("seed")) : 0;
const reducedMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : { matches: false };

const body = document.body;
const text = document.getElementById("text");
const tiles = document.getElementById("tiles");
const now = document.getElementById("now");
const title = document.getElementById("title");
const status = document.getElementById("status");
const menu = document.getElementById("program");
const stateMenu = document.getElementById("state");
const pauseButton = document.getElementById("pause");
const speedChoice = document.getElementById("speed");

// What the page shows and knows, for people and for tests.
const readAlong = {
  state: "connecting", program: null, current: null, sentence: null, playing: null, events: 0, lastEvent: null,
  log: [], replies: {}, library: [], clipsStarted: [], pulses: [], taps: [], error: null,
};
window.readAlong = readAlong;

let socket = null;
let nextId = 1;
let sheetId = null;
// The schedule's book: clip → {words: Map(index → {text, frame}), sentences: Map(index → {frame, endFrame, text})}.
let book = new Map();
// The clip being heard: {clip, element, words: Map(index → button), sentences: Map(index → span), open: span or null}.
let block = null;
let pendingClip = null;
const tileByName = new Map();
// The program's transcripts of the clips it plays that have no words (clip → text), and the
// pulse targets that are an answer's tile (target → answer): from its "program" listing.
let texts = new Map();
let pulseAnswers = new Map();
// For an activity, the cue schedules of its lesson's chains, asked for one after another while
// it plays: they add to the book the clips the activity's own schedule does not reach (the
// feedback after an answer, the next step's prompts).
let bookQueue = [];
const bookIds = new Set();
const maxBookChains = 32;

function setState(state, note) {
  readAlong.state = state;
  body.dataset.state = state;
  body.classList.toggle("closed", state === "closed");
  status.textContent = note || state;
  if (state === "error") readAlong.error = note || "error";
}

function send(request) {
  request.id = request.id || "r" + nextId++;
  socket.send(JSON.stringify(request));
  return request.id;
}

// MARK: the menu

function programLabel(program) {
  return program.chain !== undefined ? "chain " + program.chain : "activity " + program.activity;
}

function sameProgram(a, b) {
  return a.lesson === b.lesson && a.chain === b.chain && a.activity === b.activity;
}

function buildMenu() {
  menu.textContent = "";
  // Until something is chosen the page plays nothing: the menu says what to do.
  const placeholder = document.createElement("option");
  placeholder.value = "";
  placeholder.textContent = readAlong.library.length ? "— choose what to play —" : "— no lesson in the library —";
  placeholder.disabled = true;
  menu.appendChild(placeholder);
  const groups = new Map();
  readAlong.library.forEach((program, n) => {
    if (!groups.has(program.lesson)) {
      const group = document.createElement("optgroup");
      group.label = program.lesson;
      groups.set(program.lesson, group);
      menu.appendChild(group);
    }
    const option = document.createElement("option");
    option.value = String(n);
    if (program.problem !== undefined) {
      // The whole problem in the tooltip; the menu keeps its width.
      option.textContent = "cannot be read: " + (program.problem.length > 60 ? program.problem.slice(0, 59) + "…" : program.problem);
      option.title = program.problem;
      option.disabled = true;
    } else {
      option.textContent = programLabel(program);
    }
    groups.get(program.lesson).appendChild(option);
  });
}

// The program the address names; null when it names none (the page opens on its menu).
function programFromAddress() {
  const lesson = query.get("lesson");
  if (lesson) {
    const wanted = { lesson, chain: query.get("chain") || undefined, activity: query.get("activity") || undefined };
    if (wanted.chain === undefined && wanted.activity === undefined) {
      // A lesson alone: its first activity, else its first chain.
      const own = readAlong.library.filter((p) => p.lesson === lesson && p.problem === undefined);
      return own.find((p) => p.activity !== undefined) || own[0] || wanted;
    }
    return readAlong.library.find((p) => sameProgram(p, wanted)) || wanted;
  }
  return null;
}

function showStates(program) {
  const states = (program.states || []).filter((s) => s !== "default");
  stateMenu.textContent = "";
  stateMenu.hidden = states.length === 0;
  for (const name of states) {
    const option = document.createElement("option");
    option.value = option.textContent = name;
    stateMenu.appendChild(option);
  }
  if (query.get("state") && states.includes(query.get("state"))) stateMenu.value = query.get("state");
}

function choose(program) {
  if (!program) {
    menu.value = "";
    if (!readAlong.library.some((p) => p.problem === undefined)) setState("error", "the library has no lesson to play");
    else setState("choosing", "choose what to play, then ▶ Start");
    return;
  }
  const index = readAlong.library.findIndex((p) => sameProgram(p, program));
  if (index >= 0) menu.value = String(index);
  showStates(program);
  prepare(program);
}

menu.addEventListener("change", () => {
  const program = readAlong.library[Number(menu.value)];
  if (!program) return;
  const address = new URLSearchParams({ lesson: program.lesson });
  address.set(program.chain !== undefined ? "chain" : "activity", program.chain !== undefined ? program.chain : program.activity);
  history.replaceState(null, "", "?" + address.toString() + location.hash);
  showStates(program);
  prepare(program);
});
document.getElementById("start").addEventListener("click", () => {
  const chosen = readAlong.program || readAlong.library[Number(menu.value)];
  if (menu.value !== "" && chosen) prepare(chosen);
});

// MARK: laying out

function clearView() {
  text.textContent = "";
  tiles.textContent = "";
  tileByName.clear();
  now.textContent = "";
  block = null;
  pendingClip = null;
  highlight(null);
  readAlong.sentence = null;
  readAlong.clipsStarted = [];
  readAlong.pulses = [];
  readAlong.taps = [];
  readAlong.error = null;
}

// The tile a pulse target shows as: its answer's, when the program links it to one.
function targetTile(target) {
  return tile(pulseAnswers.get(target) || target, false);
}

function tile(name, answer) {
  let element = tileByName.get(name);
  if (element && (!answer || element.tagName === "BUTTON")) return element;
  const replaced = element;
  if (answer) {
    element = document.createElement("button");
    element.type = "button";
    element.className = "tile answer";
    element.setAttribute("aria-label", "Answer " + name);
    element.addEventListener("click", () => {
      if (readAlong.playing) readAlong.tapRequest = send({ op: "tap", request: readAlong.playing, answer: name });
    });
  } else {
    element = document.createElement("span");
    element.className = "tile";
    element.setAttribute("role", "img");
    element.setAttribute("aria-label", name);
  }
  element.textContent = name;
  element.dataset.target = name;
  element.dataset.pulses = "0";
  if (replaced) tiles.replaceChild(element, replaced);
  else tiles.appendChild(element);
  tileByName.set(name, element);
  return element;
}

function wordButton(clip, index, word) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "word";
  button.textContent = word;
  button.dataset.key = clip + "/" + index;
  button.setAttribute("aria-label", "Say “" + word + "”");
  button.addEventListener("click", () => {
    // Said on its own, then back where playback was: paused stays paused.
    if (readAlong.playing) send({ op: "say", request: readAlong.playing, clip, word: index, then: readAlong.state === "paused" ? "pause" : "resume" });
  });
  return button;
}

// A new block for `clip`, with the words the book has for it (in sentences where it has them).
function openBlock(clip) {
  if (block) block.element.classList.add("past");
  // The text of what is being heard, and of the clip before it: older clips go.
  while (text.children.length > 1) text.removeChild(text.firstChild);
  const element = document.createElement("p");
  element.className = "clip";
  element.dataset.clip = clip;
  text.appendChild(element);
  block = { clip, element, words: new Map(), sentences: new Map(), open: null, transcript: null };
  const known = book.get(clip);
  if (!(known && known.words.size > 0) && texts.has(clip)) {
    // No words to follow: the transcript, one span, highlighted while the clip plays.
    const span = document.createElement("span");
    span.className = "transcript reading";
    span.textContent = texts.get(clip);
    element.appendChild(span);
    block.transcript = span;
    now.textContent = span.textContent;
  } else if (known) {
    const sentences = [...known.sentences.entries()].sort((a, b) => a[1].frame - b[1].frame);
    const words = [...known.words.entries()].sort((a, b) => a[0] - b[0]);
    for (const [index, word] of words) {
      const sentence = sentences.find(([, s]) => word.frame >= s.frame && word.frame < s.endFrame);
      let parent = element;
      if (sentence) {
        parent = block.sentences.get(sentence[0]) || addSentence(sentence[0]);
      }
      addWord(parent, clip, index, word.text);
    }
  }
  scrollTo(element);
}

function addSentence(index) {
  const span = document.createElement("span");
  span.className = "sentence";
  span.dataset.key = block.clip + "/" + index;
  if (block.element.childNodes.length > 0) block.element.appendChild(document.createTextNode(" "));
  block.element.appendChild(span);
  block.sentences.set(index, span);
  return span;
}

function addWord(parent, clip, index, word) {
  if (parent.childNodes.length > 0) parent.appendChild(document.createTextNode(" "));
  const button = wordButton(clip, index, word);
  parent.appendChild(button);
  block.words.set(index, button);
  return button;
}

function scrollTo(element) {
  if (element && element.scrollIntoView) element.scrollIntoView({ block: "nearest", behavior: reducedMotion.matches ? "auto" : "smooth" });
}

function highlight(button) {
  const old = readAlong.current && text.querySelector(".word.heard");
  if (old) old.classList.remove("heard");
  readAlong.current = button ? button.dataset.key : null;
  body.dataset.current = readAlong.current || "";
  if (button) {
    button.classList.add("heard");
    scrollTo(button);
  }
}

function highlightSentence(span, words) {
  const old = text.querySelector(".sentence.reading");
  if (old) old.classList.remove("reading");
  readAlong.sentence = span ? span.dataset.key : null;
  if (span) {
    span.classList.add("reading");
    now.textContent = words;
  }
}

// The block of what is being heard for `clip`: the open one, or one opened now (a clip without
// words opens none until its first word or sentence comes).
function blockFor(clip) {
  if (!block || block.clip !== clip || pendingClip === clip) {
    pendingClip = null;
    openBlock(clip);
  }
  return block;
}

function onSentence(event) {
  const current = blockFor(event.clip);
  const span = current.sentences.get(event.index) || addSentence(event.index);
  current.open = span;
  highlightSentence(span, event.text);
}

function onWord(event) {
  if (pendingClip !== event.clip && !(block && block.clip === event.clip)) {
    // A word of a clip on the page but not the one being heard (a tap on a word of the clip
    // before): highlighted where it is.
    const shown = text.querySelectorAll(".word");
    const key = event.clip + "/" + event.index;
    const found = [...shown].reverse().find((b) => b.dataset.key === key);
    if (found) { highlight(found); return; }
  }
  const current = blockFor(event.clip);
  let button = current.words.get(event.index);
  if (!button) {
    // Not in the book (a clip the schedule did not show): laid out as it is heard, in the
    // sentence being heard if there is one.
    const parent = current.open && current.open.isConnected ? current.open : current.element;
    button = addWord(parent, event.clip, event.index, event.text);
  }
  highlight(button);
}

function onPulse(event) {
  readAlong.pulses.push(event.target + "@" + event.frame);
  const element = targetTile(event.target);
  element.classList.remove("pulsing");
  void element.offsetWidth;  // restarts the animation of a tile pulsed again
  element.classList.add("pulsing");
  element.dataset.pulses = String(Number(element.dataset.pulses) + 1);
  clearTimeout(element.pulseTimer);
  element.pulseTimer = setTimeout(() => element.classList.remove("pulsing"), 1300);
}

function onTap(event) {
  readAlong.taps.push(event.answer + ":" + event.result);
  const element = tileByName.get(event.answer);
  if (!element || (event.result !== "correct" && event.result !== "wrong")) return;
  element.classList.add(event.result);
  setTimeout(() => element.classList.remove(event.result), 1500);
}

// MARK: playing

function prepare(program) {
  if (readAlong.playing) send({ op: "stop", request: readAlong.playing });
  readAlong.playing = null;
  readAlong.program = program;
  clearView();
  book = new Map();
  bookIds.clear();
  bookQueue = program.activity === undefined ? [] : readAlong.library
    .filter((p) => p.lesson === program.lesson && p.chain !== undefined)
    .slice(0, maxBookChains)
    .map((p) => ({ op: "cues", lesson: p.lesson, chain: p.chain, seed }));
  texts = new Map(Object.entries(program.texts || {}));
  pulseAnswers = new Map(Object.entries(program.pulseAnswers || {}));
  title.textContent = program.lesson + " · " + programLabel(program);
  for (const answer of program.answers || []) tile(answer, true);
  for (const sound of program.sounds || []) tile(sound, true);
  sheetId = "sheet" + nextId++;
  setState("loading", "loading " + program.lesson + "…");
  send(Object.assign({ id: sheetId, op: "cues", seed }, request(program)));
}

function request(program) {
  const fields = { lesson: program.lesson };
  if (program.chain !== undefined) fields.chain = program.chain;
  else {
    fields.activity = program.activity;
    if (!stateMenu.hidden && stateMenu.value) fields.state = stateMenu.value;
  }
  return fields;
}

function note(event) {
  let clip = book.get(event.clip);
  if (!clip) {
    clip = { words: new Map(), sentences: new Map() };
    book.set(event.clip, clip);
  }
  if (event.type === "word") clip.words.set(event.index, { text: event.text, frame: event.frame });
  else clip.sentences.set(event.index, { frame: event.frame, endFrame: event.endFrame, text: event.text });
}

function nextBook() {
  const next = bookQueue.shift();
  if (!next) return;
  next.id = "book" + nextId++;
  bookIds.add(next.id);
  send(next);
}

function play() {
  highlight(null);
  readAlong.playing = send(Object.assign({ op: "play", seed }, request(readAlong.program)));
  setState("starting");
}

// A cue's event has its cue's type ("word", "clipStart", the activity's "close" …); the
// playback's own events have types no cue has (docs/events.md).
function onEvent(event) {
  readAlong.events += 1;
  readAlong.lastEvent = event;
  if (event.id === "library") {
    if (event.type === "program") readAlong.library.push(event);
    if (event.type === "finished" || event.type === "error") {
      buildMenu();
      choose(programFromAddress());
    }
    return;
  }
  if (event.id === sheetId) {
    if (event.type === "word" || event.type === "sentence") note(event);
    if (event.type === "pulse") targetTile(event.target);
    if (event.type === "finished") { play(); nextBook(); }
    if (event.type === "error") setState("error", event.message);
    return;
  }
  if (bookIds.has(event.id)) {
    if (event.type === "word" || event.type === "sentence") note(event);
    if (event.type === "finished" || event.type === "error" || event.type === "stopped") { bookIds.delete(event.id); nextBook(); }
    return;
  }
  if (event.id !== readAlong.playing) {
    // The answer to a control: one terminal event each.
    readAlong.replies[event.id] = event.type;
    if (event.type === "error") status.textContent = event.message;
    return;
  }
  readAlong.log.push(event.type + (event.frame === null || event.frame === undefined ? "" : "@" + event.frame));
  switch (event.type) {
    case "start":
      setState("playing");
      pauseButton.textContent = "❚❚ Pause";
      pauseButton.setAttribute("aria-label", "Pause");
      if (Number(speedChoice.value) !== 1) readAlong.speedRequest = send({ op: "speed", request: readAlong.playing, speed: Number(speedChoice.value) });
      break;
    case "paused":
      highlight(null);
      setState("paused", "paused: ▶ goes on");
      pauseButton.textContent = "▶ Play";
      pauseButton.setAttribute("aria-label", "Play");
      break;
    case "resumed":
      setState("playing");
      pauseButton.textContent = "❚❚ Pause";
      pauseButton.setAttribute("aria-label", "Pause");
      break;
    case "seeked": highlight(null); break;
    case "clipStart":
      highlight(null);
      readAlong.clipsStarted.push(event.clip);
      // A clip with words in the book, or with a transcript, is laid out now; one without
      // waits for its first word.
      if ((book.has(event.clip) && book.get(event.clip).words.size > 0) || texts.has(event.clip)) openBlock(event.clip);
      else pendingClip = event.clip;
      break;
    case "clipEnd":
      highlight(null);
      highlightSentence(null);
      if (block && block.clip === event.clip && block.transcript) block.transcript.classList.remove("reading");
      break;
    case "sentence": onSentence(event); break;
    case "word": onWord(event); break;
    case "pulse": onPulse(event); break;
    case "tap": onTap(event); break;
    case "feedback": status.textContent = event.kind === "correct" ? "right!" : "try again"; break;
    case "close": setState("closed"); break;
    case "finished":
      highlight(null);
      if (readAlong.state !== "closed") setState("ended", "ended: replay to hear it again");
      readAlong.playing = null;
      break;
    case "stopped": highlight(null); setState("ended", "stopped: " + (event.reason || "")); readAlong.playing = null; break;
    case "error": highlight(null); setState("error", event.message); readAlong.playing = null; break;
  }
}

// MARK: controls

pauseButton.addEventListener("click", () => {
  if (!readAlong.playing) return;
  send({ op: readAlong.state === "paused" ? "resume" : "pause", request: readAlong.playing });
});
document.getElementById("volume").addEventListener("change", (input) => {
  readAlong.volumeRequest = send({ op: "volume", bus: "music", gain: Number(input.target.value) });
});
// The speed applies to what plays now and to what plays next (each playback is set to it at its start).
speedChoice.addEventListener("change", () => {
  if (readAlong.playing) readAlong.speedRequest = send({ op: "speed", request: readAlong.playing, speed: Number(speedChoice.value) });
});
document.getElementById("replay").addEventListener("click", () => {
  if (readAlong.playing) send({ op: "replay", request: readAlong.playing });
  else if (readAlong.program) prepare(readAlong.program);
});
document.getElementById("close").addEventListener("click", () => {
  if (readAlong.playing) send({ op: "close", request: readAlong.playing });
  else setState("closed");
});

socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws?token=" + encodeURIComponent(token));
socket.onopen = () => { setState("loading", "reading the library…"); send({ id: "library", op: "library" }); };
socket.onmessage = (message) => onEvent(JSON.parse(message.data));
socket.onclose = () => { if (readAlong.state !== "closed") setState("disconnected", "disconnected from the daemon"); };
