// narrator-web.js: plays a `narrator pack --web` folder in the page, with no daemon. The mixer
// runs in an AudioWorklet (narrator-worklet.js, narrator.wasm in the audio thread); cues are
// dispatched as DOM events when their frame is heard, judged by the context's own output clock
// (AudioContext.getOutputTimestamp), never before.
//
//   import { loadPack, WebPlayer } from "./narrator-web.js";
//   const pack = await loadPack("./");                        // the folder's narrator-web.json
//   const player = await WebPlayer.create(pack, "Timings/lessons/sample.json");
//   player.addEventListener("word", (event) => highlight(event.detail.index));
//   await player.play({ chain: "correct", seed: 7 });
import { Narrator } from "./narrator.js";

/** The pack at `base` (a folder URL): its manifest and compiled narrator.wasm. */
export async function loadPack(base) {
  const folder = new URL(base, typeof location === "object" ? location.href : undefined);
  if (!folder.pathname.endsWith("/")) folder.pathname += "/";
  const manifestResponse = await fetch(new URL("narrator-web.json", folder));
  if (!manifestResponse.ok) throw new Error(`narrator-web.json: HTTP ${manifestResponse.status}`);
  const manifest = await manifestResponse.json();
  if (manifest.format !== "narrator-web" || manifest.version !== 1) throw new Error("narrator-web.json: not a narrator-web pack of version 1");
  const wasm = await fetch(new URL("narrator.wasm", folder));
  if (!wasm.ok) throw new Error(`narrator.wasm: HTTP ${wasm.status}`);
  return new NarratorPack(folder, manifest, await WebAssembly.compile(await wasm.arrayBuffer()));
}

export class NarratorPack {
  constructor(base, manifest, module) {
    this.base = base;
    this.manifest = manifest;
    this.module = module;
    this.decoded = new Map();
  }

  get lessons() {
    return this.manifest.lessons;
  }

  lesson(path) {
    const lesson = this.manifest.lessons.find((entry) => entry.path === path);
    if (!lesson) throw new Error(`${path}: not a lesson of this pack`);
    return lesson;
  }

  async #bytes(url) {
    const response = await fetch(new URL(url, this.base));
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** Interleaved floats of an audio file, decoded by the browser at its own rate (the pack wrote it at its lesson's). */
  async #decode(entry) {
    const key = entry.url;
    if (!this.decoded.has(key)) {
      this.decoded.set(key, (async () => {
        const bytes = await this.#bytes(entry.url);
        const context = new OfflineAudioContext(entry.channels, Math.max(entry.frames, 1), entry.sampleRate);
        const buffer = await context.decodeAudioData(bytes.buffer);
        if (buffer.sampleRate !== entry.sampleRate || buffer.length !== entry.frames) {
          throw new Error(`${entry.url}: decoded to ${buffer.length} frames at ${buffer.sampleRate} Hz, the pack says ${entry.frames} at ${entry.sampleRate}`);
        }
        const channels = buffer.numberOfChannels;
        const samples = new Float32Array(buffer.length * channels);
        for (let c = 0; c < channels; c++) {
          const data = buffer.getChannelData(c);
          for (let i = 0; i < data.length; i++) samples[i * channels + c] = data[i];
        }
        return { channels, samples };
      })());
    }
    return this.decoded.get(key);
  }

