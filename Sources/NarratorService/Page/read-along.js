// The picture-dictionary popup, driven only by the daemon's WebSocket events.
//
// Address: /?lesson=L&activity=A#token=T (defaults: picture-dictionary.json, word-popup).
// It asks for the activity's cue schedule ("cues") to lay out the words, then plays it
// ("play"); each "word" cue turns its word red when the daemon says it is heard. Replay and
// close are requests of the same protocol, and so are the controls: the pause/play button,
// a tap on a word (it is said on its own, red while heard, then playback goes back where it
// was), and the music volume slider (docs/controls.md).
"use strict";

const query = new URLSearchParams(location.search);
const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const lesson = query.get("lesson") || "picture-dictionary.json";
const activity = query.get("activity") || "word-popup";

const body = document.body;
const headword = document.getElementById("headword");
const definition = document.getElementById("definition");
const status = document.getElementById("status");

// What the page shows and knows, for people and for tests.
const readAlong = { state: "connecting", current: null, playing: null, events: 0, lastEvent: null, log: [], replies: {} };
window.readAlong = readAlong;

let socket = null;
let nextId = 1;
const spans = new Map();   // "clip/index" -> span
const sheetWords = [];

function setState(state, note) {
  readAlong.state = state;
  body.dataset.state = state;
  body.classList.toggle("closed", state === "closed");
  status.textContent = note || state;
}

function highlight(key) {
  if (readAlong.current !== null && spans.has(readAlong.current)) spans.get(readAlong.current).classList.remove("heard");
  readAlong.current = key;
  if (key !== null && spans.has(key)) spans.get(key).classList.add("heard");
  body.dataset.current = key === null ? "" : key;
}

function send(request) {
  request.id = request.id || "r" + nextId++;
  socket.send(JSON.stringify(request));
  return request.id;
}

function layOut() {
  headword.textContent = "";
  definition.textContent = "";
  spans.clear();
  sheetWords.forEach((word, n) => {
    const span = document.createElement("span");
    span.className = "word";
    span.textContent = word.text;
    span.dataset.key = word.clip + "/" + word.index;
    span.addEventListener("click", () => {
      // Said on its own, then back where playback was: paused stays paused.
      if (readAlong.playing) send({ op: "say", request: readAlong.playing, clip: word.clip, word: word.index, then: readAlong.state === "paused" ? "pause" : "resume" });
    });
    spans.set(span.dataset.key, span);
    // The first word is the headword; the rest is the definition.
    const parent = n === 0 ? headword : definition;
    if (n > 1) parent.appendChild(document.createTextNode(" "));
    parent.appendChild(span);
  });
}

function play() {
  highlight(null);
  readAlong.playing = send({ op: "play", lesson, activity });
  setState("starting");
}

// A cue's event has its cue's type ("word", "clipStart", the activity's "close" …); the
// playback's own events have types no cue has (docs/events.md).
function onEvent(event) {
  readAlong.events += 1;
  readAlong.lastEvent = event;
  if (event.id === "sheet") {
    if (event.type === "word") sheetWords.push(event);
    if (event.type === "finished") { layOut(); play(); }
    if (event.type === "error") setState("error", event.message);
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
      if (Number(speedChoice.value) !== 1) readAlong.speedRequest = send({ op: "speed", request: readAlong.playing, speed: Number(speedChoice.value) });
      break;
    case "paused": highlight(null); setState("paused", "paused: ▶ goes on"); pauseButton.textContent = "▶ Play"; break;
    case "resumed": setState("playing"); pauseButton.textContent = "⏸ Pause"; break;
    case "seeked": highlight(null); break;
    case "word": highlight(event.clip + "/" + event.index); break;
    case "clipStart": case "clipEnd": highlight(null); break;
    case "close": setState("closed"); break;
    case "finished": highlight(null); if (readAlong.state !== "closed") setState("ended", "ended: replay to hear it again"); readAlong.playing = null; break;
    case "stopped": highlight(null); setState("ended", "stopped: " + (event.reason || "")); readAlong.playing = null; break;
    case "error": highlight(null); setState("error", event.message); readAlong.playing = null; break;
  }
}

const pauseButton = document.getElementById("pause");
pauseButton.addEventListener("click", () => {
  if (!readAlong.playing) return;
  send({ op: readAlong.state === "paused" ? "resume" : "pause", request: readAlong.playing });
});
document.getElementById("volume").addEventListener("change", (input) => {
  readAlong.volumeRequest = send({ op: "volume", bus: "music", gain: Number(input.target.value) });
});

// The speed applies to what plays now and to what plays next (each playback is set to it at its start).
const speedChoice = document.getElementById("speed");
speedChoice.addEventListener("change", () => {
  if (readAlong.playing) readAlong.speedRequest = send({ op: "speed", request: readAlong.playing, speed: Number(speedChoice.value) });
});

document.getElementById("replay").addEventListener("click", () => {
  if (readAlong.playing) send({ op: "replay", request: readAlong.playing });
  else play();
});
document.getElementById("close").addEventListener("click", () => {
  if (readAlong.playing) send({ op: "close", request: readAlong.playing });
  else setState("closed");
});

socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws?token=" + encodeURIComponent(token));
socket.onopen = () => { setState("loading"); send({ id: "sheet", op: "cues", lesson, activity }); };
socket.onmessage = (message) => onEvent(JSON.parse(message.data));
socket.onclose = () => { if (readAlong.state !== "closed") setState("disconnected", "disconnected from the daemon"); };
