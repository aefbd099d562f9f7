// narrator-worklet.js: Narrator's mixer on the browser's audio thread. An AudioWorkletProcessor
// ("narrator") that runs narrator.wasm in the worklet's own memory and mixes each 128-frame
// render quantum there, allocating nothing per quantum. The page (narrator-web.js) sends the
// compiled module, the lesson's files and decoded audio once, then controls as messages; the
// processor answers with the mapping from playback frames to the context's frames whenever it
// changes, from which the page tells when each cue is heard.
import { Narrator } from "./narrator.js";

class NarratorProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { module, files, audio } = options.processorOptions;
    this.narrator = Narrator.fromModule(module);
    for (const file of files) this.narrator.addFile(file.path, file.bytes);
    for (const clip of audio) {
      this.narrator.addAudio(clip.path, clip.channels, clip.samples);
      if (clip.markers && clip.markers.length) this.narrator.addMarkers(clip.path, clip.markers);
    }
    this.playback = null;
    // The frames of the open plan's cues, for the output frames each anchor tells the page.
    this.cueFrames = [];
    this.playing = false;
    this.ended = false;
    this.anchorPending = false;
    // A range said on its own (a word tapped): where it ends, and where to go back after.
    this.range = null;
    // Pause, seek and a word said on its own fade 5 ms out, jump, and fade 5 ms in, as the
    // native engine does (OutputFeed): the jump waits for the end of the fade-out.
    this.fadeFrames = Math.max(1, Math.floor((sampleRate * 5) / 1000));
    this.fadeOutLeft = 0;
    this.fadeInLeft = 0;
    this.afterFade = null;
    this.port.onmessage = (event) => this.handle(event.data);
    // A program in the options opens at once: an OfflineAudioContext renders before any message.
    if (options.processorOptions.program) this.handle({ type: "open", program: options.processorOptions.program });
  }

  /** Tells the page which context frame the next quantum's first frame is heard at. */
  anchor() {
    this.anchorPending = true;
  }

  handle(message) {
    try {
      switch (message.type) {
        case "open":
          if (message.program.speed !== undefined) this.narrator.setSpeed(message.program.speed);
          this.playback = this.narrator.open(message.program);
          this.cueFrames = JSON.parse(this.playback.cues).cues.map((cue) => cue.frame);
          this.playing = !message.paused;
          this.ended = false;
          this.port.postMessage({ type: "opened", id: message.id, cues: this.playback.cues, frames: this.playback.length, channels: this.playback.channels });
          this.anchor();
          break;
        case "pause":
          this.jump(() => {
            this.playing = false;
            this.port.postMessage({ type: "paused", id: message.id, frame: this.playback ? this.playback.position : 0 });
          });
          break;
        case "resume":
          if (this.playback && !this.ended && !this.playing) {
            this.playing = true;
            this.fadeInLeft = this.fadeFrames;
          }
          this.anchor();
          this.port.postMessage({ type: "resumed", id: message.id });
          break;
        case "seek":
          this.jump(() => {
            this.playback.seek(message.frame);
            this.ended = false;
            this.anchor();
            this.port.postMessage({ type: "sought", id: message.id, frame: this.playback.position });
          });
          break;
        case "say": {
          // Plays [start, end) of the timeline on its own, then goes back to where playback was,
          // paused, or playing if it was (`then: "resume"`).
          const wasPlaying = this.playing;
          this.jump(() => {
            const back = this.playback.position;
            this.playback.seek(message.start);
            this.range = { end: message.end, back, resume: message.then === "resume" && wasPlaying };
            this.playing = true;
            this.ended = false;
            this.anchor();
            this.port.postMessage({ type: "saying", id: message.id, back });
          });
          break;
        }
        case "gain":
          // Before play too: the playback opened next starts at it, from its first frame.
          this.narrator.setGain(message.target, message.gain);
          this.port.postMessage({ type: "gained", id: message.id });
          break;
        case "tap": {
          const cues = this.playback.tap(message.answer);
          this.cueFrames = JSON.parse(cues).cues.map((cue) => cue.frame);
          this.port.postMessage({ type: "tapped", id: message.id, cues, frames: this.playback.length, frame: this.playback.position });
          this.anchor();
          break;
        }
        case "speed": {
          // A new speed restarts the stretcher behind a fade, as natively: fade-out at the old
          // speed, the mix back to the frame heard, a new line of the map, fade-in.
          this.narrator.checkSpeed(message.speed);
          this.jump(() => {
            this.narrator.setSpeed(message.speed);
            this.anchor();
            this.port.postMessage({ type: "speeded", id: message.id, speed: message.speed, frame: this.playback ? this.playback.position : 0 });
          });
          break;
        }
        case "close":
          if (this.playback) this.playback.close();
          this.playback = null;
          this.playing = false;
          this.port.postMessage({ type: "closed", id: message.id });
          break;
      }
    } catch (error) {
      this.port.postMessage({ type: "error", id: message.id, message: String(error.message ?? error) });
    }
  }

  /** Runs `change` once the sound has faded out (at once when nothing plays), then fades in. */
  jump(change) {
    if (!this.playback || !this.playing) {
      change();
      if (this.playing) this.fadeInLeft = this.fadeFrames;
      return;
    }
    this.afterFade = change;
    // A fade-in under way turns into a fade-out from the level it reached.
    this.fadeOutLeft = this.fadeInLeft > 0 ? Math.max(1, this.fadeFrames - this.fadeInLeft) : this.fadeFrames;
    this.fadeInLeft = 0;
  }

  /** Mixes `count` frames into `output` from `offset`, with the fades under way applied. */
  mix(output, offset, count) {
    // A word said on its own ends at the output frame its end is heard at (by the speed's map).
    const playing = this.range ? Math.max(0, Math.min(count, this.playback.outputFrame(this.range.end) - this.playback.rendered)) : count;
    const block = this.playback.render(count);
    const channels = this.playback.channels;
    const scale = 1 / this.fadeFrames;
    let fadeOut = this.fadeOutLeft;
    let fadeIn = this.fadeInLeft;
    for (let i = 0; i < count; i++) {
      let gain = 1;
      if (fadeOut > 0) {
        fadeOut--;
        gain = fadeOut * scale;
      } else if (fadeIn > 0) {
        gain = (this.fadeFrames - fadeIn + 1) * scale;
        fadeIn--;
      }
      if (i >= playing) gain = 0;
      for (let c = 0; c < output.length; c++) output[c][offset + i] = block[i * channels + Math.min(c, channels - 1)] * gain;
    }
    this.fadeOutLeft = fadeOut;
    this.fadeInLeft = fadeIn;
  }

  process(inputs, outputs) {
    const output = outputs[0];
    if (!this.playback || !this.playing) {
      for (const channel of output) channel.fill(0);
      return true;
    }
    const frames = output[0].length;
    let done = 0;
    while (done < frames && this.playing) {
      if (this.anchorPending) {
        this.anchorPending = false;
        // Where each cue is heard, in output frames, by the stretcher's map (at speed 1, its frame
        // after the anchor's): the page dispatches it when the output clock reaches it.
        const output = this.playback.rendered;
        const outputs = this.cueFrames.map((frame) => this.playback.outputFrame(frame));
        this.port.postMessage({ type: "anchor", frame: this.playback.position, output, outputs, contextFrame: currentFrame + done });
      }
      const count = this.fadeOutLeft > 0 ? Math.min(frames - done, this.fadeOutLeft) : frames - done;
      this.mix(output, done, count);
      done += count;
      if (this.afterFade && this.fadeOutLeft === 0) {
        const change = this.afterFade;
        this.afterFade = null;
        change();
        if (this.playing) this.fadeInLeft = this.fadeFrames;
      }
      if (this.range && this.playback.position >= this.range.end) {
        const { back, resume } = this.range;
        this.range = null;
        this.playback.seek(back);
        this.playing = resume;
        if (resume) {
          this.fadeInLeft = this.fadeFrames;
          this.anchor();
        }
        this.port.postMessage({ type: "said", frame: back, playing: resume });
      }
    }
    for (let i = done; i < frames; i++) for (const channel of output) channel[i] = 0;
    if (!this.playback) return true;
    if (this.playback.position >= this.playback.length && !this.ended) {
      this.ended = true;
      this.playing = false;
      // A pause, seek or speed asked for in the last 5 ms: its fade-out ended with the playback,
      // so it is applied now (its reply sent), not left waiting for a quantum that never mixes.
      if (this.afterFade) {
        const change = this.afterFade;
        this.afterFade = null;
        this.fadeOutLeft = 0;
        change();
      }
      this.port.postMessage({ type: "ended", frame: this.playback.length, contextFrame: currentFrame + frames });
    }
    return true;
  }
}

registerProcessor("narrator", NarratorProcessor);
