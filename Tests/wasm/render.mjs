// Renders jobs with narrator.wasm in Node, for WasmEngineTests: node render.mjs MANIFEST.json
//
// The manifest: {"wasm": path, "narrator": path of narrator.js,
//   "files": [{"path": as the lesson names it, "from": file to read}],
//   "audio": [{"path", "channels", "from": raw little-endian float32 file, "markers": [{label, frame}]?}],
//   "jobs": [{"lesson", "chain"|"activity", "taps"?, "state"?, "seed", "samples": out, "cues": out, "error": out,
//             "streamed": out?}]}
// Each job writes its samples (raw float32) and cue sheet, or its error line; with "streamed",
// also the samples of the same program played 128 frames at a time (an AudioWorklet's quantum).
import fs from "node:fs";
import { renderJobs } from "./node-pack.mjs";

const manifest = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const { Narrator, NarratorError } = await import(manifest.narrator);
const narrator = await Narrator.load(fs.readFileSync(manifest.wasm));
for (const file of manifest.files) narrator.addFile(file.path, fs.readFileSync(file.from));
for (const clip of manifest.audio) {
  const bytes = fs.readFileSync(clip.from);
  narrator.addAudio(clip.path, clip.channels, new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
  if (clip.markers) narrator.addMarkers(clip.path, clip.markers);
}
renderJobs(narrator, NarratorError, manifest.jobs);
