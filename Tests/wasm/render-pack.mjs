// Renders lessons from a `narrator pack --web` folder in Node, for PackWebTests, with nothing
// but the folder: its narrator.js and narrator.wasm, its narrator-web.json, the files it lists
// and its WAVs (read here, no native decoding). node render-pack.mjs DIR JOBS.json
//
// JOBS.json: [{"lesson": path as the manifest lists it, "chain"|"activity", "taps"?, "state"?,
//              "seed", "samples": out, "cues": out, "error": out}]
// Each job writes its samples (raw float32) and cue sheet, or its error line. Every audio file
// must be what the manifest says: a 32-bit float WAV at its sample rate, channels and frames.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [folder, jobsPath] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(path.join(folder, "narrator-web.json"), "utf8"));
if (manifest.format !== "narrator-web" || manifest.version !== 1) throw new Error("not a narrator-web manifest of version 1");
const { Narrator, NarratorError } = await import(pathToFileURL(path.join(folder, "narrator.js")).href);
const narrator = await Narrator.load(fs.readFileSync(path.join(folder, "narrator.wasm")));

/** The file a manifest URL names, inside the folder. */
function read(url) {
  const relative = decodeURIComponent(url);
  if (relative.startsWith("/") || relative.split("/").includes("..")) throw new Error(`${url}: outside the pack`);
  return fs.readFileSync(path.join(folder, relative));
}

/** A RIFF WAVE file of 32-bit IEEE floats (format 3, or extensible with the float subformat). */
function readFloatWav(bytes, name) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (tag(0) !== "RIFF" || tag(8) !== "WAVE") throw new Error(`${name}: not a RIFF WAVE file`);
  let format = null;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = tag(at);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === "fmt ") {
      let code = view.getUint16(body, true);
      if (code === 0xfffe) code = view.getUint16(body + 24, true);
      format = { code, channels: view.getUint16(body + 2, true), rate: view.getUint32(body + 4, true), bits: view.getUint16(body + 14, true) };
    } else if (id === "data") {
      if (!format || format.code !== 3 || format.bits !== 32) throw new Error(`${name}: not 32-bit float (${JSON.stringify(format)})`);
      const length = Math.min(size, bytes.length - body);
      const samples = new Float32Array(length / 4);
      for (let i = 0; i < samples.length; i++) samples[i] = view.getFloat32(body + i * 4, true);
      return { ...format, samples };
    }
    at = body + size + (size & 1);
  }
  throw new Error(`${name}: no data chunk`);
}

for (const file of manifest.files) narrator.addFile(file.path, read(file.url));
for (const entry of manifest.audio) {
  const wav = readFloatWav(read(entry.url), entry.url);
  const frames = wav.samples.length / wav.channels;
  if (wav.rate !== entry.sampleRate || wav.channels !== entry.channels || frames !== entry.frames) {
    throw new Error(`${entry.url}: ${frames} frames of ${wav.channels} channels at ${wav.rate} Hz, the manifest says ${entry.frames} of ${entry.channels} at ${entry.sampleRate}`);
  }
  narrator.addAudio(entry.path, entry.channels, wav.samples);
  if (entry.markers) narrator.addMarkers(entry.path, entry.markers);
}
for (const job of JSON.parse(fs.readFileSync(jobsPath, "utf8"))) {
  try {
    const result = narrator.render(job);
    fs.writeFileSync(job.samples, new Uint8Array(result.samples.buffer));
    fs.writeFileSync(job.cues, result.cues);
  } catch (error) {
    if (!(error instanceof NarratorError)) throw error;
    fs.writeFileSync(job.error, error.message);
  }
}
