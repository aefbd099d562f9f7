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
        for page in ["offline.html", "live.html", "component.html"] {
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

    /// `ready`: when the page is ready (the test pages set `window.ready`).
    static func browse(_ folder: String, _ page: String, _ expression: String, ready: String = "window.ready === true") throws -> Any {
        let result = try runTool("python3", [driver, folder, page, expression, "--ready", ready, "--timeout", "120"])
        try #require(result.status == 0, "\(page) \(expression): \(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }

    /// A fresh pack in `dir`, and what `function` of the test page `page` returned (an object),
    /// called with the pack's path of the lesson file `lesson` and `arguments`; and that path.
    static func scenario(_ dir: TempDir, _ page: String, _ function: String, lesson file: String, _ arguments: String...) throws -> (
        seen: [String: Any], lesson: String
    ) {
        let (value, lesson) = try call(dir, page, function, lesson: file, arguments)
        return (try #require(value as? [String: Any]), lesson)
    }

    /// As `scenario`, whatever the function returns.
    static func call(_ dir: TempDir, _ page: String, _ function: String, lesson file: String, _ arguments: [String]) throws -> (Any, String) {
        let (folder, manifest) = try pack(dir)
        let lesson = try lessonPath(manifest, file)
        let call = function + "(" + ([lesson] + arguments).map { "'\($0)'" }.joined(separator: ", ") + ")"
        return (try browse(folder, "pages/" + page, call), lesson)
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
        let (seen, _) = try Self.scenario(dir, "live.html", "chain", lesson: "sample.json", "correct")
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
        let (seen, _) = try Self.scenario(dir, "live.html", "activity", lesson: "homer-sight-words.json", "sight-words", "prompt-1", "the", "see")
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
        let (seen, _) = try Self.scenario(dir, "live.html", "controls", lesson: "sample.json", "correct")
        #expect(seen["duringPause"] as? Int == 0, "cues while paused")
        #expect((seen["silentWhilePaused"] as? Double ?? 1) == 0, "sound while paused")
        #expect((seen["pausedAt"] as? Int ?? 0) > 0)
        #expect(seen["soughtTo"] as? Int == 0)
        let afterSeek = try #require(seen["afterSeek"] as? [[String: Any]])
        #expect(afterSeek.first?["frame"] as? Int == 0, "the first cue after the seek is the chain's first: \(afterSeek.prefix(2))")
        #expect((seen["muted"] as? Double ?? 1) < 1e-4, "master at 0")
        #expect((seen["loud"] as? Double ?? 0) > 0.01, "master back at 1")
    }

    /// A cue in the frames a pause fades out over is heard, so it is dispatched, as natively
    /// (the timeline moves on through the fade): paused just before each cue of the chain,
    /// every cue of its sheet still arrives once, in order.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func cuesInAPausesFadeOutAreDispatched() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "live.html", "pauseInFades", lesson: "sample.json", "correct")
        let sheet = try #require(seen["sheet"] as? [[String: Any]]).map { "\($0["type"]!) \($0["frame"]!)" }
        let events = try #require(seen["events"] as? [[String: Any]]).map { "\($0["type"]!) \($0["frame"]!)" }
        let pauses = try #require(seen["pauses"] as? [[String: Int]])
        let inFade = pauses.filter { $0["word"]! < $0["pausedAt"]! }
        #expect(!inFade.isEmpty, "no pause had a word in its fade-out: \(pauses)")
        #expect(events == sheet, "pauses \(pauses)")
        let early = try #require(seen["events"] as? [[String: Any]]).filter { ($0["heard"] as? Double ?? 0) < ($0["due"] as? Double ?? 0) }
        #expect(early.isEmpty, "dispatched before the output clock reached them: \(early)")
    }

    /// A gain set before play holds from the playback's first frame: the master at 0 before
    /// `play` keeps the worklet's output silent until past the first word, and back at 1 it sounds.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func aGainSetBeforePlayHoldsFromTheFirstFrame() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "live.html", "gainBeforePlay", lesson: "sample.json", "correct")
        #expect((seen["words"] as? Int ?? 0) >= 1, "the first word was heard: \(seen)")
        #expect((seen["muted"] as? Double ?? 1) == 0, "sound with the master at 0 since before play")
        #expect((seen["loud"] as? Double ?? 0) > 0.01, "master back at 1")
    }

    /// A word tapped while paused is said on its own, its cues with it, and playback goes back
    /// to where it was, still paused, with nothing more heard.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func aWordSaidOnItsOwnGoesBackWherePlaybackWas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "live.html", "sayWord", lesson: "sample.json", "correct")
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

    /// The README's first lesson, packed for the web, plays from the pack's own page (the
    /// component's demo page, `<narrator-player pack=".">`) with no daemon: picked from its
    /// menu, its activity starts, the question is read word by word and lit in the element, and
    /// the cat's tile tapped plays the praise and "Yes, that is the cat."
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
              const player = document.getElementById("player");
              const wait = async (test, what) => {
                const deadline = performance.now() + 60000;
                while (!test()) { if (performance.now() > deadline) throw new Error(what); await new Promise((r) => setTimeout(r, 20)); }
              };
              const menu = document.getElementById("program");
              await wait(() => [...menu.options].some((o) => o.text === "activity find-the-cat"), "no activity in the menu: " + menu.textContent);
              const heard = [];
              const lit = [];
              let asked = false;
              player.addEventListener("word", (e) => {
                heard.push(e.detail.text);
                const word = player.shadowRoot.querySelector(".word.heard");
                lit.push(word ? word.textContent : null);
              });
              player.addEventListener("chainEnd", (e) => { if (e.detail.chain === "question") asked = true; });
              menu.value = [...menu.options].find((o) => o.text === "activity find-the-cat").value;
              document.getElementById("start").click();
              // The tile is tapped once the question has been said (a tap while it is said is ignored).
              await wait(() => asked, "the question was not heard: " + heard + " " + player.state);
              await new Promise((r) => setTimeout(r, 300));
              player.shadowRoot.querySelector('.tile[data-target="cat"]').click();
              await wait(() => heard.includes("that"), "no praise after the tap: " + heard);
              await new Promise((r) => setTimeout(r, 1500));
              return { heard, lit, shown: player.shadowRoot.querySelector(".text").textContent,
                       tiles: [...player.shadowRoot.querySelectorAll("button.tile")].map((b) => b.dataset.target), menu: [...menu.options].map((o) => o.text) };
            })()
            """
        let seen = try #require(
            try Self.browse(web, "index.html", script, ready: "document.getElementById('player') !== null && customElements.get('narrator-player') !== undefined")
                as? [String: Any])
        let heard = try #require(seen["heard"] as? [String])
        #expect(heard.prefix(3) == ["Find", "the", "cat."], "\(heard)")
        #expect(seen["lit"] as? [String] == heard, "each word lit in the element as it is heard: \(seen)")
        #expect(heard.contains("Yes,") && heard.contains("that"), "the praise chain after the tap: \(heard)")
        #expect(seen["tiles"] as? [String] == ["cat"], "the one tile a child taps")
        #expect((seen["shown"] as? String ?? "").contains("cat"), "the words are shown: \(seen)")
    }

    // MARK: <narrator-player pack>: the component on a pack, no daemon

    /// A line the element received with the daemon's envelope taken out (`id`, `playback`,
    /// `heard`, `delivered`): for a cue, the cue sheet's line for it.
    static func cueLine(_ line: String) -> String {
        line.replacingOccurrences(of: #"^\{"id":"[^"]*","#, with: "{", options: .regularExpression)
            .replacingOccurrences(of: #""(delivered|heard)":(null|[0-9]+),"#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #","playback":"p[0-9]+""#, with: "", options: .regularExpression)
    }

    /// The cue lines of a cue sheet as `narrator cues` / `render --cues` writes it, and its length.
    static func sheetLines(_ text: String) throws -> (lines: [String], frames: Int) {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let cues = lines.filter { $0.hasPrefix("{\"") && !$0.hasPrefix("{\"sampleRate\"") }.map { $0.hasSuffix(",") ? String($0.dropLast()) : $0 }
        let sheet = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (cues, try #require(sheet["frames"] as? Int))
    }

    /// From the pack, with no daemon: the element lists every program of every lesson (as the
    /// lesson files give their chains and activities), its `cues` answer is `narrator cues`
    /// byte for byte in the daemon's envelope, and the chain plays: every cue line is the
    /// sheet's line, in order, and every line a daemon line by the events' schema; each word reaches the listener no earlier than its frame's
    /// output time, on the page's clock and on the output clock, with that word lit.
    @Test(.requires(ready && EventSchema.available, "needs make wasm, chromium, python3-websockets and python3-jsonschema"))
    func theComponentPlaysAChainFromThePack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, manifest) = try Self.pack(dir)
        let lesson = try Self.lessonPath(manifest, "sample.json")
        let native = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7"])
        try #require(native.status == 0, "\(native.stderr)")
        let sheet = try Self.sheetLines(native.stdout)
        let seen = try #require(try Self.browse(folder, "pages/component.html", "chain('\(lesson)', 'correct')") as? [String: Any])
        #expect(seen["state"] as? String == "ended")

        // The listing: each lesson file's chains and activities, by their names in the file.
        var expected: [String] = []
        for path in try FileManager.default.contentsOfDirectory(atPath: Repo.path("Timings/lessons")).sorted() where path.hasSuffix(".json") {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/lessons/" + path)))) as? [String: Any]
            guard let object, object["clips"] != nil || object["chains"] != nil else { continue }
            let name = try Self.lessonPath(manifest, path)
            expected += ((object["chains"] as? [String: Any])?.keys.sorted() ?? []).map { "\(name) chain \($0)" }
            expected += ((object["activities"] as? [String: Any])?.keys.sorted() ?? []).map { "\(name) activity \($0)" }
        }
        #expect(seen["listed"] as? [String] == expected)

        // `cues`: the sheet's lines with `heard` and `delivered` null, then `finished`.
        let listing = try #require(seen["sheetLines"] as? [String])
        let listingID = try #require(listing.first.flatMap { $0.split(separator: "\"").dropFirst(3).first }.map(String.init))
        #expect(listing.dropLast().allSatisfy { $0.hasPrefix("{\"id\":\"\(listingID)\",") && $0.contains(#""delivered":null,"#) && $0.contains(#""heard":null,"#) })
        #expect(listing.dropLast().map(Self.cueLine) == sheet.lines)
        #expect(listing.last == #"{"id":"\#(listingID)","frame":\#(sheet.frames),"heard":null,"sampleRate":48000,"type":"finished"}"#)

        // The playback: `start`, the sheet's cues, `finished` at the last cue.
        let playing = try #require(seen["playing"] as? [String])
        #expect(playing.first?.contains(#""type":"start""#) == true && playing.first?.contains(#""frame":0,"#) == true, "\(playing.prefix(1))")
        #expect(playing.dropFirst().dropLast().map(Self.cueLine) == sheet.lines)
        #expect(playing.last?.contains(#""type":"finished""#) == true)
        // Every line the element received is a daemon line by the events' schema.
        #expect(try EventSchema.problems((listing + playing).joined(separator: "\n"), as: "daemonLine") == nil)
        let events = try #require(seen["events"] as? [[String: Any]])
        let start = try #require(events.first { $0["type"] as? String == "start" })
        let startHeard = try #require(start["heard"] as? Double)
        let words = events.filter { $0["type"] as? String == "word" }
        let nativeWords = sheet.lines.filter { $0.contains(#""type":"word""#) }.compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(words.map { "\($0["text"]!)@\($0["frame"]!)" } == nativeWords.map { "\($0["text"]!)@\($0["frame"]!)" })
        // `finished`: the last cue's frame, as the daemon's.
        let lastCue = try #require(sheet.lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        let finished = try #require(events.last)
        #expect(finished["type"] as? String == "finished" && finished["frame"] as? Int == lastCue["frame"] as? Int, "\(finished)")
        var before = 0.0
        for word in words {
            let frame = try #require(word["frame"] as? Int)
            let heard = try #require(word["heard"] as? Double)
            let at = try #require(word["at"] as? Double)
            #expect(at >= before, "in order: \(word)")
            before = at
            // Heard on the page's clock where frame 0 was plus the frame's time (no pause), to
            // within the jitter of the page's reading of the output clock (headless Chromium's
            // fake output: 7.2 ms seen on a loaded 2-core machine).
            #expect(abs((heard - startHeard) / 1e9 - Double(frame) / 48000) < 0.020, "\(word)")
            #expect(at * 1e6 >= heard, "reached the listener before it was heard: \(word)")
            #expect((word["outputFrame"] as? Int ?? 0) >= (word["dueFrame"] as? Int ?? .max), "before the output clock reached it: \(word)")
            let lit = try #require(word["lit"] as? [String: Any], "no word lit: \(word)")
            #expect(lit["text"] as? String == word["text"] as? String && lit["part"] as? String == "word lit", "\(word)")
        }
    }

    /// An activity played by the element: the wrong tile clicked during the wait is marked
    /// wrong and plays the try-again, the answer's tile is marked right and plays the praise,
    /// and close() ends it; every cue the element heard is `narrator render --taps`' cue sheet
    /// line for the same taps at the same frames, and nothing else.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func aTapOnTheComponentsTilePlaysItsFeedback() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "component.html", "activity", lesson: "homer-sight-words.json", "sight-words", "prompt-1", "the", "see")
        #expect(seen["state"] as? String == "closed")
        #expect((seen["wrongTile"] as? [String])?.contains("wrong") == true, "\(seen["wrongTile"] ?? "")")
        #expect((seen["answerTile"] as? [String])?.contains("correct") == true, "\(seen["answerTile"] ?? "")")
        let events = try #require(seen["events"] as? [[String: Any]])
        let taps = events.filter { $0["type"] as? String == "tap" }
        try #require(taps.count == 3, "the wrong tap, the answer, the close: \(taps)")
        #expect(taps.map { $0["result"] as? String ?? "" } == ["wrong", "correct", "close"])
        // The same taps at the same frames, rendered natively.
        let script = try taps.map { tap -> String in
            let frame = try #require(tap["frame"] as? Int)
            return String(format: "%.9f", Double(frame) / 48000) + ":" + (tap["answer"] as? String ?? "")
        }.joined(separator: ",")
        let cues = dir.file("native.cues.json")
        let native = try run(
            Repo.narrator,
            ["render", Repo.path("Timings/lessons/homer-sight-words.json"), "--activity", "sight-words", "--taps", script, "--seed", "7",
             "--output", dir.file("native.wav"), "--cues", cues])
        try #require(native.status == 0, "\(native.stderr)")
        let sheet = try Self.sheetLines(try String(contentsOfFile: cues, encoding: .utf8))
        let playbackTypes: Set<String> = ["start", "paused", "resumed", "seeked", "finished", "stopped", "error", "closed"]
        let heard = events.filter { !playbackTypes.contains($0["type"] as? String ?? "") }.map { event -> String in
            var cue = event.filter { !["id", "playback", "heard", "delivered", "at", "outputFrame", "dueFrame", "lit", "tiles"].contains($0.key) }
            cue["frame"] = event["frame"]
            return String(decoding: try! JSONSerialization.data(withJSONObject: cue, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
        }
        #expect(heard == sheet.lines, "the element's cues against the native sheet")
        let order = events.compactMap { event -> String? in
            let type = event["type"] as? String ?? ""
            if type == "chainEnd" { return "chainEnd:\(event["chain"] as? String ?? "")" }
            return ["tap", "feedback", "feedbackEnd", "finished", "closed"].contains(type) ? type : nil
        }
        #expect(order == ["chainEnd:prompt-1", "tap", "feedback", "chainEnd:try-again", "feedbackEnd", "tap", "feedback", "chainEnd:correct-1", "feedbackEnd", "tap", "finished", "closed"], "\(order)")
    }

    /// An activity's tiles show the lesson's pictures from the pack: each choice of the first
    /// step with the picture file and alternative text the lesson gives it, drawn.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func theLessonsPicturesShowFromThePack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessonFile = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/lessons/homer-discover.json")))) as? [String: Any])
        let given = try #require(lessonFile["pictures"] as? [String: [String: String]])
        let seen = try #require(try Self.call(dir, "component.html", "pictures", lesson: "homer-discover.json", ["matching"]).0 as? [[String: Any]])
        #expect(seen.count >= 2, "\(seen)")
        for picture in seen {
            let tile = try #require(picture["tile"] as? String)
            let entry = try #require(given[tile], "\(tile) has no picture in the lesson")
            #expect(picture["alt"] as? String == entry["alt"])
            #expect(picture["src"] as? String == "/Timings/lessons/" + (entry["file"] ?? ""), "\(picture)")
            #expect((picture["width"] as? Int ?? 0) > 0, "not drawn: \(picture)")
        }
    }

    /// The element's controls on the pack: pause holds the events and the sound (no word lit),
    /// a word's button clicked while paused says that word alone and goes back, still paused,
    /// resume goes on from the paused frame with the next word of `narrator cues`, a seek to frame 0 starts the cues again from
    /// there, and the volume at 0 is the master bus at 0 (silence at the worklet's output),
    /// back at 1 loud again.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func theComponentsPauseSeekAndVolumeOnThePack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "component.html", "controls", lesson: "sample.json", "correct")
        let native = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7"])
        try #require(native.status == 0, "\(native.stderr)")
        let nativeWords = try Self.sheetLines(native.stdout).lines.compactMap { line -> [String: Any]? in
            let cue = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return cue?["type"] as? String == "word" ? cue : nil
        }
        try #require(nativeWords.count >= 3)
        #expect(seen["duringPause"] as? [String] == [], "events while paused")
        #expect(seen["silentWhilePaused"] as? Double == 0, "sound while paused")
        #expect(seen["litWhilePaused"] as? Bool == false)
        let events = try #require(seen["events"] as? [[String: Any]])
        let paused = try #require(events.first { $0["type"] as? String == "paused" })
        let pausedAt = try #require(paused["frame"] as? Int)
        #expect((nativeWords[1]["frame"] as! Int) < pausedAt && pausedAt < (nativeWords[2]["frame"] as! Int), "paused between the second and third words: \(pausedAt)")
        // The first word's button clicked while paused: it alone is said (lit), then back, paused.
        let said = try #require(seen["said"] as? [[String: Any]])
        #expect(said.map { $0["type"] as? String ?? "" } == ["seeked", "sentence", "word", "seeked", "paused"], "\(said)")
        if said.count == 5 {
            #expect(said[0]["frame"] as? Int == nativeWords[0]["frame"] as? Int && said[0]["from"] as? Int == pausedAt)
            #expect(said[2]["text"] as? String == nativeWords[0]["text"] as? String && said[2]["lit"] as? String == nativeWords[0]["text"] as? String)
            #expect(said[3]["from"] as? Int == nativeWords[0]["endFrame"] as? Int && said[3]["frame"] as? Int == pausedAt)
            #expect(said[4]["frame"] as? Int == pausedAt)
        }
        let resumed = try #require(seen["resumed"] as? [String: Any])
        #expect(resumed["frame"] as? Int == pausedAt)
        let afterResume = try #require(seen["afterResume"] as? [String: Any])
        #expect(afterResume["frame"] as? Int == nativeWords[2]["frame"] as? Int, "the third word next: \(afterResume)")
        let afterSeek = try #require(seen["afterSeek"] as? [[String: Any]])
        #expect(afterSeek.first?["type"] as? String == "seeked" && afterSeek.first?["frame"] as? Int == 0)
        #expect(afterSeek.dropFirst().first?["frame"] as? Int == 0, "the chain's first cue again: \(afterSeek.prefix(2))")
        #expect((seen["loudBefore"] as? Double ?? 0) > 0.01)
        #expect(seen["muted"] as? Double == 0, "master at 0: \(seen["muted"] ?? "")")
        #expect((seen["loud"] as? Double ?? 0) > 0.01, "master back at 1")
        let sent = try #require(seen["sent"] as? [[String: Any]])
        #expect(sent.map { "\($0["bus"]!) \($0["gain"]!)" } == ["master 0", "master 1"])
        #expect(events.last?["type"] as? String == "stopped")
    }

    /// The example of docs/component.md's "Standalone, from a web pack", taken from the page and
    /// written into a pack of the sample library: its button plays the chain, and its caption
    /// shows each word `narrator cues` lists, in order, then "The end".
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func theDocsPackExampleCaptionsItsChain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (folder, _) = try Self.pack(dir)
        let page = try String(contentsOfFile: Repo.path("docs/component.md"), encoding: .utf8)
        let marker = try #require(page.range(of: "<!-- runnable: player-pack -->"))
        let fence = try #require(page.range(of: "```html\n", range: marker.upperBound..<page.endIndex))
        let end = try #require(page.range(of: "\n```", range: fence.upperBound..<page.endIndex))
        try String(page[fence.upperBound..<end.lowerBound]).write(toFile: folder + "/my-app.html", atomically: true, encoding: .utf8)
        let native = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7"])
        try #require(native.status == 0, "\(native.stderr)")
        let words = try Self.sheetLines(native.stdout).lines.compactMap { line -> String? in
            guard let cue = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], cue["type"] as? String == "word" else { return nil }
            return cue["text"] as? String
        }
        let script = """
            (async () => {
              const caption = document.getElementById("caption");
              const player = document.querySelector("narrator-player");
              const shown = [];
              new MutationObserver(() => shown.push(caption.textContent)).observe(caption, { childList: true, characterData: true, subtree: true });
              const deadline = performance.now() + 60000;
              while (player.state !== "ready") { if (performance.now() > deadline) throw new Error("never ready: " + player.state); await new Promise((r) => setTimeout(r, 20)); }
              document.getElementById("go").click();
              while (caption.textContent !== "The end") { if (performance.now() > deadline) throw new Error("no end: " + shown); await new Promise((r) => setTimeout(r, 20)); }
              await new Promise((r) => setTimeout(r, 50));
              return shown;
            })()
            """
        let shown = try #require(
            try Self.browse(folder, "my-app.html", script, ready: "customElements.get('narrator-player') !== undefined") as? [String])
        #expect(shown == words + ["The end"], "\(shown)")
    }

    /// narrator-local.js alone, given requests made to break it (not JSON, no id, an unknown op,
    /// a lesson outside the pack, both a chain and an activity, a bad seed, gain, bus, frame,
    /// word, a tap on a chain, a control of no playback, an id still active, a stop twice): each
    /// is answered by exactly one terminal line, in the daemon's words where it has them, and
    /// the playback still plays until stopped.
    @Test(.requires(ready && EventSchema.available, "needs make wasm, chromium, python3-websockets and python3-jsonschema"))
    func theLocalTransportAnswersEveryRequestOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, _) = try Self.scenario(dir, "component.html", "protocol", lesson: "sample.json", "correct")
        let lines = try #require(seen["lines"] as? [String])
        let events = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let terminal = events.filter { ["finished", "stopped", "error"].contains($0["type"] as? String ?? "") }
        #expect(terminal.count == seen["asked"] as? Int, "one terminal line a request: \(terminal)")
        var byID: [String: [String]] = [:]
        for event in terminal {
            byID["\(event["id"] ?? "null")", default: []].append((event["message"] as? String) ?? (event["type"] as? String ?? ""))
        }
        #expect(terminal.filter { $0["id"] is NSNull }.count == 3, "not JSON, not an object, no id: \(byID)")
        #expect(byID["u"] == ["request: op: unknown op 'dance' (expected one of: play, cues, library, tap, replay, close, stop, subscribe, pause, resume, seek, say, speed, volume)"])
        #expect(byID["l1"] == ["request: lesson: no lesson '../../etc/passwd' in the pack"])
        #expect(byID["l2"] == ["request: activity: give a chain or an activity, not both"])
        #expect(byID["v1"] == ["request: gain: expected a gain from 0 to 4 (a factor: 1 leaves the level alone)"])
        #expect(byID["c1"] == ["request nothing is not playing on this connection"])
        #expect(byID["t1"] == ["request 7 plays a chain: only an activity answered live takes taps"])
        #expect(byID["t2"] == ["request: answer: at most 256 bytes, got 300"])
        #expect(byID["c2"] == ["request: request: expected the id of a request of this connection"])
        #expect(byID["k1"] == ["request: word: no word 0 of clip 'no-such-clip' in what plays"])
        #expect(byID["x1"] == ["finished"])
        #expect(byID["x2"] == ["request 7 is not playing on this connection"])
        #expect(byID["7"]?.sorted() == ["request 7 is still active on this connection: give each request its own id", "stopped"], "\(byID["7"] ?? [])")
        for id in ["l3", "l4", "l5", "v2", "v3", "s1", "k2", "w1", "w2", "r1"] { #expect(byID[id]?.count == 1, "\(id): \(byID[id] ?? [])") }
        // Every line: `id` first, keys then in byte order.
        let key = try NSRegularExpression(pattern: #"(?<=[{,])"([A-Za-z]+)":"#)
        for line in lines {
            let keys = key.matches(in: line, range: NSRange(line.startIndex..., in: line)).map { String(line[Range($0.range(at: 1), in: line)!]) }
            #expect(keys.first == "id" && Array(keys.dropFirst()) == keys.dropFirst().sorted(), "\(line)")
        }
        #expect(seen["thrown"] as? String == "LocalSocket: not open")
        #expect(try EventSchema.problems(lines.joined(separator: "\n"), as: "daemonLine") == nil)
    }

    /// What the pack cannot play is the element's error line, never an exception or a hang: a
    /// lesson not in the pack, a chain not in the lesson (the engine's line, as `narrator`
    /// prints it), a folder with no pack; a speed on a narrator.wasm without it is the
    /// daemon's kind of `error` answer, shown on the status line.
    @Test(.requires(ready, "needs make wasm, chromium and python3-websockets"))
    func whatThePackCannotPlayIsTheComponentsErrorLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (seen, lesson) = try Self.scenario(dir, "component.html", "problems", lesson: "sample.json", "correct")
        let missing = try #require(seen["missing"] as? [String: Any])
        #expect(missing["state"] as? String == "error")
        #expect(missing["status"] as? String == "request: lesson: no lesson 'Timings/lessons/not-packed.json' in the pack")
        let native = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "no-such-chain"])
        #expect(native.status == 1)
        let noChain = try #require(seen["noChain"] as? [String: Any])
        #expect(noChain["state"] as? String == "error")
        // The same line but the lesson's path: the pack's, not the repository's.
        let nativeLine = native.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: Repo.path("Timings/lessons/sample.json"), with: lesson)
            .replacingOccurrences(of: "narrator: ", with: "")
        #expect(noChain["status"] as? String == nativeLine, "\(native.stderr)")
        let noPack = try #require(seen["noPack"] as? [String: Any])
        #expect(noPack["state"] as? String == "error" && noPack["status"] as? String == "narrator-web.json: HTTP 404", "\(noPack)")
        let speed = try #require(seen["speed"] as? [String: Any])
        if speed["hasSpeed"] as? Bool == true {
            #expect((speed["answer"] as? String ?? "").contains(#""type":"finished""#), "\(speed)")
        } else {
            let answer = try #require(speed["answer"] as? String)
            #expect(answer.hasPrefix(#"{"id":"#) && answer.hasSuffix(#","type":"error"}"#) && answer.contains(#""frame":null,"heard":null,"message":"request: op: 'speed' is not in this narrator.wasm"#), "\(answer)")
            #expect((speed["status"] as? String ?? "").hasPrefix("request: op: 'speed' is not in this narrator.wasm"), "\(speed)")
        }
    }
}
