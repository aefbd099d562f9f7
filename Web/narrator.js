// narrator.js: Narrator's engine (narrator.wasm, built from Sources/NarratorEngine with Embedded
// Swift) for the browser and Node. An ES module with no dependencies: it instantiates the
// module, provides the four WASI functions the C library asks for, and moves bytes in and out.
//
//   import { Narrator } from "./narrator.js";
//   const narrator = await Narrator.load(new URL("./narrator.wasm", import.meta.url));
//   narrator.addFile("lessons/sample.json", lessonBytes);
//   narrator.addAudio("lessons/audio/hello.wav", 1, floatsAtTheLessonRate);
//   const { samples, channels, frames, cues } = narrator.render({ lesson: "lessons/sample.json", chain: "correct", seed: 7 });
//
// Errors are thrown as NarratorError, whose message is the line `narrator` prints for the same
// fault (file, place, what is wrong).

// An AudioWorkletGlobalScope has neither TextEncoder/TextDecoder nor crypto: UTF-8 by hand there.
const utf8 = typeof TextEncoder === "function" ? new TextEncoder() : {
  encode(string) {
    const bytes = [];
    for (const character of string) {
      const code = character.codePointAt(0);
      if (code < 0x80) bytes.push(code);
      else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 63));
      else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
      else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
    }
    return new Uint8Array(bytes);
  },
};
const text = typeof TextDecoder === "function" ? new TextDecoder() : {
  decode(bytes) {
    let string = "";
    for (let i = 0; i < bytes.length; ) {
      const byte = bytes[i];
      const length = byte < 0x80 ? 1 : byte < 0xe0 ? 2 : byte < 0xf0 ? 3 : 4;
      let code = length === 1 ? byte : byte & (0xff >> (length + 1));
      for (let k = 1; k < length; k++) code = (code << 6) | (bytes[i + k] & 63);
      string += String.fromCodePoint(code);
      i += length;
    }
    return string;
  },
};

export class NarratorError extends Error {
  constructor(line) {
    super(line);
    this.name = "NarratorError";
  }
}

