import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The engine compiled to WebAssembly (`make wasm`: .build-wasm/narrator.wasm and narrator.js),
/// run in Node, against the native `narrator render` of the same lessons. The wasm build is
/// handed what a page would hand it: the lesson files, timing files as Narrator JSON, and each
/// audio file decoded at the lesson's rate (here by libsndfile and soxr, as natively).
@Suite(.serialized) struct WasmEngineTests {
    static let built = Repo.path(".build-wasm")
    static let wasm = built + "/narrator.wasm"
    static let ready = FileManager.default.fileExists(atPath: wasm) && FileManager.default.isExecutableFile(atPath: "/usr/bin/node")

    /// One render for node to make and the native one to compare it with.
    struct Job {
        let lesson: String
        let program: [String: Any]
        let native: [String]
        let name: String
    }

    /// The sample lessons packed with their loudness targets baked in (the browser measures no
    /// loudness), and what a page would hand the module for them: the files (timings converted
    /// to Narrator's JSON) and the audio decoded at each lesson's rate.
    struct Packed {
        var files: [[String: Any]] = []
        var audio: [[String: Any]] = []
        var lessons: [(path: String, name: String, lesson: Lesson)] = []
    }

    private func packSampleLessons(_ dir: TempDir) throws -> Packed {
        let packed = dir.file("packed")
        let pack = try run(Repo.narrator, ["pack", Repo.path("Timings/lessons"), "--to", packed, "--format", "flac", "--normalize", "--no-progress"])
        try #require(pack.status == 0, "pack: \(pack.stderr)")
        var result = Packed()
        var given: Set<String> = []
        let lessonsDir = packed + "/Timings/lessons"
        let names = try FileManager.default.contentsOfDirectory(atPath: lessonsDir).filter { $0.hasSuffix(".json") }.sorted()
        #expect(names.count >= 10, "the sample lessons: \(names)")
        let decoder = SndFileDecoder(streamAboveSeconds: nil)
        for name in names {
            let path = lessonsDir + "/" + name
            let lesson = try Lesson.load(path: path)
            let rate = lesson.sampleRate
            result.files.append(["path": path, "from": path])
            for spec in lesson.clips.values.sorted(by: { $0.id < $1.id }) {
                if let map = spec.spriteMap, given.insert(map).inserted { result.files.append(["path": map, "from": map]) }
                if let timings = spec.timings, given.insert(timings).inserted {
                    // Narrator's JSON, converted here from whatever format the lesson names.
                    let words = try WordTimings.read(path: timings, rate: rate).words
                    let converted = dir.write("timings-\(given.count).json", WordTimings.writeJSON(words, rate: rate))
                    result.files.append(["path": timings, "from": converted])
                }
                let key = "\(spec.file)@\(rate)"
                guard given.insert(key).inserted else { continue }
                let buffer = try decoder.decode(path: spec.file, sampleRate: rate)
                let raw = dir.file("audio-\(given.count).f32")
                try Data(buffer: buffer.storage).write(to: URL(fileURLWithPath: raw))
                let markers = try decoder.markers(path: spec.file, sampleRate: rate).map { ["label": $0.label, "frame": $0.frame] }
                result.audio.append(["path": spec.file, "channels": buffer.channels, "from": raw, "markers": markers])
            }
            result.lessons.append((path, name, lesson))
        }
        return result
    }