  /**
   * What the engine needs for a lesson: the files and audio it uses (the manifest's `uses`;
   * a pack without it: every document, and every audio file at the lesson's rate).
   */
  async prepare(lessonPath) {
    const lesson = this.lesson(lessonPath);
    const uses = lesson.uses ? new Set(lesson.uses) : null;
    const wanted = (entry) => (uses ? uses.has(entry.path) : true);
    const files = await Promise.all(
      this.manifest.files.filter(wanted).map(async (file) => ({ path: file.path, bytes: await this.#bytes(file.url) })),
    );
    const audio = await Promise.all(
      this.manifest.audio
        .filter((entry) => wanted(entry) && entry.sampleRate === lesson.sampleRate)
        .map(async (entry) => ({ path: entry.path, markers: entry.markers ?? [], ...(await this.#decode(entry)) })),
    );
    return { files, audio };
  }

  /** A Narrator instance on the main thread with the lesson's files and audio handed over. */
  async narrator(lessonPath) {
    const narrator = Narrator.fromModule(this.module);
    const { files, audio } = await this.prepare(lessonPath);
    for (const file of files) narrator.addFile(file.path, file.bytes);
    for (const clip of audio) {
      narrator.addAudio(clip.path, clip.channels, clip.samples);
      if (clip.markers.length) narrator.addMarkers(clip.path, clip.markers);
    }
    return narrator;
  }

  /**
   * Renders a program through the same worklet in an OfflineAudioContext at the lesson's rate:
   * an AudioBuffer of the whole program (what the live player plays, without a device).
   */
  async renderOffline(lessonPath, program) {
    const lesson = this.lesson(lessonPath);
    const plan = (await this.narrator(lessonPath)).render({ lesson: lessonPath, ...program });
    const context = new OfflineAudioContext(plan.channels, plan.frames, lesson.sampleRate);
    await context.audioWorklet.addModule(new URL("narrator-worklet.js", this.base));
    const node = new AudioWorkletNode(context, "narrator", {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [plan.channels],
      processorOptions: { module: this.module, ...(await this.prepare(lessonPath)), program: { lesson: lessonPath, ...program } },
    });
    node.connect(context.destination);
    return context.startRendering();
  }
}

/**
 * A lesson played live: an AudioContext at the lesson's rate, the worklet, and the cue
 * events. Each cue is an event named by its type ("word", "pulse", "clipStart", …) and a
 * "cue" event, with `detail` the cue as the cue sheet gives it plus `due` (the context time
 * its frame is heard at) and `heard` (the output clock's time when it was dispatched, never
 * earlier than `due`).
 */
export class WebPlayer extends EventTarget {
  static async create(pack, lessonPath, { context } = {}) {
    const lesson = pack.lesson(lessonPath);
    const audioContext = context ?? new AudioContext({ sampleRate: lesson.sampleRate, latencyHint: "interactive" });
    if (audioContext.sampleRate !== lesson.sampleRate) {
      throw new Error(`${lessonPath}: the AudioContext runs at ${audioContext.sampleRate} Hz, the lesson at ${lesson.sampleRate}`);
    }
    await audioContext.audioWorklet.addModule(new URL("narrator-worklet.js", pack.base));
    const node = new AudioWorkletNode(audioContext, "narrator", {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [audioContext.destination.channelCount >= 2 ? 2 : 1],
      processorOptions: { module: pack.module, ...(await pack.prepare(lessonPath)) },
    });
    node.connect(audioContext.destination);
    return new WebPlayer(audioContext, node, lessonPath);
  }

  constructor(context, node, lessonPath) {
    super();
    this.context = context;
    this.node = node;
    this.lessonPath = lessonPath;
    this.rate = context.sampleRate;
    this.cues = [];
    this.pending = 0;
    this.anchorFrame = null;
    this.anchorContextFrame = null;
    this.paused = false;
    // Where a pause stopped the timeline (after its fade-out): cues before it are still due.
    this.pausedAt = Infinity;
    this.requests = new Map();
    this.nextId = 1;
    this.timer = null;
    node.port.onmessage = (event) => this.#message(event.data);
  }

  #request(message) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.requests.set(id, { resolve, reject });
      this.node.port.postMessage({ ...message, id });
    });
  }

  #message(message) {
    if (message.type === "anchor") {
      this.anchorFrame = message.frame;
      this.anchorContextFrame = message.contextFrame;
      this.anchorOutput = message.output;
      this.cueOutputs = message.outputs;
      this.pending = this.cues.findIndex((cue) => cue.frame >= message.frame);
      if (this.pending < 0) this.pending = this.cues.length;
      this.#tick();
      return;
    }
    if (message.type === "said") {
      // Back where playback was: its cues from there, when it plays again.
      this.paused = !message.playing;
      this.anchorFrame = null;
      this.pending = this.cues.findIndex((cue) => cue.frame >= message.frame);
      if (this.pending < 0) this.pending = this.cues.length;
      this.dispatchEvent(new CustomEvent("said", { detail: message }));
      return;
    }
    if (message.type === "ended") {
      this.dispatchEvent(new CustomEvent("ended", { detail: message }));
      return;
    }
    if (message.cues !== undefined) this.cues = JSON.parse(message.cues).cues;
    if (message.frames !== undefined) this.frames = message.frames;
    const request = this.requests.get(message.id);
    if (!request) return;
    this.requests.delete(message.id);
    if (message.type === "error") request.reject(new Error(message.message));
    else request.resolve(message);
  }

  /** The context time (s) the playback's `frame` is heard at, from the latest anchor (at speed 1). */
  due(frame) {
    return (this.anchorContextFrame + (frame - this.anchorFrame)) / this.rate;
  }

  /** The context time (s) cue `index` is heard at: its output frame by the stretcher's map. */
  #dueOf(index) {
    if (!this.cueOutputs || this.cueOutputs.length !== this.cues.length) return this.due(this.cues[index].frame);
    return (this.anchorContextFrame + (this.cueOutputs[index] - this.anchorOutput)) / this.rate;
  }

  #tick() {
    clearTimeout(this.timer);
    if (this.anchorFrame === null) return;
    // Paused: the frames of the fade-out before the pause were played, their cues are heard.
    const limit = this.paused ? this.pausedAt : Infinity;
    const heard = this.context.getOutputTimestamp().contextTime ?? 0;
    while (this.pending < this.cues.length && this.cues[this.pending].frame < limit) {
      const cue = this.cues[this.pending];
      const due = this.#dueOf(this.pending);
      if (due > heard) break;
      this.pending++;
      const detail = { ...cue, due, heard };
      this.dispatchEvent(new CustomEvent(cue.type, { detail }));
      this.dispatchEvent(new CustomEvent("cue", { detail }));
    }
    if (this.pending < this.cues.length && this.cues[this.pending].frame < limit) {
      const wait = (this.#dueOf(this.pending) - heard) * 1000;
      this.timer = setTimeout(() => this.#tick(), Math.max(1, Math.min(wait, 50)));
    }
  }

  /** Plays a program: { chain } or { activity, live: true, state? }, with { seed }. */
  async play(program) {
    await this.context.resume();
    this.paused = false;
    this.anchorFrame = null;
    const opened = await this.#request({ type: "open", program: { lesson: this.lessonPath, ...program } });
    this.pending = 0;
    return opened;
  }

  /**
   * Pauses behind the 5 ms fade-out: the cues of the frames faded out are still dispatched when
   * heard (the native engine's: the timeline moves on through the fade), none after.
   */
  async pause() {
    this.pausedAt = Infinity;
    this.paused = true;
    const paused = await this.#request({ type: "pause" });
    // A pause that lands at the end: the end's cues (chainEnd, the last clipEnd) are heard too.
    this.pausedAt = paused.frame >= this.frames ? Infinity : paused.frame;
    this.#tick();
    return paused;
  }

  async resume() {
    this.paused = false;
    return this.#request({ type: "resume" });
  }

  /** Moves to `frame` of the playback (cues before it are not dispatched again). */
  async seek(frame) {
    return this.#request({ type: "seek", frame });
  }

  /**
   * Says word `index` of clip `clip` on its own (a word tapped), its cues with it, then goes
   * back where playback was: paused (`then: "pause"`, the default) or playing on if it was
   * (`then: "resume"`). Resolves once the worklet has started the word; a "said" event follows
   * when it is back.
   */
  async say(clip, index, { then = "pause" } = {}) {
    const word = this.cues.find((cue) => cue.type === "word" && cue.clip === clip && cue.index === index);
    if (!word) throw new Error(`no word ${index} of clip '${clip}' in what plays`);
    this.paused = false;
    return this.#request({ type: "say", start: word.frame, end: word.endFrame, then });
  }

  /** A bus's gain ("voice", "sfx", "music") or the master's, a factor from 0 to 4. */
  async setGain(target, gain) {
    return this.#request({ type: "gain", target, gain });
  }

  /** A tap on a live activity: a choice, "replay" or "close". */
  async tap(answer) {
    return this.#request({ type: "tap", answer });
  }

  /**
   * Plays at `value` (0.5 to 2, pitch kept) from now on, and what plays after: applied at the
   * worklet's next quantum behind a 5 ms fade out and in, as natively; resolves once applied
   * (rejects with the native error line for a speed out of range).
   */
  async speed(value) {
    return this.#request({ type: "speed", speed: value });
  }

  async close() {
    clearTimeout(this.timer);
    this.anchorFrame = null;
    return this.#request({ type: "close" });
  }
}
