// The browser build's speed in Node: a program of a `narrator pack --web` folder mixed 128
// frames at a time (an AudioWorklet's quantum) by narrator.wasm, against real time. A
// benchmark, not a test: it prints figures and asserts nothing (scripts/bench-wasm.sh).
//
// Usage: node scripts/bench-wasm.mjs PACK LESSON PROGRAM-JSON [ROUNDS]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [folder, lessonName, programText, roundsText] = process.argv.slice(2);
const { Narrator } = await import(pathToFileURL(path.join(folder, "narrator.js")).href);
const manifest = JSON.parse(fs.readFileSync(path.join(folder, "narrator-web.json"), "utf8"));
const lesson = manifest.lessons.find((entry) => entry.path.endsWith("/" + lessonName));
if (!lesson) throw new Error(`${lessonName}: not in the pack`);

/** The samples of a 32-bit float WAV (format 3, or extensible with the float subformat). */
function floatWAV(file) {
  const bytes = fs.readFileSync(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let channels = 0;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString("latin1", at, at + 4);
    const size = view.getUint32(at + 4, true);
    if (id === "fmt ") channels = view.getUint16(at + 10, true);
    if (id === "data") {
      const samples = new Float32Array(size / 4);
      for (let i = 0; i < samples.length; i++) samples[i] = view.getFloat32(at + 8 + i * 4, true);
      return { channels, samples };
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

const narrator = await Narrator.load(fs.readFileSync(path.join(folder, "narrator.wasm")));
for (const file of manifest.files) narrator.addFile(file.path, fs.readFileSync(path.join(folder, decodeURIComponent(file.url))));
for (const entry of manifest.audio.filter((audio) => audio.sampleRate === lesson.sampleRate)) {
  const { channels, samples } = floatWAV(path.join(folder, decodeURIComponent(entry.url)));
  narrator.addAudio(entry.path, channels, samples);
  if (entry.markers && entry.markers.length) narrator.addMarkers(entry.path, entry.markers);
}
const program = { lesson: lesson.path, seed: 7, ...JSON.parse(programText) };
const rounds = Number(roundsText ?? 5);
const times = [];
let frames = 0;
for (let round = 0; round < rounds; round++) {
  const playback = narrator.open(program);
  frames = playback.frames;
  const started = process.hrtime.bigint();
  for (let at = 0; at < frames; at += 128) playback.render(128);
  times.push(Number(process.hrtime.bigint() - started) / 1e9);
  playback.close();
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
const quanta = Math.ceil(frames / 128);
console.log(
  `${lesson.path} ${programText}: ${frames} frames at ${lesson.sampleRate} Hz (${(frames / lesson.sampleRate).toFixed(1)} s) in ` +
    `${quanta} quanta of 128: median ${(median * 1000).toFixed(1)} ms of ${rounds} rounds, ` +
    `${((median / quanta) * 1e6).toFixed(2)} µs a quantum, ${(frames / lesson.sampleRate / median).toFixed(0)}× real time`,
);
