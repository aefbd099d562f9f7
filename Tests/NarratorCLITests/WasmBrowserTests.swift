import Foundation
import NarratorCore
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The engine in the browser with no daemon: a `narrator pack --web` folder served by a plain
/// static server (Tests/clients/wasm_browser.py) and driven in headless Chromium through the
/// test pages of Tests/wasm/pages. The mixer runs in the AudioWorklet (narrator-worklet.js).
@Suite(.serialized) struct WasmBrowserTests {
    static let driver = Repo.path("Tests/clients/wasm_browser.py")
    static var ready: Bool {
        FileManager.default.fileExists(atPath: WasmEngineTests.wasm) && PulseTestServer.findExecutable("chromium") != nil
            && Clients.havePythonWebSockets
    }

    /// The sample library packed for the web, with the test pages in `pages/`.
    static func pack(_ dir: TempDir) throws -> (folder: String, manifest: [String: Any]) {
        let folder = dir.file("web")
        let pack = try run(Repo.narrator, ["pack", Repo.path("Timings/lessons"), "--to", folder, "--web", "--no-progress"])
        try #require(pack.status == 0, "pack --web: \(pack.stderr)")
        try FileManager.default.createDirectory(atPath: folder + "/pages", withIntermediateDirectories: true)
        for page in ["offline.html", "live.html"] {
            try FileManager.default.copyItem(atPath: Repo.path("Tests/wasm/pages/" + page), toPath: folder + "/pages/" + page)
        }
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/narrator-web.json"))) as? [String: Any])
        return (folder, manifest)
    }

    /// The pack's path of the lesson file `name` (as the page hands it to the engine).
    static func lessonPath(_ manifest: [String: Any], _ name: String) throws -> String {
        let lessons = try #require(manifest["lessons"] as? [[String: Any]])
        return try #require(lessons.compactMap { $0["path"] as? String }.first { $0.hasSuffix("/" + name) }, "\(name) in the pack")
    }

    static func browse(_ folder: String, _ page: String, _ expression: String) throws -> Any {
        let result = try runTool("python3", [driver, folder, page, expression, "--timeout", "120"])
        try #require(result.status == 0, "\(page) \(expression): \(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }

    /// A chain, a scripted activity and the hat shop (its music bed looping under the taps),
    /// played through the AudioWorklet in an OfflineAudioContext, equal bit for bit to
    /// `narrator render --format f32` of the original lessons.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func theWorkletRendersAsNarratorRenderDoes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        try FileManager.default.createDirectory(atPath: folder + "/refs", withIntermediateDirectories: true)
        let programs: [(name: String, lesson: String, program: [String: Any], native: [String])] = [
            ("sample chain correct", "sample.json", ["chain": "correct", "seed": 7], ["--chain", "correct"]),
            ("sight words, a wrong tap then the answer", "homer-sight-words.json",
             ["activity": "sight-words", "taps": "3:the,6:see", "seed": 7], ["--activity", "sight-words", "--taps", "3:the,6:see"]),
            ("hat shop, its music bed under three taps", "homer-hat-shop.json",
             ["activity": "hat-shop", "state": "first-use", "taps": "1:cat,1.1:hats,1.2:cat", "seed": 7],
             ["--activity", "hat-shop", "--state", "first-use", "--taps", "1:cat,1.1:hats,1.2:cat"]),
        ]
        var jobs: [[String: Any]] = []
        for (index, entry) in programs.enumerated() {
            let reference = "refs/\(index).wav"
            let native = try run(
                Repo.narrator,
                ["render", Repo.path("Timings/lessons/" + entry.lesson)] + entry.native + ["--seed", "7", "--format", "f32", "--output", folder + "/" + reference])
            try #require(native.status == 0, "\(entry.name): \(native.stderr)")
            jobs.append(["name": entry.name, "lesson": try Self.lessonPath(manifest, entry.lesson), "program": entry.program, "reference": "../" + reference])
        }
        let argument = String(decoding: try JSONSerialization.data(withJSONObject: jobs), as: UTF8.self)
        let results = try #require(try Self.browse(folder, "pages/offline.html", "offline(\(argument))") as? [[String: Any]])
        #expect(results.count == programs.count)
        for result in results {
            let name = result["name"] as? String ?? "?"
            #expect(result["frames"] as? Int == result["referenceFrames"] as? Int, "\(name): \(result)")
            #expect(result["channels"] as? Int == result["referenceChannels"] as? Int, "\(name): \(result)")
            #expect(result["differing"] as? Int == 0, "\(name): \(result)")
        }
    }

