// <narrator-player>: the read-along as a custom element a web app drops into its own page, with
// no build step and no dependencies (docs/component.md).
//
//   <script type="module" src="http://127.0.0.1:8700/narrator-player.js"></script>
//   <narrator-player src="http://127.0.0.1:8700" token="…" lesson="sight-words.json"
//                    activity="sight-words" autoplay></narrator-player>
//
// It talks to the daemon over its WebSocket (`src`, default: the page's own origin; `token`,
// default: the page address's `#token=`) — or, with `pack` instead (a `narrator pack --web`
// folder's URL), to narrator-local.js, which plays that folder in the page with no daemon and
// answers alike —, asks for the library's listing of its program and its
// cue schedule, and plays it when asked (play(), or `autoplay`). Every event of the playback is
// dispatched on the element as a CustomEvent named by the event's type (`word`, `pulse`, `tap`,
// `feedbackEnd`, `finished` …) with the daemon's event in `detail`, after the element has drawn
// it: the host app animates its own pictures from them. Controls: `speed` (0.5–2, the daemon's
// `speed`), `volume` (0–1) and `muted` (the connection's master bus), as attributes or
// properties, and close(); a value out of range is ignored with a console warning, and not
// sent. The element's own events: `statechange`, `library`, `volumechange` (the daemon took a
// volume) and `closed` (a playback close() ended). Theming: CSS custom properties
// (--narrator-*) and ::part() (player, text, word, lit, sentence, tiles, tile, picture, label,
// pulsing, correct, wrong, controls, button, status, end).
//
// Tiles: an activity's current step's choices (the listing's `steps[i].choices`; without
// `steps`, every step's answer), its tap sounds, and each pulse target no answer stands for; a
// picture (the listing's `pictures`) on a tile when the lesson gives one.

