// narrator-local.js: the daemon's protocol, answered in the page from a `narrator pack --web`
// folder, with no daemon (docs/component.md, "Standalone, from a web pack").
//
//   import { LocalSocket } from "./narrator-local.js";
//   const socket = new LocalSocket("./");          // the pack folder's URL
//   socket.onmessage = (message) => console.log(JSON.parse(message.data));
//   socket.onopen = () => socket.send(JSON.stringify({ id: 1, op: "library" }));
//
// A LocalSocket has a WebSocket's shape (readyState, send, close, onopen, onmessage, onclose):
// <narrator-player pack="…"> uses it where it would open the daemon's WebSocket. It takes the
// requests the element sends (library, cues, play, pause, resume, seek, say, tap, replay, close,
// stop, volume, speed) with the daemon's fields, and answers with the daemon's event lines: the
// request's `id` first, then the members in byte order, one terminal event per request. The
// engine is narrator.wasm: the cue sheet it writes (EventEncoder's lines) gives each cue's
// members as `narrator cues` writes them; playback is narrator-web.js's WebPlayer (the mixer in
// an AudioWorklet), each cue sent when its frame is heard. `heard` and `delivered` are on the
// page's clock (performance.now(), in nanoseconds), not CLOCK_MONOTONIC.
import { loadPack, WebPlayer } from "./narrator-web.js";

const operations = ["play", "cues", "library", "tap", "replay", "close", "stop", "subscribe", "pause", "resume", "seek", "say", "speed", "volume"];

/** A request refused: its `error` event's message (the daemon's wording where it has one). */
class Refusal extends Error {}

/** -1, 0 or 1 as `a` sorts before, with or after `b` in UTF-8 byte order (code point order). */
function byteOrder(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const difference = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (difference !== 0) return difference < 0 ? -1 : 1;
  }
  return x.length - y.length;
}

/** `value` as EventEncoder writes it: objects' keys in byte order, no spaces. */
function encode(value) {
  if (Array.isArray(value)) return "[" + value.map(encode).join(",") + "]";
  if (value !== null && typeof value === "object") {
    return "{" + Object.keys(value).filter((key) => value[key] !== undefined).sort(byteOrder)
      .map((key) => JSON.stringify(key) + ":" + encode(value[key])).join(",") + "}";
  }
  return JSON.stringify(value);
}

/** A daemon event line: `{"id":…,` then `members` in byte order. */
export function eventLine(id, members) {
  const body = encode(members);
  return "{\"id\":" + JSON.stringify(id ?? null) + (body === "{}" ? "}" : "," + body.slice(1));
}

/** The page's clock in nanoseconds, a whole number. */
const nanoseconds = (milliseconds) => Math.round(milliseconds * 1e6);

