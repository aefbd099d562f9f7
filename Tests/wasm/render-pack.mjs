// Renders lessons from a `narrator pack --web` folder in Node, for PackWebTests, with nothing
// but the folder (node-pack.mjs). node render-pack.mjs DIR JOBS.json
//
// JOBS.json: [{"lesson": path as the manifest lists it, "chain"|"activity", "taps"?, "state"?,
//              "seed", "samples": out, "cues": out, "error": out}]
// Each job writes its samples (raw float32) and cue sheet, or its error line. Every audio file
// must be what the manifest says: a 32-bit float WAV at its sample rate, channels and frames.
import fs from "node:fs";
import { openPack, renderJobs } from "./node-pack.mjs";

const [folder, jobsPath] = process.argv.slice(2);
const { narrator, NarratorError } = await openPack(folder);
renderJobs(narrator, NarratorError, JSON.parse(fs.readFileSync(jobsPath, "utf8")));
