// The browser build's speed in Node: a program of a `narrator pack --web` folder mixed 128
// frames at a time (an AudioWorklet's quantum) by narrator.wasm, against real time. A
// benchmark, not a test: it prints figures and asserts nothing (scripts/bench-wasm.sh).
//
// Usage: node scripts/bench-wasm.mjs PACK LESSON PROGRAM-JSON [ROUNDS]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [folder, lessonName, programText, roundsText] = process.argv.slice(2);
const { openPack } = await import(pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), "../Tests/wasm/node-pack.mjs")).href);
const manifest = JSON.parse(fs.readFileSync(path.join(folder, "narrator-web.json"), "utf8"));
const lesson = manifest.lessons.find((entry) => entry.path.endsWith("/" + lessonName));
if (!lesson) throw new Error(`${lessonName}: not in the pack`);
const { narrator } = await openPack(folder, lesson.path);
const { speed = 1, ...asked } = JSON.parse(programText);
const program = { lesson: lesson.path, seed: 7, ...asked };
// At a speed other than 1, through the playback's stretcher (Sonic): the first setSpeed makes
// it (allocations and Sonic's buffers grown by running silence through them), timed apart.
let stageMade = null;
if (speed !== 1) {
  const started = process.hrtime.bigint();
  narrator.setSpeed(speed);
  stageMade = Number(process.hrtime.bigint() - started) / 1e6;
}
const rounds = Number(roundsText ?? 5);
const times = [];
let frames = 0;
for (let round = 0; round < rounds; round++) {
  const playback = narrator.open(program);
  // The output frames: the timeline's, or at a speed as many as the stretched render has.
  frames = Math.round(playback.frames / Math.fround(speed));
  const started = process.hrtime.bigint();
  for (let at = 0; at < frames; at += 128) playback.render(128);
  times.push(Number(process.hrtime.bigint() - started) / 1e9);
  playback.close();
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
const quanta = Math.ceil(frames / 128);
console.log(
  `${lesson.path} ${programText}: ${frames} output frames at ${lesson.sampleRate} Hz (${(frames / lesson.sampleRate).toFixed(1)} s) in ` +
    `${quanta} quanta of 128: median ${(median * 1000).toFixed(1)} ms of ${rounds} rounds, ` +
    `${((median / quanta) * 1e6).toFixed(2)} µs a quantum, ${(frames / lesson.sampleRate / median).toFixed(0)}× real time` +
    (stageMade === null ? "" : `; the speed stage made in ${stageMade.toFixed(1)} ms`),
);