    /// A speed change is heard where the map says: the sample chain through the worklet in an
    /// OfflineAudioContext, 1.5 asked for at 1 s. Before the change (less its 5 ms fade-out) the
    /// output is `narrator render` bit for bit; the change applies at the frame the fade-out
    /// ends; from there the output's loudness envelope (10 ms RMS) follows the native
    /// `narrator render --speed 1.5` from the frame the map gives the timeline frame heard
    /// there (`round(frame / 1.5)`), best aligned within 10 ms, and not the unstretched render.
    /// (Sonic restarted mid-stream cuts other pitch periods than one run from the start, so the
    /// samples themselves differ: the envelope is what is compared.)
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func aSpeedChangeIsHeardWhereTheMapSays() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        try FileManager.default.createDirectory(atPath: folder + "/refs", withIntermediateDirectories: true)
        for (name, speed) in [("normal", "1"), ("stretched", "1.5")] {
            let native = try run(
                Repo.narrator,
                ["render", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7", "--speed", speed, "--format", "f32",
                 "--output", folder + "/refs/\(name).wav"])
            try #require(native.status == 0, "\(name): \(native.stderr)")
        }
        let job: [String: Any] = [
            "lesson": try Self.lessonPath(manifest, "sample.json"), "program": ["chain": "correct", "seed": 7], "at": 48000, "speed": 1.5,
            "normal": "../refs/normal.wav", "stretched": "../refs/stretched.wav",
        ]
        let argument = String(decoding: try JSONSerialization.data(withJSONObject: job), as: UTF8.self)
        let result = try #require(try Self.browse(folder, "pages/offline.html", "speedChange(\(argument))") as? [String: Any])
        #expect(result["error"] == nil, "\(result)")
        #expect(result["differingBefore"] as? Int == 0, "\(result)")
        // At speed 1 the frame heard is the frame output: the change is at the fade-out's end.
        #expect(result["timeline"] as? Int == result["change"] as? Int, "\(result)")
        #expect((result["envelopeFrames"] as? Int ?? 0) >= 100, "\(result)")
        let lags = try #require(result["lags"] as? [[String: Any]])
        let best = try #require(lags.max { ($0["r"] as? Double ?? -1) < ($1["r"] as? Double ?? -1) })
        let bestR = best["r"] as? Double ?? 0
        #expect(abs(best["lag"] as? Int ?? 99) <= 1, "best aligned \(best["lag"] ?? "?") × 10 ms off the map: \(lags)")
        #expect(bestR > 0.9, "\(lags)")
        #expect((result["unchanged"] as? Double ?? 1) < bestR - 0.2, "the unstretched render fits as well: \(result)")
    }

    /// Live: the speed changed after the second word (`WebPlayer.speed`, resolved once
    /// applied); every cue still arrives, in order, none before the output clock reached the
    /// output frame the stretcher's map gives it, and the words after the change are due
    /// `frames / 1.5` apart, as the map says (within a frame of rounding each).
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func liveCuesAfterASpeedChangeFollowTheMap() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "sample.json")
        let seen = try #require(try Self.browse(folder, "pages/live.html", "speedChange('\(lesson)', 'correct', 1.5)") as? [String: Any])
        let sheet = try #require(seen["sheet"] as? [[String: Any]])
        let events = try #require(seen["events"] as? [[String: Any]])
        let applied = try #require((seen["applied"] as? [String: Any])?["frame"] as? Int)
        let rate = try #require(seen["rate"] as? Double)
        #expect(events.map { "\($0["type"]!)@\($0["frame"]!)" } == sheet.map { "\($0["type"]!)@\($0["frame"]!)" })
        for event in events {
            let due = try #require(event["due"] as? Double)
            let heard = try #require(event["heard"] as? Double)
            #expect(heard >= due, "\(event): dispatched before its frame was output")
            #expect(heard - due < 0.25, "\(event): late by more than 250 ms")
        }
        let after = events.filter { $0["type"] as? String == "word" && ($0["frame"] as? Int ?? 0) >= applied }
        #expect(after.count >= 3, "words after the change: \(after.count)")
        for (a, b) in zip(after, after.dropFirst()) {
            let frames = Double((b["frame"] as? Int ?? 0) - (a["frame"] as? Int ?? 0))
            let dueFrames = ((b["due"] as? Double ?? 0) - (a["due"] as? Double ?? 0)) * rate
            #expect(abs(dueFrames - frames / 1.5) <= 2, "\(a) → \(b): due \(dueFrames) frames apart, the map says \(frames / 1.5)")
        }
    }

    /// Live, on the context's output clock: every cue of the chain's sheet arrives, in order,
    /// none before the output clock reached its frame.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func liveCuesComeInOrderAndNeverEarly() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "sample.json")
        let seen = try #require(try Self.browse(folder, "pages/live.html", "chain('\(lesson)', 'correct')") as? [String: Any])
        let sheet = try #require(seen["sheet"] as? [[String: Any]])
        let events = try #require(seen["events"] as? [[String: Any]])
        #expect(sheet.count >= 10)
        #expect(events.map { "\($0["type"]!)@\($0["frame"]!)" } == sheet.map { "\($0["type"]!)@\($0["frame"]!)" })
        for event in events {
            let due = try #require(event["due"] as? Double)
            let heard = try #require(event["heard"] as? Double)
            #expect(heard >= due, "\(event): dispatched before its frame was output")
            #expect(heard - due < 0.25, "\(event): late by more than 250 ms")
        }
    }

    /// A live activity: a wrong tile tapped during the wait plays the wrong-answer feedback,
    /// the answer then the correct one.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func tapsDuringTheWaitPlayTheirFeedback() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "homer-sight-words.json")
        let seen = try #require(try Self.browse(folder, "pages/live.html", "activity('\(lesson)', 'sight-words', 'prompt-1', 'the', 'see')") as? [String: Any])
        let events = try #require(seen["events"] as? [[String: Any]])
        let order = events.compactMap { event -> String? in
            let type = event["type"] as? String ?? ""
            if type == "chainEnd" { return "chainEnd:\(event["chain"] as? String ?? "")" }
            return ["tap", "feedback", "feedbackEnd"].contains(type) ? type : nil
        }
        let expected = ["chainEnd:prompt-1", "tap", "feedback", "chainEnd:try-again", "feedbackEnd", "tap", "feedback", "chainEnd:correct-1"]
        #expect(Array(order.prefix(expected.count)) == expected, "\(order)")
        for event in events {
            #expect((event["heard"] as? Double ?? 0) >= (event["due"] as? Double ?? 1), "\(event)")
        }
    }

    /// Pause holds the cues and the sound; a seek starts the cues again from its frame; the
    /// master gain at 0 silences the worklet's output and back at 1 it sounds again.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func pauseSeekAndVolumeBehaveAsDocumented() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "sample.json")
        let seen = try #require(try Self.browse(folder, "pages/live.html", "controls('\(lesson)', 'correct')") as? [String: Any])
        #expect(seen["duringPause"] as? Int == 0, "cues while paused")
        #expect((seen["silentWhilePaused"] as? Double ?? 1) == 0, "sound while paused")
        #expect((seen["pausedAt"] as? Int ?? 0) > 0)
        #expect(seen["soughtTo"] as? Int == 0)
        let afterSeek = try #require(seen["afterSeek"] as? [[String: Any]])
        #expect(afterSeek.first?["frame"] as? Int == 0, "the first cue after the seek is the chain's first: \(afterSeek.prefix(2))")
        #expect((seen["muted"] as? Double ?? 1) < 1e-4, "master at 0")
        #expect((seen["loud"] as? Double ?? 0) > 0.01, "master back at 1")
    }

    /// A word tapped while paused is said on its own, its cues with it, and playback goes back
    /// to where it was, still paused, with nothing more heard.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func aWordSaidOnItsOwnGoesBackWherePlaybackWas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "sample.json")
        let seen = try #require(try Self.browse(folder, "pages/live.html", "sayWord('\(lesson)', 'correct')") as? [String: Any])
        let target = try #require(seen["target"] as? [String: Any])
        let said = try #require(seen["saidEvents"] as? [[String: Any]])
        let words = said.filter { $0["type"] as? String == "word" }
        #expect(words.count == 1 && words.first?["frame"] as? Int == target["frame"] as? Int, "the word tapped, once: \(said)")
        #expect(said.allSatisfy { ($0["frame"] as? Int ?? -1) >= (target["frame"] as? Int ?? 0) && ($0["frame"] as? Int ?? .max) < (target["endFrame"] as? Int ?? 0) })
        let back = try #require(seen["back"] as? [String: Any])
        #expect(back["frame"] as? Int == seen["pausedAt"] as? Int, "back where it paused: \(back)")
        #expect(back["playing"] as? Bool == false)
        #expect(seen["after"] as? Int == 0, "nothing heard after going back, while paused")
    }

    /// The README's first lesson, packed for the web, plays from the pack's own page with no
    /// daemon: its activity starts, the question is read word by word, and the cat's tile
    /// tapped plays the praise and "Yes, that is the cat."
    @Test(.requires(ready && PulseTestServer.findExecutable("espeak-ng") != nil, "needs make wasm, chromium, python3-websockets and espeak-ng"))
    func theReadmesFirstLessonPlaysFromAStaticPage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.file("my-lesson")
        try FileManager.default.createDirectory(atPath: lesson, withIntermediateDirectories: true)
        for (name, text) in [("find", "Find the cat."), ("tap", "Tap the cat."), ("again", "Not quite. Try again."), ("great", "Great job!"),
                             ("done", "Well done!"), ("yes", "Yes, that is the cat.")] {
            let made = try run(Repo.narrator, ["synth", text, "--output", "\(lesson)/\(name).wav", "--timings", "\(lesson)/\(name).json"])
            try #require(made.status == 0, "synth: \(made.stderr)")
        }
        // The lesson as the README writes it (its block, read from README.md).
        let readme = try String(contentsOfFile: Repo.path("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "cat > lesson.json <<'EOF'\n"))
        let end = try #require(readme.range(of: "\nEOF\n", range: start.upperBound..<readme.endIndex))
        try String(readme[start.upperBound..<end.lowerBound]).write(toFile: lesson + "/lesson.json", atomically: true, encoding: .utf8)
        let web = dir.file("web")
        let pack = try run(Repo.narrator, ["pack", lesson, "--to", web, "--web", "--no-progress"])
        try #require(pack.status == 0, "pack --web: \(pack.stderr)")
        let script = """
            (async () => {
              const s = window.standalone;
              const select = document.getElementById("program");
              select.value = [...select.options].find((o) => o.text.startsWith("activity find-the-cat")).value;
              document.getElementById("start").click();
              const heard = [];
              const deadline = performance.now() + 60000;
              while (!s.player || !s.playing) { if (performance.now() > deadline) throw new Error("never played"); await new Promise((r) => setTimeout(r, 20)); }
              let asked = false;
              s.player.addEventListener("word", (e) => heard.push(e.detail.text));
              s.player.addEventListener("chainEnd", (e) => { if (e.detail.chain === "question") asked = true; });
              // The tile is tapped once the question has been said (a tap while it is said is ignored).
              while (!asked) { if (performance.now() > deadline) throw new Error("the question was not heard: " + heard); await new Promise((r) => setTimeout(r, 20)); }
              await new Promise((r) => setTimeout(r, 300));
              document.querySelector('#tiles button[data-answer="cat"]').click();
              while (!heard.includes("that")) { if (performance.now() > deadline) throw new Error("no praise after the tap: " + heard); await new Promise((r) => setTimeout(r, 20)); }
              await new Promise((r) => setTimeout(r, 1500));
              return { heard, shown: document.getElementById("words").textContent, tiles: [...document.querySelectorAll("#tiles button")].map((b) => b.textContent) };
            })()
            """
        let seen = try #require(try Self.browse(web, "index.html", script) as? [String: Any])
        let heard = try #require(seen["heard"] as? [String])
        #expect(heard.prefix(3) == ["Find", "the", "cat."], "\(heard)")
        #expect(heard.contains("Yes,") && heard.contains("that"), "the praise chain after the tap: \(heard)")
        #expect(seen["tiles"] as? [String] == ["cat"])
        #expect((seen["shown"] as? String ?? "").contains("cat"), "the words are shown: \(seen)")
    }
}