    /// Every chain and every activity (scripted: a wrong choice, then the answer) of every
    /// sample lesson, packed with their loudness targets baked in (the browser measures no
    /// loudness), equal sample for sample and cue sheet byte for byte.
    @Test(.requires(ready, "needs make wasm and node"))
    func everySampleLessonRendersAsNatively() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let packed = try packSampleLessons(dir)
        var jobs: [Job] = []
        for (path, name, lesson) in packed.lessons {
            for chain in lesson.chains.keys.sorted() {
                jobs.append(Job(lesson: path, program: ["chain": chain], native: ["--chain", chain], name: "\(name) chain \(chain)"))
            }
            for (id, activity) in lesson.activities.sorted(by: { $0.key < $1.key }) {
                var taps = ""
                if let step = activity.steps.first {
                    let wrong = step.choices.first { $0 != step.answer }
                    taps = (wrong.map { "2.5:\($0)," } ?? "") + "5:\(step.answer)"
                }
                // An activity with an intro per state starts from the first.
                let state = activity.intro.count > 1 ? activity.intro.keys.sorted().first : nil
                jobs.append(
                    Job(lesson: path, program: ["activity": id, "taps": taps, "state": state ?? ""],
                        native: ["--activity", id, "--taps", taps] + (state.map { ["--state", $0] } ?? []),
                        name: "\(name) activity \(id) taps '\(taps)'"))
            }
        }
        #expect(jobs.count >= 50, "\(jobs.count) renders")
        try renderAndCompare(jobs, packed: packed, in: dir, streamedTail: { _ in 0 })
    }

    /// Every chain of every sample lesson at 0.75 and 1.5, pitch kept (Sonic compiled into the
    /// module from Debian's source of the libsonic the native build links), equals `narrator
    /// render --speed` sample for sample, with cue sheets equal byte for byte (the cues where
    /// the stretcher's map puts them). Played 128 frames at a time through the playback's
    /// stretcher (the worklet's path), it is the same but for its last frames: the live path
    /// has no end to flush Sonic at and feeds silence past the schedule, where the render
    /// flushes (so at most Sonic's held-back frames, 2 × rate / 65, may differ there).
    @Test(.requires(ready, "needs make wasm and node"))
    func chainsAtASpeedRenderAsNatively() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let packed = try packSampleLessons(dir)
        var jobs: [Job] = []
        for (path, name, lesson) in packed.lessons {
            for chain in lesson.chains.keys.sorted() {
                for speed in [0.75, 1.5] {
                    jobs.append(
                        Job(lesson: path, program: ["chain": chain, "speed": speed], native: ["--chain", chain, "--speed", "\(speed)"],
                            name: "\(name) chain \(chain) at \(speed)"))
                }
            }
        }
        #expect(jobs.count >= 40, "\(jobs.count) renders")
        try renderAndCompare(jobs, packed: packed, in: dir, streamedTail: { 2 * ($0 / 65) })
    }

    /// Renders `jobs` in Node and natively (`narrator render … --format f32 --cues`) and
    /// compares them: samples bit for bit, cue sheets byte for byte; and the
    /// program played 128 frames at a time, all but its last `streamedTail(rate)` frames.
    private func renderAndCompare(_ jobs: [Job], packed: Packed, in dir: TempDir, streamedTail: (Int) -> Int) throws {
        let files = packed.files, audio = packed.audio

        var manifestJobs: [[String: Any]] = []
        for (index, job) in jobs.enumerated() {
            var entry: [String: Any] = job.program
            entry["lesson"] = job.lesson
            entry["seed"] = 7
            entry["samples"] = dir.file("wasm-\(index).f32")
            entry["cues"] = dir.file("wasm-\(index).json")
            entry["error"] = dir.file("wasm-\(index).error")
            entry["streamed"] = dir.file("wasm-\(index).streamed.f32")
            manifestJobs.append(entry)
        }
        try runNode(dir: dir, files: files, audio: audio, jobs: manifestJobs)

        for (index, job) in jobs.enumerated() {
            let out = dir.file("native-\(index).wav")
            let cues = dir.file("native-\(index).json")
            let native = try run(
                Repo.narrator, ["render", job.lesson] + job.native + ["--seed", "7", "--output", out, "--format", "f32", "--cues", cues])
            try #require(native.status == 0, "\(job.name): \(native.stderr)")
            let wasmError = try? String(contentsOfFile: dir.file("wasm-\(index).error"), encoding: .utf8)
            try #require(wasmError == nil, "\(job.name): the wasm build failed: \(wasmError ?? "")")
            #expect(try String(contentsOfFile: cues, encoding: .utf8) == String(contentsOfFile: dir.file("wasm-\(index).json"), encoding: .utf8), "\(job.name): cue sheets differ")
            let lesson = try Lesson.load(path: job.lesson)
            let expected = try SndFileDecoder().decode(path: out, sampleRate: lesson.sampleRate)
            // Whole (blocks of 4096, as natively), and 128 frames at a time as a worklet plays it.
            for (how, file) in [("whole", "wasm-\(index).f32"), ("by 128 frames", "wasm-\(index).streamed.f32")] {
                let got = try Data(contentsOf: URL(fileURLWithPath: dir.file(file)))
                let samples = got.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
                #expect(samples.count == expected.storage.count, "\(job.name), \(how): \(samples.count) samples, natively \(expected.storage.count)")
                let compared = how == "whole" ? samples.count : samples.count - streamedTail(lesson.sampleRate) * expected.channels
                let first = samples.count == expected.storage.count ? (0..<max(0, compared)).first { samples[$0].bitPattern != expected.storage[$0].bitPattern } : nil
                #expect(first == nil, "\(job.name), \(how): sample \(first ?? 0) differs")
            }
        }
    }

    /// A malformed lesson gives the line `narrator` prints, word for word.
    @Test(.requires(ready, "needs make wasm and node"))
    func malformedLessonsGiveTheSameErrorLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let tone = dir.file("tone.wav")
        let sox = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "0.2", "sine", "440"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        let bad = [
            #"{"sampleRate": 48000,, }"#,
            #"{"sampleRate": 4800, "clips": {}, "chains": {}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "b"}]}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav", "start": 0.5, "end": 0.1}}, "chains": {"c": [{"clip": "a"}]}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav", "end": 9}}, "chains": {"c": [{"clip": "a"}]}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"silence": 1e300}]}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "a"}]}, "ducking": {"gain": 3}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "pools": {"p": {"clips": []}}, "chains": {"c": [{"pool": "p"}]}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "a"}]}, "activities": {"x": {"steps": [{"answer": "a", "correct": "c", "wrong": ["c"], "idleSeconds": 0.000001}]}}}"#,
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "a"}]}, "locale": "en_US"}"#,
            "{\"sampleRate\": 48000, \"clips\": {\"a\": {\"file\": \"tone.wav\"}}, \"chains\": {\"c\": [{\"clip\": \"a\"}]}, \"x\": \"\u{1F600}\"}",
        ]
        let buffer = try SndFileDecoder().decode(path: tone, sampleRate: 48000)
        let raw = dir.file("tone.f32")
        try Data(buffer: buffer.storage).write(to: URL(fileURLWithPath: raw))
        var files: [[String: Any]] = []
        var jobs: [[String: Any]] = []
        var natives: [String] = []
        for (index, text) in bad.enumerated() {
            let path = dir.write("bad-\(index).json", text)
            files.append(["path": path, "from": path])
            jobs.append([
                "lesson": path, "chain": "c", "seed": 1, "samples": dir.file("w\(index).f32"), "cues": dir.file("w\(index).json"),
                "error": dir.file("w\(index).error"),
            ])
            let native = try run(Repo.narrator, ["render", path, "--chain", "c", "--output", dir.file("n\(index).wav"), "--seed", "1"])
            #expect(native.status == 1, "case \(index): \(native.stderr)")
            natives.append(native.stderr.trimmingCharacters(in: .newlines))
        }
        try runNode(dir: dir, files: files, audio: [["path": tone, "channels": 1, "from": raw]], jobs: jobs)
        for index in bad.indices {
            let line = (try? String(contentsOfFile: dir.file("w\(index).error"), encoding: .utf8)) ?? "(no error)"
            #expect("narrator: " + line == natives[index], "case \(index)")
        }
    }

    /// A speed the stretcher does not take (0, negative, NaN, infinite, past the native maximum
    /// of 2, under its minimum of 0.5) gives the line the native engine gives for it
    /// (`TimeStretcher.check`, what `Playback.setSpeed` and the offline render throw), both for
    /// a render and for a playback's `setSpeed`; a speed in range renders.
    @Test(.requires(ready, "needs make wasm and node"))
    func badSpeedsGiveTheSameErrorLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let tone = dir.file("tone.wav")
        let sox = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "0.2", "sine", "440"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        let lesson = dir.write("lesson.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        let buffer = try SndFileDecoder().decode(path: tone, sampleRate: 48000)
        let raw = dir.file("tone.f32")
        try Data(buffer: buffer.storage).write(to: URL(fileURLWithPath: raw))
        let speeds: [(text: String, value: Double)] = [
            ("0", 0), ("-1", -1), ("NaN", .nan), ("Infinity", .infinity), ("-Infinity", -.infinity), ("2.0001", 2.0001), ("2.5", 2.5),
            ("0.49", 0.49), ("1e300", 1e300), ("2", 2), ("0.5", 0.5),
        ]
        var jobs: [[String: Any]] = []
        for (index, speed) in speeds.enumerated() {
            jobs.append([
                "lesson": lesson, "chain": "c", "seed": 1, "speed": speed.text, "samples": dir.file("w\(index).f32"),
                "cues": dir.file("w\(index).json"), "error": dir.file("w\(index).error"), "setSpeed": dir.file("w\(index).set"),
            ])
        }
        try runNode(dir: dir, files: [["path": lesson, "from": lesson]], audio: [["path": tone, "channels": 1, "from": raw]], jobs: jobs)
        for (index, speed) in speeds.enumerated() {
            var native: String?
            do throws(NarratorError) { try TimeStretcher.check(speed.value) } catch { native = error.description }
            let rendered = try? String(contentsOfFile: dir.file("w\(index).error"), encoding: .utf8)
            let set = try String(contentsOfFile: dir.file("w\(index).set"), encoding: .utf8)
            #expect(rendered == native, "speed \(speed.text): render")
            #expect(set == (native ?? "ok"), "speed \(speed.text): setSpeed")
            if native == nil { #expect(FileManager.default.fileExists(atPath: dir.file("w\(index).f32")), "speed \(speed.text) renders") }
        }
        // One line, written out for one value: what the native build says, not only the same.
        #expect((try? String(contentsOfFile: dir.file("w0.error"), encoding: .utf8)) == "TimeStretcher: speed 0.0 is outside 0.5…2.0")
    }

    private func runNode(dir: TempDir, files: [[String: Any]], audio: [[String: Any]], jobs: [[String: Any]]) throws {
        let manifest: [String: Any] = [
            "wasm": Self.wasm, "narrator": URL(fileURLWithPath: Self.built + "/narrator.js").absoluteString, "files": files, "audio": audio,
            "jobs": jobs,
        ]
        let path = dir.file("manifest.json")
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
        let node = try run("/usr/bin/node", [Repo.path("Tests/wasm/render.mjs"), path])
        try #require(node.status == 0, "node: \(node.stderr)")
    }
}