const template = document.createElement("template");
template.innerHTML = `
<style>
  :host {
    --narrator-font: "DejaVu Sans", "Verdana", sans-serif;
    --narrator-font-size: 40px;
    --narrator-background: #fffaf0;
    --narrator-ink: #1b2433;
    --narrator-dim: #5b6474;
    --narrator-highlight: #ffd23f;
    --narrator-highlight-ink: #1b2433;
    --narrator-sentence: #fff1c2;
    --narrator-tile: #ffffff;
    --narrator-tile-border: #3d5a80;
    --narrator-pulse: #1c64d8;
    --narrator-correct: #1e7b34;
    --narrator-wrong: #b8360b;
    --narrator-end: #6a2fd0;
    --narrator-radius: 24px;
    --narrator-target: 64px;
    --narrator-picture: 96px;
    display: block;
    font: var(--narrator-font-size)/1.5 var(--narrator-font);
    color: var(--narrator-ink);
  }
  :host([hidden]) { display: none; }
  * { box-sizing: border-box; }
  .player { background: var(--narrator-background); border-radius: var(--narrator-radius); padding: 16px 20px; display: flex; flex-direction: column; gap: 14px; }
  .text { min-height: var(--narrator-target); max-height: 5.2em; overflow-y: auto; }
  .clip { margin: 0; }
  .clip.past { color: var(--narrator-dim); font-size: 0.7em; }
  .sentence, .transcript { border-radius: 12px; }
  .sentence.reading, .transcript.reading { background: var(--narrator-sentence); }
  .word { font: inherit; color: inherit; background: none; border: 0; margin: 0; padding: 0 6px; min-height: var(--narrator-target); border-radius: 14px; cursor: pointer; }
  .word.heard { background: var(--narrator-highlight); color: var(--narrator-highlight-ink); box-shadow: 0 0 0 4px var(--narrator-highlight); }
  button:focus-visible { outline: 4px solid var(--narrator-pulse); outline-offset: 3px; }
  .tiles { display: flex; flex-wrap: wrap; gap: 16px; }
  .tiles:empty { display: none; }
  .tile { font: inherit; font-size: 0.8em; min-width: var(--narrator-target); min-height: var(--narrator-target); padding: 8px 18px;
          display: inline-flex; flex-direction: column; align-items: center; justify-content: center; gap: 4px;
          border-radius: var(--narrator-radius); border: 4px solid var(--narrator-tile-border); background: var(--narrator-tile); color: var(--narrator-ink); }
  button.tile { cursor: pointer; touch-action: manipulation; }
  .tile img { width: var(--narrator-picture); height: var(--narrator-picture); object-fit: contain; pointer-events: none; }
  .tile.pulsing { border-color: var(--narrator-pulse); box-shadow: 0 0 0 8px var(--narrator-pulse); animation: narrator-pulse 0.6s ease-in-out 2; }
  .tile.correct { background: var(--narrator-correct); border-color: var(--narrator-correct); color: #fff; }
  .tile.wrong { background: var(--narrator-wrong); border-color: var(--narrator-wrong); color: #fff; animation: narrator-shake 0.4s ease-in-out 1; }
  .tile.correct .label::after { content: " ✓"; }
  .tile.wrong .label::after { content: " ✗"; }
  @keyframes narrator-pulse { 0%, 100% { transform: scale(1); } 50% { transform: scale(1.12); } }
  @keyframes narrator-shake { 0%, 100% { transform: translateX(0); } 25% { transform: translateX(-10px); } 75% { transform: translateX(10px); } }
  .controls { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
  .controls button { font: inherit; font-size: 0.7em; min-width: var(--narrator-target); min-height: var(--narrator-target); padding: 0 20px;
                     border-radius: calc(var(--narrator-target) / 2); border: 3px solid var(--narrator-tile-border); background: var(--narrator-tile); color: var(--narrator-ink); cursor: pointer; }
  .status { font-size: 0.45em; color: var(--narrator-dim); }
  .end { display: none; align-items: center; gap: 16px; padding: 10px 20px; border-radius: var(--narrator-radius); background: var(--narrator-end); color: #fff; }
  .player[data-state="ended"] .end { display: flex; }
  .end button { font: inherit; font-size: 0.7em; min-height: var(--narrator-target); padding: 0 24px; border-radius: calc(var(--narrator-target) / 2); border: 3px solid #fff; background: transparent; color: #fff; cursor: pointer; }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  @media (prefers-reduced-motion: reduce) {
    .tile.pulsing, .tile.wrong { animation: none; }
    .tile.pulsing { outline: 6px solid var(--narrator-pulse); outline-offset: 6px; }
  }
</style>
<div class="player" part="player" data-state="connecting">
  <div class="text" part="text" role="region" aria-label="The text being read; each word is a button that says it"></div>
  <div class="tiles" part="tiles" role="group" aria-label="Tiles"></div>
  <div class="end" part="end"><span aria-hidden="true">★</span><span>All done!</span><button type="button" class="again" part="button">↻ Again</button></div>
  <div class="controls" part="controls">
    <button type="button" class="toggle" part="button" aria-label="Play">▶</button>
    <button type="button" class="replay" part="button" aria-label="Replay">↻</button>
  </div>
  <div class="now sr-only" aria-live="polite"></div>
  <div class="status" part="status" role="status">connecting…</div>
</div>`;

const observed = ["src", "token", "pack", "lesson", "activity", "chain", "state", "locale", "seed", "speed", "volume", "muted"];

// The controls' ranges: the daemon's for speed; volume is the master bus's gain up to 1
// (the daemon's goes to 4: louder than recorded is the device's business, not a child's page).
const ranges = { speed: [0.5, 2], volume: [0, 1] };

