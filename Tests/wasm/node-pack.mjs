// A `narrator pack --web` folder read in Node with nothing but the folder (its narrator.js and
// narrator.wasm, its narrator-web.json, the files it lists and its WAVs, read here with no
// native decoding): for PackWebTests (render-pack.mjs) and scripts/bench-wasm.mjs.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** A RIFF WAVE file of 32-bit IEEE floats (format 3, or extensible with the float subformat). */
export function readFloatWav(bytes, name) {
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

/**
 * The pack at `folder`: its manifest, and its own narrator.wasm instantiated with the files and
 * audio handed over (only what lesson `uses` lists when one is given, else all of them), each
 * WAV checked against what the manifest says of it.
 */
export async function openPack(folder, lessonPath) {
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, "narrator-web.json"), "utf8"));
  if (manifest.format !== "narrator-web" || manifest.version !== 1) throw new Error("not a narrator-web manifest of version 1");
  const module = await import(pathToFileURL(path.join(folder, "narrator.js")).href);
  const narrator = await module.Narrator.load(fs.readFileSync(path.join(folder, "narrator.wasm")));
  const read = (url) => {
    const relative = decodeURIComponent(url);
    if (relative.startsWith("/") || relative.split("/").includes("..")) throw new Error(`${url}: outside the pack`);
    return fs.readFileSync(path.join(folder, relative));
  };
  const lesson = lessonPath === undefined ? null : manifest.lessons.find((entry) => entry.path === lessonPath);
  if (lessonPath !== undefined && !lesson) throw new Error(`${lessonPath}: not a lesson of the pack`);
  const wanted = (entry) => !lesson || lesson.uses.includes(entry.path);
  for (const file of manifest.files.filter(wanted)) narrator.addFile(file.path, read(file.url));
  for (const entry of manifest.audio.filter(wanted)) {
    const wav = readFloatWav(read(entry.url), entry.url);
    const frames = wav.samples.length / wav.channels;
    if (wav.rate !== entry.sampleRate || wav.channels !== entry.channels || frames !== entry.frames) {
      throw new Error(`${entry.url}: ${frames} frames of ${wav.channels} channels at ${wav.rate} Hz, the manifest says ${entry.frames} of ${entry.channels} at ${entry.sampleRate}`);
    }
    narrator.addAudio(entry.path, entry.channels, wav.samples);
    if (entry.markers) narrator.addMarkers(entry.path, entry.markers);
  }
  return { manifest, narrator, NarratorError: module.NarratorError };
}

/** Renders each job, writing its samples (raw float32) and cue sheet, or its error line. */
export function renderJobs(narrator, NarratorError, jobs) {
  for (const job of jobs) {
    // A speed as text: what JSON cannot carry (NaN, Infinity).
    if (typeof job.speed === "string") job.speed = Number(job.speed);
    if (job.setSpeed) {
      // The same speed through setSpeed: "ok", or the error line.
      try {
        narrator.setSpeed(job.speed);
        fs.writeFileSync(job.setSpeed, "ok");
      } catch (error) {
        if (!(error instanceof NarratorError)) throw error;
        fs.writeFileSync(job.setSpeed, error.message);
      }
      narrator.setSpeed(1);
    }
    try {
      const result = narrator.render(job);
      fs.writeFileSync(job.samples, new Uint8Array(result.samples.buffer));
      fs.writeFileSync(job.cues, result.cues);
      if (job.streamed) {
        // The same program played 128 frames at a time (an AudioWorklet's quantum), at the
        // job's speed if it has one: as many output frames as the render's.
        if (job.speed !== undefined) narrator.setSpeed(job.speed);
        const playback = narrator.open(job);
        const streamed = new Float32Array(Math.ceil(result.frames / 128) * 128 * playback.channels);
        for (let at = 0; at < streamed.length; at += 128 * playback.channels) streamed.set(playback.render(128).subarray(0, 128 * playback.channels), at);
        playback.close();
        narrator.setSpeed(1);
        fs.writeFileSync(job.streamed, new Uint8Array(streamed.buffer, 0, result.frames * playback.channels * 4));
      }
    } catch (error) {
      if (!(error instanceof NarratorError)) throw error;
      fs.writeFileSync(job.error, error.message);
    }
  }
}