export class LocalSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;

  /** Opens the pack at `base` (a folder URL): OPEN once its manifest and narrator.wasm are read. */
  constructor(base) {
    this.readyState = LocalSocket.CONNECTING;
    this.onopen = null;
    this.onmessage = null;
    this.onclose = null;
    this.onerror = null;
    this.pack = null;
    // Why the pack could not be read: every request is answered with it.
    this.problem = null;
    this.players = new Map();   // lesson path → Promise of its WebPlayer (one at a time)
    this.narrators = new Map(); // lesson path → Promise of a Narrator on the main thread (cue sheets)
    this.active = new Map();    // request id → playback
    this.current = null;        // the playback playing (one at a time in a page)
    this.playbacks = 0;
    this.gains = new Map();     // bus → { gain, muted }: this connection's levels
    this.player = null;         // the WebPlayer of the playback playing, for tests and tools
    this.playingOn = new WeakMap(); // WebPlayer → the playback it plays
    loadPack(base).then(
      (pack) => { this.pack = pack; },
      (error) => { this.problem = String(error.message ?? error); },
    ).then(() => {
      if (this.readyState !== LocalSocket.CONNECTING) return;
      this.readyState = LocalSocket.OPEN;
      if (this.onopen) this.onopen({ type: "open" });
    });
  }

  /** One request, as JSON text; answered asynchronously, as over the network. */
  send(text) {
    if (this.readyState !== LocalSocket.OPEN) throw new Error("LocalSocket: not open");
    let request;
    try {
      request = JSON.parse(String(text));
    } catch {
      this.#emit(eventLine(null, { type: "error", frame: null, heard: null, message: "request: not valid JSON" }));
      return;
    }
    const id = request !== null && typeof request === "object" && (typeof request.id === "string" || Number.isInteger(request.id)) ? request.id : null;
    Promise.resolve().then(() => this.#handle(id, request)).catch((error) => {
      this.#emit(eventLine(id, { type: "error", frame: null, heard: null, message: String(error.message ?? error) }));
    });
  }

  /** Ends every playback (`stopped`, reason `client disconnected`, as the daemon's for a connection gone) and closes. */
  close() {
    if (this.readyState === LocalSocket.CLOSED) return;
    this.readyState = LocalSocket.CLOSED;
    for (const playback of [...this.active.values()]) this.#stop(playback, "client disconnected", false);
    for (const made of this.players.values()) made.then((player) => player.context.close(), () => {});
    this.players.clear();
    if (this.onclose) this.onclose({ type: "close", code: 1000, reason: "" });
  }

  #emit(line) {
    if (this.readyState === LocalSocket.OPEN && this.onmessage) this.onmessage({ type: "message", data: line });
  }

  #reply(id, type, members = {}) {
    this.#emit(eventLine(id, { type, frame: null, heard: null, ...members }));
  }

  async #handle(id, request) {
    if (request === null || typeof request !== "object" || Array.isArray(request)) throw new Refusal("request: expected a JSON object");
    if (id === null) throw new Refusal("request: id: missing key (every request needs an id: a string or a whole number)");
    if (this.problem) throw new Refusal(this.problem);
    const op = request.op;
    if (!operations.includes(op)) throw new Refusal(`request: op: unknown op '${op}' (expected one of: ${operations.join(", ")})`);
    switch (op) {
      case "library": return this.#library(id);
      case "cues": return this.#cues(id, request);
      case "play": return this.#play(id, request);
      case "volume": return this.#volume(id, request);
      case "subscribe": throw new Refusal("request: op: 'subscribe' is the daemon's: a page plays only its own playbacks");
    }
    if (typeof request.request !== "string" && !Number.isInteger(request.request)) {
      throw new Refusal("request: request: expected the id of a request of this connection");
    }
    const playback = this.active.get(request.request);
    if (!playback) throw new Refusal(`request ${request.request} is not playing on this connection`);
    await playback.ready;
    if (playback.done) throw new Refusal(`request ${request.request} is not playing on this connection`);
    const player = playback.player;
    switch (op) {
      case "stop":
        this.#stop(playback, "stopped", true);
        return this.#reply(id, "finished");
      case "tap": case "replay": case "close": {
        const answer = op === "tap" ? request.answer : op;
        if (typeof answer !== "string") throw new Refusal("request: answer: expected a string");
        const bytes = new TextEncoder().encode(answer).length;
        if (bytes > 256) throw new Refusal(`request: answer: at most 256 bytes, got ${bytes}`);
        if (playback.program.activity === undefined) throw new Refusal(`request ${request.request} plays a chain: only an activity answered live takes taps`);
        await player.tap(answer);
        return this.#reply(id, "finished");
      }
      case "pause": {
        const paused = await player.pause();
        playback.paused = true;
        playback.pausedAt = paused.frame;
        this.#event(playback, "paused", paused.frame, this.#now());
        return this.#reply(id, "finished");
      }
      case "resume": {
        if (request.from !== undefined && request.from !== "paused") throw new Refusal(`request: from: '${request.from}' is not in the browser build (only "paused")`);
        await player.resume();
        const from = playback.pausedAt ?? this.#position(playback);
        playback.paused = false;
        this.#event(playback, "resumed", from, this.#now());
        return this.#reply(id, "finished");
      }
      case "seek": {
        const frame = this.#where(playback, request);
        const from = this.#position(playback);
        const sought = await player.seek(frame);
        if (playback.paused) playback.pausedAt = sought.frame;
        this.#event(playback, "seeked", sought.frame, this.#now(), { from });
        return this.#reply(id, "finished");
      }
      case "say": {
        const then = request.then ?? "pause";
        if (then !== "pause" && then !== "resume") throw new Refusal(`request: then: '${then}' is not in the browser build ("pause" or "resume")`);
        const word = player.cues.find((cue) => cue.type === "word" && cue.clip === request.clip && cue.index === request.word);
        if (!word) throw new Refusal(`request: word: no word ${request.word} of clip '${request.clip}' in what plays`);
        const from = this.#position(playback);
        playback.saying = word;
        await player.say(request.clip, request.word, { then });
        playback.paused = false;
        this.#event(playback, "seeked", word.frame, this.#now(), { from });
        return this.#reply(id, "finished");
      }
      case "speed": {
        const speed = request.speed;
        if (typeof speed !== "number" || !(speed >= 0.5 && speed <= 2)) throw new Refusal("request: speed: expected a speed from 0.5 to 2 (1: as recorded)");
        if (typeof player.speed !== "function") {
          throw new Refusal("request: op: 'speed' is not in this narrator.wasm (built without Sonic): the playback stays at 1 (docs/wasm.md)");
        }
        const changed = await player.speed(speed);
        const frame = changed && Number.isInteger(changed.frame) ? changed.frame : this.#position(playback);
        this.#event(playback, "speedChanged", frame, this.#now(), { speed });
        return this.#reply(id, "finished");
      }
    }
  }

  // MARK: the library and cue sheets

  #library(id) {
    const listed = this.pack.manifest.lessons;
    for (const lesson of listed) {
      // pack --web lists each lesson's programs as the daemon's `library` does (one encoder).
      for (const program of lesson.programs ?? []) this.#reply(id, "program", program);
    }
    this.#reply(id, "finished", { notLessons: 0 });
  }

  /** The manifest's lesson `path`, or a refusal naming it. */
  #lesson(path) {
    if (typeof path !== "string") throw new Refusal("request: lesson: expected a string");
    const lesson = this.pack.manifest.lessons.find((entry) => entry.path === path);
    if (!lesson) throw new Refusal(`request: lesson: no lesson '${path}' in the pack`);
    return lesson;
  }

  /** The program a `play` or `cues` asks for, as narrator.js takes it. */
  #program(request) {
    const lesson = this.#lesson(request.lesson).path;
    if (request.locale !== undefined) throw new Refusal("request: locale: not in the browser build: a pack plays each lesson's default");
    if (request.repeat !== undefined && request.repeat !== 1) throw new Refusal("request: repeat: not in the browser build");
    const seed = request.seed ?? 0;
    if (!Number.isInteger(seed) || seed < 0 || seed > 2147483647) throw new Refusal("request: seed: expected a whole number from 0 to 2147483647");
    const chain = request.chain;
    const activity = request.activity;
    if (chain !== undefined && activity !== undefined) throw new Refusal("request: activity: give a chain or an activity, not both");
    if (chain === undefined && activity === undefined) throw new Refusal("request: chain: missing key (give a chain or an activity)");
    if (typeof (chain ?? activity) !== "string") throw new Refusal(`request: ${chain !== undefined ? "chain" : "activity"}: expected a string`);
    if (chain !== undefined) {
      if (request.state !== undefined) throw new Refusal("request: state: only for an activity");
      return { lesson, chain, seed };
    }
    if (request.state !== undefined && typeof request.state !== "string") throw new Refusal("request: state: expected a string");
    return { lesson, activity, seed, ...(request.state ? { state: request.state } : {}) };
  }

  #narrator(path) {
    if (!this.narrators.has(path)) {
      // One lesson's engine and audio at a time on the main thread (the element lists one lesson's sheets at a time).
      this.narrators.clear();
      const made = this.pack.narrator(path);
      made.catch(() => { if (this.narrators.get(path) === made) this.narrators.delete(path); });
      this.narrators.set(path, made);
    }
    return this.narrators.get(path);
  }

  /** The cue sheet's lines (EventEncoder's, as `narrator cues` prints them) and its length. */
  async #sheet(program) {
    const narrator = await this.#narrator(program.lesson);
    let opened;
    try {
      opened = narrator.open(program);
    } catch (error) {
      throw new Refusal(String(error.message ?? error));
    }
    const text = opened.cues;
    const frames = opened.frames;
    opened.close();
    const sheet = JSON.parse(text);
    return { cues: sheet.cues, sampleRate: sheet.sampleRate, frames };
  }

  async #cues(id, request) {
    const sheet = await this.#sheet(this.#program(request));
    for (const cue of sheet.cues) this.#emit(eventLine(id, { ...cue, heard: null, delivered: null }));
    this.#reply(id, "finished", { frame: sheet.frames, sampleRate: sheet.sampleRate });
  }

  // MARK: playback

  #player(path) {
    if (!this.players.has(path)) {
      // One AudioContext at a time: the other lessons' players are closed.
      for (const [other, made] of this.players) {
        made.then((player) => player.context.close(), () => {});
        this.players.delete(other);
      }
      const made = WebPlayer.create(this.pack, path).then((player) => {
        player.addEventListener("cue", (event) => this.#cue(player, event.detail));
        player.addEventListener("ended", (event) => this.#ended(player, event.detail));
        player.addEventListener("said", (event) => this.#said(player, event.detail));
        return player;
      });
      made.catch(() => { if (this.players.get(path) === made) this.players.delete(path); });
      this.players.set(path, made);
    }
    return this.players.get(path);
  }

  async #play(id, request) {
    const program = this.#program(request);
    if (this.active.has(id)) throw new Refusal(`request ${id} is still active on this connection: give each request its own id`);
    const playback = {
      id, name: "p" + ++this.playbacks, program, player: null, started: false, done: false, paused: false, ended: null, last: null, timer: null,
      asked: this.#now(), opened: null,
    };
    this.active.set(id, playback);
    // One playback at a time in a page: the one playing stops.
    if (this.current) this.#stop(this.current, "stopped", true);
    this.current = playback;
    playback.ready = (async () => {
      const player = await this.#player(program.lesson);
      if (playback.done) return;
      this.playingOn.set(player, playback);
      playback.player = player;
      this.player = player;
      await player.play(program.activity !== undefined ? { ...program, live: true } : program);
      playback.opened = this.#now();
      if (playback.done) return;
      for (const [bus, level] of this.gains) await player.setGain(bus, level.muted ? 0 : level.gain);
      this.#watch(playback);
    })();
    try {
      await playback.ready;
    } catch (error) {
      this.#finish(playback, "error", { message: String(error.message ?? error) });
    }
  }

  async #volume(id, request) {
    const bus = request.bus;
    if (!["voice", "sfx", "music", "master"].includes(bus)) throw new Refusal("request: bus: expected \"voice\", \"sfx\", \"music\" or \"master\"");
    const gain = request.gain;
    if (gain !== undefined && !(typeof gain === "number" && gain >= 0 && gain <= 4)) {
      throw new Refusal("request: gain: expected a gain from 0 to 4 (a factor: 1 leaves the level alone)");
    }
    if (request.muted !== undefined && typeof request.muted !== "boolean") throw new Refusal("request: muted: expected true or false");
    if (gain === undefined && request.muted === undefined) throw new Refusal("request: gain: give a gain, muted, or both");
    const level = { ...(this.gains.get(bus) ?? { gain: 1, muted: false }) };
    if (gain !== undefined) level.gain = gain;
    if (request.muted !== undefined) level.muted = request.muted;
    this.gains.set(bus, level);
    const playing = this.current;
    if (playing && playing.player && !playing.done) await playing.player.setGain(bus, level.muted ? 0 : level.gain);
    this.#reply(id, "finished");
  }

  /** Now on the page's clock, in nanoseconds. */
  #now() {
    return nanoseconds(performance.now());
  }

  /** When context time `seconds` is heard, on the page's clock (ns), from the output's timestamp. */
  #heardAt(player, seconds) {
    const stamp = player.context.getOutputTimestamp();
    if (stamp.contextTime === undefined || stamp.performanceTime === undefined) return this.#now();
    return nanoseconds(stamp.performanceTime + (seconds - stamp.contextTime) * 1000);
  }

  /** The frame being heard now (where a seek or a word said jumps from). */
  #position(playback) {
    const player = playback.player;
    if (playback.paused || player.anchorFrame === null) return playback.pausedAt ?? playback.last?.frame ?? 0;
    const heard = player.context.getOutputTimestamp().contextTime ?? 0;
    return Math.max(0, player.anchorFrame + Math.round(heard * player.rate) - player.anchorContextFrame);
  }

  /** The frame a `seek` names: `frame`, or a word's, a sentence's or a clip's first frame in what plays. */
  #where(playback, request) {
    if (request.frame !== undefined) {
      if (!Number.isInteger(request.frame) || request.frame < 0 || request.frame > 2147483647) throw new Refusal("request: frame: expected a whole number from 0 to 2147483647");
      return request.frame;
    }
    if (typeof request.clip !== "string") throw new Refusal("request: frame: give a frame, a clip, or a clip and a word or a sentence");
    const cues = playback.player.cues;
    const [type, index, name] = request.word !== undefined ? ["word", request.word, "word"]
      : request.sentence !== undefined ? ["sentence", request.sentence, "sentence"] : ["clipStart", undefined, "clip"];
    const found = cues.find((cue) => cue.type === type && cue.clip === request.clip && (index === undefined || cue.index === index));
    if (!found) throw new Refusal(`request: ${name}: no ${name}${index === undefined ? "" : " " + index} of clip '${request.clip}' in what plays`);
    return found.frame;
  }

  /** A playback's event that is not a cue. */
  #event(playback, type, frame, heard, members = {}) {
    this.#emit(eventLine(playback.id, { type, frame, heard, playback: playback.name, ...members }));
  }

  #start(playback) {
    if (playback.started) return;
    playback.started = true;
    const player = playback.player;
    const context = player.context;
    const latency = (context.outputLatency || 0) + (context.baseLatency || 0);
    // The daemon's members, as the page knows them: the render quantum, the context's own
    // buffering (baseLatency) and its whole output delay; the page sets no thread's policy.
    this.#event(playback, "start", 0, this.#heardAt(player, player.due(0)), {
      device: "AudioContext", sampleRate: context.sampleRate, channels: player.node.channelCount, format: "f32",
      periodFrames: 128, bufferFrames: Math.round((context.baseLatency || 0) * context.sampleRate),
      latencyFrames: Math.round(latency * context.sampleRate), latencyMs: Math.round(latency * 1e6) / 1000, realtime: false,
      startClock: playback.asked, firstWriteClock: playback.opened ?? playback.asked,
    });
  }

  #cue(player, detail) {
    const playback = this.playingOn.get(player);
    if (!playback || playback.done) return;
    if (!playback.started) this.#start(playback);
    const { due, heard: _, ...cue } = detail;
    const heard = this.#heardAt(player, due);
    playback.last = { frame: cue.frame, heard };
    this.#emit(eventLine(playback.id, { ...cue, heard, delivered: this.#now(), playback: playback.name }));
  }

  #said(player, detail) {
    const playback = this.playingOn.get(player);
    if (!playback || playback.done) return;
    // Back from the word's end to where playback was.
    const word = playback.saying;
    playback.saying = null;
    this.#event(playback, "seeked", detail.frame, this.#now(), { from: word ? word.endFrame : detail.frame });
    if (!detail.playing) {
      playback.paused = true;
      playback.pausedAt = detail.frame;
      this.#event(playback, "paused", detail.frame, this.#now());
    }
  }

  #ended(player, detail) {
    const playback = this.playingOn.get(player);
    if (playback && !playback.done) playback.ended = detail;
  }

  /** Every 10 ms while it plays: `start` once frame 0 is heard; `finished` once its end is heard and every cue sent. */
  #watch(playback) {
    if (playback.done) return;
    const player = playback.player;
    if (player.anchorFrame !== null && !playback.paused) {
      const heard = player.context.getOutputTimestamp().contextTime ?? 0;
      if (!playback.started && heard >= player.due(0)) this.#start(playback);
      const ended = playback.ended;
      if (ended && player.pending >= player.cues.length && heard >= ended.contextFrame / player.rate) {
        this.#start(playback);
        const last = playback.last ?? { frame: ended.frame, heard: this.#now() };
        this.#finish(playback, "finished", {}, last.frame, last.heard);
        return;
      }
    }
    playback.timer = setTimeout(() => this.#watch(playback), 10);
  }

  /** Ends a playback with its terminal event. */
  #finish(playback, type, members = {}, frame = null, heard = null) {
    if (playback.done) return;
    playback.done = true;
    clearTimeout(playback.timer);
    this.active.delete(playback.id);
    if (this.current === playback) this.current = null;
    if (playback.player && this.playingOn.get(playback.player) === playback) this.playingOn.delete(playback.player);
    this.#event(playback, type, frame, heard ?? (type === "error" ? null : this.#now()), members);
  }

  /** Stops a playback (`stopped`, with `reason`); `silence`: the player closes its playback too. */
  #stop(playback, reason, silence) {
    if (playback.done) return;
    const player = playback.player;
    const frame = player ? this.#position(playback) : null;
    if (player && silence && this.playingOn.get(player) === playback) player.close().catch(() => {});
    this.#finish(playback, "stopped", { reason }, frame);
  }
}