export class Narrator {
  /** Instantiates narrator.wasm from a URL, a Response, its bytes or a compiled module. */
  static async load(source) {
    let module;
    if (source instanceof WebAssembly.Module) {
      module = source;
    } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
      module = await WebAssembly.compile(source);
    } else {
      const response = source instanceof Response ? source : await fetch(source);
      if (!response.ok) throw new Error(`narrator.wasm: HTTP ${response.status}`);
      module = await WebAssembly.compile(await response.arrayBuffer());
    }
    return Narrator.fromModule(module);
  }

  /** Instantiates a compiled module synchronously (an AudioWorkletGlobalScope has no fetch). */
  static fromModule(module) {
    const narrator = new Narrator();
    const instance = new WebAssembly.Instance(module, { wasi_snapshot_preview1: narrator.#wasi() });
    narrator.#exports = instance.exports;
    return narrator;
  }

  #exports;
  #console = "";

  #memory() {
    return this.#exports.memory.buffer;
  }

  /** What the C library imports: random bytes (hash seeds), a console for a trap's message, exit. */
  #wasi() {
    return {
      // Random bytes seed the engine's hash tables (nothing audible depends on them).
      random_get: (pointer, length) => {
        const bytes = new Uint8Array(this.#memory(), pointer, length);
        if (typeof crypto === "object" && crypto.getRandomValues) {
          for (let at = 0; at < length; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(length, at + 65536)));
        } else {
          for (let i = 0; i < length; i++) bytes[i] = (Math.random() * 256) | 0;
        }
        return 0;
      },
      fd_write: (fd, iovs, count, written) => {
        const view = new DataView(this.#memory());
        let total = 0;
        for (let i = 0; i < count; i++) {
          const base = view.getUint32(iovs + i * 8, true);
          const length = view.getUint32(iovs + i * 8 + 4, true);
          this.#console += text.decode(new Uint8Array(this.#memory(), base, length));
          total += length;
        }
        let newline;
        while ((newline = this.#console.indexOf("\n")) >= 0) {
          console.error(`narrator.wasm: ${this.#console.slice(0, newline)}`);
          this.#console = this.#console.slice(newline + 1);
        }
        view.setUint32(written, total, true);
        return 0;
      },
      // Sonic's one assertion (a pitch change's resampling, which Narrator never asks for)
      // prints to the console and exits: a trap here, as abort would be.
      proc_exit: (code) => {
        throw new WebAssembly.RuntimeError(`narrator.wasm: exit(${code})`);
      },
      fd_close: () => 0,
      fd_seek: () => 70, // ESPIPE: the console cannot seek
    };
  }

  /** Copies `bytes` into the module's memory; returns [pointer, length]. Free with #free. */
  #copyIn(bytes) {
    const pointer = this.#exports.narrator_alloc(bytes.length);
    new Uint8Array(this.#memory(), pointer, bytes.length).set(bytes);
    return [pointer, bytes.length];
  }

  #withBytes(values, body) {
    const copies = values.map((value) => this.#copyIn(typeof value === "string" ? utf8.encode(value) : value));
    try {
      return body(...copies.flat());
    } finally {
      for (const [pointer] of copies) this.#exports.narrator_free(pointer);
    }
  }

  /** Hands over a file a lesson names (the lesson itself, timings as Narrator JSON, a sprite map). */
  addFile(path, bytes) {
    this.#withBytes([path, typeof bytes === "string" ? utf8.encode(bytes) : new Uint8Array(bytes)], (p, pl, b, bl) =>
      this.#exports.narrator_add_file(p, pl, b, bl));
  }

  /** Hands over a clip's audio file decoded at the lesson's rate: interleaved Float32 samples. */
  addAudio(path, channels, samples) {
    if (!(samples instanceof Float32Array)) throw new TypeError("addAudio: samples must be a Float32Array");
    if (!Number.isInteger(channels) || channels < 1 || channels > 32 || samples.length % channels !== 0) {
      throw new RangeError(`addAudio: ${path}: ${samples.length} samples do not make frames of ${channels} channels`);
    }
    const bytes = new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
    const status = this.#withBytes([path, bytes], (p, pl, s) => this.#exports.narrator_add_audio(p, pl, channels, s, samples.length / channels));
    if (status !== 0) throw new RangeError(`addAudio: ${path}: not audio the engine takes`);
  }

  /** Hands over the cue markers of an audio file: [{label, frame}], frames at the lesson's rate. */
  addMarkers(path, markers) {
    const json = JSON.stringify({ markers: markers.map(({ label, frame }) => ({ label, frame })) });
    const status = this.#withBytes([path, json], (p, pl, j, jl) => this.#exports.narrator_add_markers(p, pl, j, jl));
    if (status !== 0) throw new NarratorError(this.#resultText());
  }

  /** Throws the line the native engine gives for a speed out of 0.5…2 (TimeStretcher.check). */
  checkSpeed(speed) {
    if (typeof speed !== "number") throw new TypeError(`speed ${speed} is not a number`);
    if (this.#exports.narrator_speed_check(speed) !== 0) throw new NarratorError(this.#resultText());
  }

  /**
   * Plays the open playback, and those opened after, at `speed` (0.5 to 2, pitch kept: Sonic)
   * from its next output frame on: what the stretcher holds is dropped and the mix goes back to
   * the frame heard there, where a new line of the map begins (the worklet fades out before and
   * in after, as the native engine does). A bad speed throws as `checkSpeed`.
   */
  setSpeed(speed) {
    this.checkSpeed(speed);
    if (this.#exports.narrator_play_speed(speed) !== 0) throw new NarratorError(this.#resultText());
  }

  /**
   * Sets a bus's gain ("voice", "sfx", "music") or the master's, a factor from 0 to 4, for the
   * open playback (ramped from its next block, as natively) and those opened after it (from
   * their first frame, with no ramp: a mixer starts where the gains stand).
   */
  setGain(target, gain) {
    const index = ["voice", "sfx", "music", "master"].indexOf(target);
    if (index < 0 || this.#exports.narrator_play_gain(index, gain) !== 0) throw new RangeError(`setGain: ${target} ${gain}`);
  }

  /** Forgets every file and clip handed over. */
  clear() {
    this.#exports.narrator_clear();
  }

  #resultText() {
    const pointer = this.#exports.narrator_result_text();
    return text.decode(new Uint8Array(this.#memory(), pointer, this.#exports.narrator_result_text_length()));
  }

  #program({ lesson, chain, activity, taps, state = "", seed = 0, live = false }, entry, ...more) {
    if ((chain === undefined) === (activity === undefined)) throw new TypeError("give one of chain or activity");
    const kind = chain !== undefined ? 0 : live ? 2 : 1;
    taps = taps ?? "";
    const status = this.#withBytes([lesson, chain ?? activity, taps, state], (l, ll, i, il, t, tl, s, sl) =>
      entry(l, ll, kind, i, il, t, tl, s, sl, BigInt.asUintN(64, BigInt(seed)), ...more));
    if (status !== 0) throw new NarratorError(this.#resultText());
  }

  /**
   * Opens a playback mixed block by block on the caller's clock (an AudioWorklet's render
   * quantum): `render(frames)` returns the next frames as interleaved floats, the start of a
   * view of the module's memory made once and valid until the next call: no allocation. One playback at a
   * time; opening another closes it. An activity opened with `live: true` is answered by
   * `tap(answer)` as it plays.
   */
  open(program) {
    this.#program(program, this.#exports.narrator_play_open);
    const exports = this.#exports;
    const narrator = this;
    const memory = () => this.#memory();
    const resultText = () => this.#resultText();
    const channels = exports.narrator_result_channels();
    const withBytes = (values, body) => this.#withBytes(values, body);
    let view = null;
    return {
      channels,
      frames: exports.narrator_play_frames(),
      cues: this.#resultText(),
      /** The timeline frame the next output frame plays (behind the frames mixed, at a speed). */
      get position() {
        return exports.narrator_play_position();
      },
      /** Output frames handed out since the playback opened. */
      get rendered() {
        return exports.narrator_play_rendered();
      },
      /** The output frame (counted as `rendered`) at which timeline `frame` is heard, by the speed's map. */
      outputFrame(frame) {
        return exports.narrator_play_output_frame(frame);
      },
      /** Length in frames of the current plan (it changes with a live activity's taps). */
      get length() {
        return exports.narrator_play_frames();
      },
      /** Moves to `frame`: the output from there is the render from that frame. */
      seek(frame) {
        if (!Number.isInteger(frame) || frame < 0) throw new RangeError(`seek: ${frame} is not a frame`);
        exports.narrator_play_seek(frame);
      },
      /** Sets a bus's gain ("voice", "sfx", "music") or the master's: a factor from 0 to 4. */
      setGain(target, gain) {
        narrator.setGain(target, gain);
      },
      /** A live activity's tap (a choice, "replay" or "close") at the next frame; the new cue sheet. */
      tap(answer) {
        const status = withBytes([answer], (a, al) => exports.narrator_play_tap(a, al));
        if (status !== 0) throw new NarratorError(resultText());
        this.cues = resultText();
        return this.cues;
      },
      /**
       * Mixes the next `frames` (1 to 8192): they are the first frames × channels floats of the
       * returned view of the module's memory (one view, made once, valid until the next call).
       */
      render(frames) {
        const pointer = exports.narrator_play_render(frames);
        if (pointer === 0) throw new RangeError(`render: ${frames} frames (1 to 8192, with a playback open)`);
        if (view === null || view.buffer !== memory() || view.byteOffset !== pointer) {
          view = new Float32Array(memory(), pointer, 8192 * channels);
        }
        return view;
      },
      close() {
        exports.narrator_play_close();
      },
    };
  }

  /**
   * Renders a chain, or an activity with scripted taps ("SECONDS:ANSWER,…", as `narrator render
   * --taps`) from an intro `state` (as `--state`), whole; a chain at `speed` (0.5 to 2, pitch
   * kept, as `narrator render --speed`). Returns the interleaved samples (the floats `narrator render --format f32`
   * writes), the channel and frame counts and the cue sheet (the JSON `--cues` writes).
   */
  render(program) {
    const speed = program.speed ?? 1;
    if (typeof speed !== "number") throw new TypeError(`render: speed ${speed} is not a number`);
    this.#program(program, this.#exports.narrator_render, speed);
    const channels = this.#exports.narrator_result_channels();
    const frames = this.#exports.narrator_result_frames();
    const pointer = this.#exports.narrator_result_samples();
    const samples = new Float32Array(this.#memory(), pointer, frames * channels).slice();
    return { samples, channels, frames, cues: this.#resultText() };
  }
}