// `value` (a number, or a string that is only a decimal number) within `name`'s range, else
// null after one console warning naming it.
function controlValue(name, value) {
  const [low, high] = ranges[name];
  const number = typeof value === "number" ? value
    : typeof value === "string" && /^\s*(\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : NaN;
  if (Number.isFinite(number) && number >= low && number <= high) return number;
  console.warn("<narrator-player>: " + name + " " + JSON.stringify(String(value)) + " ignored: expected a number from " + low + " to " + high);
  return null;
}

function part(element, names) {
  element.setAttribute("part", names);
}

export class NarratorPlayer extends HTMLElement {
  static get observedAttributes() { return observed; }

  constructor() {
    super();
    this.attachShadow({ mode: "open" }).appendChild(template.content.cloneNode(true));
    const find = (selector) => this.shadowRoot.querySelector(selector);
    this.ui = {
      player: find(".player"), text: find(".text"), tiles: find(".tiles"), now: find(".now"),
      status: find(".status"), toggle: find(".toggle"), replay: find(".replay"), again: find(".again"),
    };
    // What the element shows and knows, for people and for tests.
    this.view = {
      state: "connecting", program: null, current: null, sentence: null, playing: null, library: [],
      clipsStarted: [], pulses: [], taps: [], log: [], replies: {}, error: null, step: null,
    };
    this.socket = null;
    this.nextId = 1;
    this.book = new Map();
    this.block = null;
    this.pendingClip = null;
    this.tileByName = new Map();
    // The controls as asked (sent to each playback, and to each connection for the volume).
    this.controls = { speed: 1, volume: 1, muted: false };
    this.started = false;
    this.closing = null;
    this.volumeRequests = new Map();
    this.ui.toggle.addEventListener("click", () => (this.view.state === "playing" ? this.pause() : this.play()));
    this.ui.replay.addEventListener("click", () => this.replay());
    this.ui.again.addEventListener("click", () => this.replay());
  }

  // MARK: the element's life

  connectedCallback() { this.connect(); }

  disconnectedCallback() {
    if (this.socket) this.socket.close();
    this.socket = null;
  }

  attributeChangedCallback(name, before, after) {
    if (name === "speed" || name === "volume" || name === "muted") { this.controlChanged(name, after); return; }
    if (before === after || !this.socket) return;
    if (name === "src" || name === "token" || name === "pack") this.connect();
    else if (this.view.library.length && !this.chooseQueued) {
      // Several attributes set together choose once.
      this.chooseQueued = true;
      queueMicrotask(() => { this.chooseQueued = false; this.choose(); });
    }
  }

  get state() { return this.view.state; }
  get program() { return this.view.program; }

  /** The speed asked for (1: as recorded); setting it reflects to the attribute. */
  get speed() { return this.controls.speed; }
  set speed(value) { if (controlValue("speed", value) !== null) this.setAttribute("speed", String(Number(value))); }
  /** The master volume asked for, 0–1. */
  get volume() { return this.controls.volume; }
  set volume(value) { if (controlValue("volume", value) !== null) this.setAttribute("volume", String(Number(value))); }
  get muted() { return this.controls.muted; }
  set muted(value) { this.toggleAttribute("muted", Boolean(value)); }

  // An attribute of the controls set (also at the element's upgrade, before it connects):
  // kept when valid, sent when it changes what plays or the connection's levels.
  controlChanged(name, value) {
    if (name === "muted") {
      if (this.controls.muted === (value !== null)) return;
      this.controls.muted = value !== null;
      this.sendVolume();
      return;
    }
    const number = value === null ? 1 : controlValue(name, value);
    if (number === null || number === this.controls[name]) return;
    this.controls[name] = number;
    if (name === "speed") this.sendSpeed();
    else this.sendVolume();
  }

  // The speed to the playback, once the daemon plays it (the `start` event); before, it is
  // sent at that event.
  sendSpeed() {
    if (this.view.playing && this.started) this.send({ op: "speed", request: this.view.playing, speed: this.controls.speed });
  }

  // The connection's master level (the daemon keeps it across the connection's playbacks; a
  // new connection starts at 1, unmuted).
  sendVolume() {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return;
    const asked = { volume: this.controls.volume, muted: this.controls.muted };
    this.volumeRequests.set(this.send({ op: "volume", bus: "master", gain: asked.volume, muted: asked.muted }), asked);
  }

  // The daemon's HTTP address (pictures are relative to it) and WebSocket address; with
  // `pack`, the pack's folder.
  base() {
    const pack = this.getAttribute("pack");
    return new URL(pack !== null ? (pack || ".").replace(/\/?$/, "/") : this.getAttribute("src") || location.origin, location.href);
  }

  connect() {
    if (this.socket) this.socket.close();
    this.view.library = [];
    const pack = this.getAttribute("pack");
    if (pack !== null) {
      // A `pack --web` folder, played in the page: narrator-local.js (beside this module, loaded
      // only then) answers the same requests with the same events, in a WebSocket's shape.
      const loading = { readyState: 0, close() {} };
      this.socket = loading;
      import(new URL("narrator-local.js", import.meta.url).href).then(
        ({ LocalSocket }) => { if (this.socket === loading) this.listen(new LocalSocket(this.base().href)); },
        (error) => { if (this.socket === loading) this.setState("error", "narrator-local.js: " + error.message); });
      return;
    }
    const token = this.getAttribute("token") || new URLSearchParams(location.hash.slice(1)).get("token") || "";
    const address = this.base();
    address.protocol = address.protocol === "https:" ? "wss:" : "ws:";
    address.pathname = "/ws";
    address.search = "?token=" + encodeURIComponent(token);
    this.listen(new WebSocket(address.href));
  }

  listen(socket) {
    this.socket = socket;
    socket.onopen = () => {
      this.setState("loading", "reading the library…");
      this.send({ id: "library", op: "library" });
      if (this.controls.volume !== 1 || this.controls.muted) this.sendVolume();
    };
    socket.onmessage = (message) => { if (this.socket === socket) this.onEvent(JSON.parse(message.data)); };
    socket.onclose = () => { if (this.socket === socket) this.setState("disconnected", "disconnected from the daemon"); };
  }

  send(request) {
    request.id = request.id || "r" + this.nextId++;
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(request));
    return request.id;
  }

  setState(state, note) {
    this.view.state = state;
    this.ui.player.dataset.state = state;
    this.ui.status.textContent = note || state;
    const playing = state === "playing";
    this.ui.toggle.textContent = playing ? "❚❚" : "▶";
    this.ui.toggle.setAttribute("aria-label", playing ? "Pause" : "Play");
    if (state === "error") this.view.error = note || "error";
    this.dispatchEvent(new CustomEvent("statechange", { detail: { state, note: note || state } }));
  }

  // MARK: methods for the host app

  /** Plays the program (or goes on, when paused). */
  play() {
    if (this.view.state === "paused") return this.resume();
    if (this.view.playing || !this.view.program) { this.wantPlay = !this.view.playing; return; }
    if (!this.sheetReady) { this.wantPlay = true; return; }
    this.highlight(null);
    this.started = false;
    this.view.playing = this.send(Object.assign({ op: "play" }, this.request()));
    this.setState("starting");
  }

  pause() { if (this.view.playing) this.send({ op: "pause", request: this.view.playing }); }
  resume() { if (this.view.playing) this.send({ op: "resume", request: this.view.playing }); }
  stop() { if (this.view.playing) this.send({ op: "stop", request: this.view.playing }); }

  /** Ends the playback as the child's ✕ would: an activity playing is closed (the daemon's
   * `close`: its `tap` close, `close` and `activityEnd` cues), anything else stopped; then, no
   * cue after it, the state is `closed` and the element dispatches `closed`. */
  close() {
    const playing = this.view.playing;
    if (!playing || this.closing === playing) return;
    this.closing = playing;
    if (this.started && this.view.program.activity !== undefined) this.send({ op: "close", request: playing });
    else this.send({ op: "stop", request: playing });
  }

  /** Goes on from `{frame}` or `{clip, word}` / `{clip, sentence}`. */
  seek(where) { if (this.view.playing) this.send(Object.assign({ op: "seek", request: this.view.playing }, where)); }

  /** Taps the tile `answer` (as a child's tap on it). */
  tap(answer) { if (this.view.playing) this.view.tapRequest = this.send({ op: "tap", request: this.view.playing, answer: String(answer) }); }

  replay() {
    if (this.view.playing) this.send({ op: "replay", request: this.view.playing });
    else if (this.view.program) { this.wantPlay = true; this.prepare(this.view.program); }
  }

  // MARK: the program

  // The listed program the attributes name: the lesson's activity or chain; the lesson alone:
  // its first activity, else its first chain.
  choose() {
    const lesson = this.getAttribute("lesson");
    const chain = this.getAttribute("chain");
    const activity = this.getAttribute("activity");
    if (!lesson) { this.setState("idle", "no lesson chosen"); return; }
    const own = this.view.library.filter((p) => p.lesson === lesson);
    const found = chain !== null ? own.find((p) => p.chain === chain)
      : activity !== null ? own.find((p) => p.activity === activity)
      : own.find((p) => p.activity !== undefined && p.problem === undefined) || own.find((p) => p.problem === undefined);
    // Not listed: asked for anyway, for the daemon's own error.
    const program = found || { lesson, chain: chain === null ? undefined : chain, activity: chain === null ? (activity === null ? undefined : activity) : undefined };
    if (program.problem !== undefined) { this.setState("error", program.problem); return; }
    this.prepare(program);
  }

  // The seed and locale every request for the program carries (its book's too).
  common(lesson) {
    const fields = { lesson };
    const seed = this.getAttribute("seed");
    if (seed !== null && /^[0-9]{1,9}$/.test(seed)) fields.seed = Number(seed);
    const locale = this.getAttribute("locale");
    if (locale) fields.locale = locale;
    return fields;
  }

  request() {
    const program = this.view.program;
    const fields = this.common(program.lesson);
    if (program.chain !== undefined) fields.chain = program.chain;
    else {
      fields.activity = program.activity;
      const state = this.getAttribute("state");
      if (state) fields.state = state;
    }
    return fields;
  }

  prepare(program) {
    if (this.view.playing) this.send({ op: "stop", request: this.view.playing });
    Object.assign(this.view, { playing: null, program, current: null, sentence: null, clipsStarted: [], pulses: [], taps: [], log: [], error: null, step: null });
    this.ui.text.textContent = "";
    this.ui.tiles.textContent = "";
    this.ui.now.textContent = "";
    this.tileByName.clear();
    this.block = null;
    this.pendingClip = null;
    this.started = false;
    this.closing = null;
    this.book = new Map();
    this.texts = new Map(Object.entries(program.texts || {}));
    this.pulseAnswers = new Map(Object.entries(program.pulseAnswers || {}));
    this.pictures = program.pictures && typeof program.pictures === "object" ? program.pictures : {};
    this.steps = Array.isArray(program.steps) ? program.steps : null;
    this.showChoices(0);
    for (const sound of program.sounds || []) this.tile(sound, "sound");
    // The feedback and later prompts of an activity are in its lesson's chains: their
    // schedules, asked one after another, fill the book of words.
    this.bookQueue = program.activity === undefined ? [] : this.view.library
      .filter((p) => p.lesson === program.lesson && p.chain !== undefined && p.problem === undefined)
      .slice(0, 32).map((p) => Object.assign({ op: "cues", chain: p.chain }, this.common(p.lesson)));
    this.bookIds = new Set();
    this.sheetReady = false;
    this.sheetId = this.send(Object.assign({ op: "cues" }, this.request()));
    this.setState("loading", "loading " + program.lesson + "…");
  }

  nextBook() {
    const next = this.bookQueue.shift();
    if (next) this.bookIds.add(this.send(next));
  }

  note(event) {
    if (!this.book.has(event.clip)) this.book.set(event.clip, { words: new Map(), sentences: new Map() });
    const clip = this.book.get(event.clip);
    if (event.type === "word") clip.words.set(event.index, { text: event.text, frame: event.frame });
    else clip.sentences.set(event.index, { frame: event.frame, endFrame: event.endFrame, text: event.text });
  }

  // MARK: tiles

  // The tiles of step `step`: its choices (the whole activity's answers when the listing has no steps).
  showChoices(step) {
    const program = this.view.program;
    if (program.activity === undefined) return;
    const listed = this.steps && this.steps[step];
    const listedNames = listed ? (Array.isArray(listed.choices) && listed.choices.length ? listed.choices : [listed.answer]) : (this.steps ? [] : program.answers || []);
    const names = listedNames.filter((name) => typeof name === "string");
    for (const [name, element] of [...this.tileByName]) {
      if (element.dataset.kind === "choice" && !names.includes(name)) { element.remove(); this.tileByName.delete(name); }
    }
    let before = this.ui.tiles.firstChild;
    for (const name of names) {
      const element = this.tile(name, "choice");
      if (element !== before) this.ui.tiles.insertBefore(element, before);
      before = element.nextSibling;
    }
    this.view.step = step;
  }

  // The tile `name` shows as: kind "choice" or "sound" (a button that taps), or "target" (a
  // picture of what a pulse points at).
  tile(name, kind) {
    let element = this.tileByName.get(name);
    if (element && (kind === "target" || element.tagName === "BUTTON")) return element;
    const replaced = element;
    if (kind === "target") {
      element = document.createElement("span");
      element.setAttribute("role", "img");
    } else {
      element = document.createElement("button");
      element.type = "button";
      element.addEventListener("click", () => this.tap(name));
    }
    element.className = "tile";
    element.dataset.target = name;
    element.dataset.kind = kind;
    element.dataset.pulses = "0";
    const picture = this.pictures[name];
    if (picture && typeof picture.url === "string") {
      const image = document.createElement("img");
      image.src = new URL(picture.url, this.base().href.replace(/\/?$/, "/")).href;
      image.alt = typeof picture.alt === "string" ? picture.alt : name;
      part(image, "picture");
      element.appendChild(image);
    }
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = name;
    part(label, "label");
    element.appendChild(label);
    if (kind === "target") element.setAttribute("aria-label", picture && picture.alt ? picture.alt : name);
    this.tileParts(element);
    if (replaced) this.ui.tiles.replaceChild(element, replaced);
    else this.ui.tiles.appendChild(element);
    this.tileByName.set(name, element);
    return element;
  }

  tileParts(element) {
    part(element, ["tile", ...["pulsing", "correct", "wrong"].filter((c) => element.classList.contains(c))].join(" "));
  }

  mark(element, name, on) {
    element.classList.toggle(name, on);
    this.tileParts(element);
  }

  targetTile(target) {
    return this.tile(this.pulseAnswers.get(target) || target, "target");
  }

  onPulse(event) {
    this.view.pulses.push(event.target + "@" + event.frame);
    const element = this.targetTile(event.target);
    this.mark(element, "pulsing", false);
    void element.offsetWidth;  // restarts the animation of a tile pulsed again
    this.mark(element, "pulsing", true);
    element.dataset.pulses = String(Number(element.dataset.pulses) + 1);
    clearTimeout(element.pulseTimer);
    element.pulseTimer = setTimeout(() => this.mark(element, "pulsing", false), 1300);
  }

  onTap(event) {
    this.view.taps.push(event.answer + ":" + event.result);
    if (event.result !== "correct" && event.result !== "wrong") return;
    for (const element of this.tileByName.values()) for (const kind of ["correct", "wrong"]) this.mark(element, kind, false);
    const element = this.tileByName.get(event.answer);
    // Shown until its feedback ends (a right answer: until the next step's tiles).
    if (element) this.mark(element, event.result, true);
  }

  clearFeedback() {
    for (const element of this.tileByName.values()) this.mark(element, "wrong", false);
  }

  // MARK: text

  wordButton(clip, index, word) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "word";
    part(button, "word");
    button.textContent = word;
    button.dataset.key = clip + "/" + index;
    button.setAttribute("aria-label", "Say “" + word + "”");
    // Said on its own, then back where playback was: paused stays paused.
    button.addEventListener("click", () => {
      if (this.view.playing) this.send({ op: "say", request: this.view.playing, clip, word: index, then: this.view.state === "paused" ? "pause" : "resume" });
    });
    return button;
  }

  openBlock(clip) {
    const text = this.ui.text;
    if (this.block) this.block.element.classList.add("past");
    while (text.children.length > 1) text.removeChild(text.firstChild);
    const element = document.createElement("p");
    element.className = "clip";
    element.dataset.clip = clip;
    text.appendChild(element);
    this.block = { clip, element, words: new Map(), sentences: new Map(), open: null, transcript: null };
    const known = this.book.get(clip);
    if (!(known && known.words.size > 0) && this.texts.has(clip)) {
      const span = document.createElement("span");
      span.className = "transcript reading";
      part(span, "sentence");
      span.textContent = this.texts.get(clip);
      element.appendChild(span);
      this.block.transcript = span;
      this.ui.now.textContent = span.textContent;
    } else if (known) {
      const sentences = [...known.sentences.entries()].sort((a, b) => a[1].frame - b[1].frame);
      for (const [index, word] of [...known.words.entries()].sort((a, b) => a[0] - b[0])) {
        const sentence = sentences.find(([, s]) => word.frame >= s.frame && word.frame < s.endFrame);
        const parent = sentence ? this.block.sentences.get(sentence[0]) || this.addSentence(sentence[0]) : element;
        this.addWord(parent, clip, index, word.text);
      }
    }
    this.scrollTo(element);
  }

  addSentence(index) {
    const span = document.createElement("span");
    span.className = "sentence";
    part(span, "sentence");
    span.dataset.key = this.block.clip + "/" + index;
    if (this.block.element.childNodes.length > 0) this.block.element.appendChild(document.createTextNode(" "));
    this.block.element.appendChild(span);
    this.block.sentences.set(index, span);
    return span;
  }

  addWord(parent, clip, index, word) {
    if (parent.childNodes.length > 0) parent.appendChild(document.createTextNode(" "));
    const button = this.wordButton(clip, index, word);
    parent.appendChild(button);
    this.block.words.set(index, button);
    return button;
  }

  scrollTo(element) {
    const reduce = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    // Within the text only: the host page does not scroll.
    const box = this.ui.text;
    if (!element || !box.contains(element)) return;
    const top = element.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top + element.offsetHeight > box.scrollTop + box.clientHeight) {
      box.scrollTo({ top: Math.max(0, top - 8), behavior: reduce ? "auto" : "smooth" });
    }
  }

  highlight(button) {
    const old = this.ui.text.querySelector(".word.heard");
    if (old) { old.classList.remove("heard"); part(old, "word"); }
    this.view.current = button ? button.dataset.key : null;
    if (button) {
      button.classList.add("heard");
      part(button, "word lit");
      this.scrollTo(button);
    }
  }

  highlightSentence(span, words) {
    const old = this.ui.text.querySelector(".sentence.reading");
    if (old) old.classList.remove("reading");
    this.view.sentence = span ? span.dataset.key : null;
    if (span) {
      span.classList.add("reading");
      this.ui.now.textContent = words;
    }
  }

  blockFor(clip) {
    if (!this.block || this.block.clip !== clip || this.pendingClip === clip) {
      this.pendingClip = null;
      this.openBlock(clip);
    }
    return this.block;
  }

  onWord(event) {
    if (this.pendingClip !== event.clip && !(this.block && this.block.clip === event.clip)) {
      // A word of the clip before (a tap on it): highlighted where it is.
      const key = event.clip + "/" + event.index;
      const found = [...this.ui.text.querySelectorAll(".word")].reverse().find((b) => b.dataset.key === key);
      if (found) { this.highlight(found); return; }
    }
    const current = this.blockFor(event.clip);
    let button = current.words.get(event.index);
    if (!button) {
      const parent = current.open && current.open.isConnected ? current.open : current.element;
      button = this.addWord(parent, event.clip, event.index, event.text);
    }
    this.highlight(button);
  }

  // MARK: events

  onEvent(event) {
    if (event.id === "library") {
      if (event.type === "program") this.view.library.push(event);
      if (event.type === "finished" || event.type === "error") {
        this.dispatchEvent(new CustomEvent("library", { detail: { programs: this.view.library } }));
        this.choose();
      }
      return;
    }
    if (event.id === this.sheetId) {
      if (event.type === "word" || event.type === "sentence") this.note(event);
      if (event.type === "pulse") this.targetTile(event.target);
      if (event.type === "finished") {
        this.sheetReady = true;
        this.setState("ready", "ready: ▶ plays it");
        this.nextBook();
        if (this.wantPlay || this.hasAttribute("autoplay")) { this.wantPlay = false; this.play(); }
      }
      if (event.type === "error") this.setState("error", event.message);
      return;
    }
    if (this.bookIds && this.bookIds.has(event.id)) {
      if (event.type === "word" || event.type === "sentence") this.note(event);
      if (["finished", "error", "stopped"].includes(event.type)) { this.bookIds.delete(event.id); this.nextBook(); }
      return;
    }
    if (this.volumeRequests.has(event.id)) {
      const asked = this.volumeRequests.get(event.id);
      this.volumeRequests.delete(event.id);
      if (event.type === "finished") this.dispatchEvent(new CustomEvent("volumechange", { detail: asked }));
      else console.warn("<narrator-player>: volume refused: " + event.message);
      return;
    }
    if (event.id !== this.view.playing) {
      // The answer to a control: one terminal event each.
      this.view.replies[event.id] = event.type;
      if (event.type === "error") this.ui.status.textContent = event.message;
      return;
    }
    this.view.log.push(event.type + (event.frame === null || event.frame === undefined ? "" : "@" + event.frame));
    const closed = this.closing === event.id && ["finished", "stopped", "error"].includes(event.type);
    try {
      this.draw(event);
    } finally {
      // The host hears every event, even one the element could not draw.
      this.dispatchEvent(new CustomEvent(event.type, { detail: event }));
      if (closed) {
        this.closing = null;
        this.dispatchEvent(new CustomEvent("closed", { detail: { playback: event.playback, frame: event.frame, ended: event.type } }));
      }
    }
  }

  draw(event) {
    switch (event.type) {
      case "start":
        this.started = true;
        this.setState("playing");
        if (this.controls.speed !== 1) this.sendSpeed();
        break;
      case "resumed": this.setState("playing"); break;
      case "paused": this.highlight(null); this.setState("paused", "paused: ▶ goes on"); break;
      case "seeked": this.highlight(null); break;
      case "clipStart":
        this.highlight(null);
        this.view.clipsStarted.push(event.clip);
        if ((this.book.has(event.clip) && this.book.get(event.clip).words.size > 0) || this.texts.has(event.clip)) this.openBlock(event.clip);
        else this.pendingClip = event.clip;
        break;
      case "clipEnd":
        this.highlight(null);
        this.highlightSentence(null);
        if (this.block && this.block.clip === event.clip && this.block.transcript) this.block.transcript.classList.remove("reading");
        break;
      case "sentence": {
        const current = this.blockFor(event.clip);
        const span = current.sentences.get(event.index) || this.addSentence(event.index);
        current.open = span;
        this.highlightSentence(span, event.text);
        break;
      }
      case "word": this.onWord(event); break;
      case "pulse": this.onPulse(event); break;
      case "stepStart":
        for (const element of this.tileByName.values()) this.mark(element, "correct", false);
        this.showChoices(Number(event.step) || 0);
        break;
      case "tap":
        // A close the activity does not take now (its final playing): stopped instead.
        if (event.answer === "close" && event.result === "ignored" && this.closing === event.id) this.send({ op: "stop", request: event.id });
        this.onTap(event);
        break;
      case "feedback": this.ui.status.textContent = event.kind === "correct" ? "right!" : "try again"; break;
      case "feedbackEnd": if (event.kind === "wrong") this.clearFeedback(); break;
      case "close": this.setState("closed"); break;
      case "finished":
        this.highlight(null);
        this.view.playing = null;
        this.started = false;
        if (this.closing === event.id) this.setState("closed");
        else if (this.view.state !== "closed") this.setState("ended", "ended");
        break;
      case "stopped":
        this.highlight(null);
        this.view.playing = null;
        this.started = false;
        if (this.closing === event.id) this.setState("closed");
        else this.setState("stopped", "stopped: " + (event.reason || ""));
        break;
      case "error": this.highlight(null); this.view.playing = null; this.setState("error", event.message); break;
    }
  }
}

if (!customElements.get("narrator-player")) customElements.define("narrator-player", NarratorPlayer);
