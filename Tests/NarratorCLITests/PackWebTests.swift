import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// `narrator pack --web` of the sample library, played from the folder alone: Node loads the
/// folder's narrator.js and narrator.wasm, its narrator-web.json and the files it lists, reads
/// its WAVs with a JavaScript reader of its own (Tests/wasm/render-pack.mjs), and renders every
/// chain and every scripted activity. The truth it is held to: `narrator render` of the
/// ORIGINAL lessons (Timings/lessons, their loudness targets measured as they load), sample
/// for sample and cue sheet byte for byte; the WAVs by soxi; the lessons' keys by reading the
/// originals.
@Suite(.serialized) struct PackWebTests {
    static let built = Repo.path(".build-wasm")
    static let ready = FileManager.default.fileExists(atPath: built + "/narrator.wasm") && FileManager.default.isExecutableFile(atPath: "/usr/bin/node")
    static let library = Repo.path("Timings/lessons")

    @Test(.requires(ready, "needs make wasm and node"))
    func everyLessonPlaysFromThePackAsTheOriginalRenders() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let site = dir.file("site")
        // narrator.wasm found as a user's build finds it: the repository's .build-wasm.
        let pack = try run(Repo.narrator, ["pack", Self.library, "--to", site, "--web", "--no-progress"])
        try #require(pack.status == 0, "pack: \(pack.stderr)")
        #expect(dir.contents() == ["site"], "only DIR is left: \(dir.contents())")
        for name in ["narrator.wasm", "narrator.js"] {
            #expect(FileManager.default.contents(atPath: site + "/" + name) == FileManager.default.contents(atPath: Self.built + "/" + name), "\(name) copied")
        }
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: site + "/narrator-web.json"))) as? [String: Any])
        #expect(manifest["format"] as? String == "narrator-web" && manifest["version"] as? Int == 1)
        let lessons = try #require(manifest["lessons"] as? [[String: Any]])
        let files = try #require(manifest["files"] as? [[String: Any]])
        let audio = try #require(manifest["audio"] as? [[String: Any]])

        // Every lesson of the library, with its rate, chains and activities' intro states as
        // the original says them.
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.library).filter { $0.hasSuffix(".json") }.sorted()
        #expect(lessons.map { $0["path"] as? String ?? "" } == names.map { "Timings/lessons/" + $0 })
        var originals: [String: Lesson] = [:]
        for (name, entry) in zip(names, lessons) {
            let original = try Lesson.load(path: Self.library + "/" + name)
            originals[name] = original
            #expect(entry["sampleRate"] as? Int == original.sampleRate, "\(name)")
            #expect(entry["chains"] as? [String] == original.chains.keys.sorted(), "\(name)")
            let activities = (entry["activities"] as? [[String: Any]] ?? []).map { "\($0["id"] as? String ?? ""): \($0["states"] as? [String] ?? ["?"])" }
            #expect(activities == original.activities.keys.sorted().map { "\($0): \(original.activities[$0]!.intro.keys.sorted())" }, "\(name)")
            // What it uses: every clip's file (and timing file) of every locale, as the engine
            // names them when it parses the packed lesson by its path in the pack.
            let packedLesson = try Lesson.parse(
                Data(contentsOf: URL(fileURLWithPath: site + "/Timings/lessons/" + name)), path: "Timings/lessons/" + name,
                directory: URL(fileURLWithPath: site + "/Timings/lessons"))
            let uses = Set(entry["uses"] as? [String] ?? [])
            for variant in [packedLesson] + (try packedLesson.locales.keys.map { try packedLesson.localized(to: $0) }) {
                for spec in variant.clips.values {
                    let named = [spec.file, spec.timings].compactMap { $0 }.map { "Timings/lessons/" + String($0.dropFirst(site.count + "/Timings/lessons/".count)) }
                    #expect(Set(named).isSubset(of: uses), "\(name): \(named) not in uses")
                }
            }
            // Its loudness is baked in: the packed lesson has no target left.
            let packed = try String(contentsOfFile: site + "/Timings/lessons/" + name, encoding: .utf8)
            #expect(!packed.contains("\"loudness\""), "\(name)")
        }
        #expect(originals.values.contains { !$0.loudness.isEmpty }, "a lesson with a loudness target is among them")

        // Every URL is a file inside the folder; every file a lesson names is listed.
        for entry in files + audio {
            let url = try #require(entry["url"] as? String)
            #expect(!url.hasPrefix("/") && !url.split(separator: "/").contains(".."), "\(url)")
            #expect(FileManager.default.fileExists(atPath: site + "/" + (url.removingPercentEncoding ?? url)), "\(url)")
        }
        // Every clip's audio of every lesson and locale, by where it lies in the repository.
        var sources: [String: String] = [:]
        for lesson in originals.values {
            for variant in [lesson] + (try lesson.locales.keys.map { try lesson.localized(to: $0) }) {
                for spec in variant.clips.values {
                    let file = URL(fileURLWithPath: spec.file).standardizedFileURL.path
                    let inside = String(file.dropFirst(Repo.root.standardizedFileURL.path.count + 1))
                    sources[URL(fileURLWithPath: inside).deletingPathExtension().appendingPathExtension("wav").relativePath] = file
                }
            }
        }
        let urls = Set(audio.compactMap { $0["url"] as? String })
        #expect(Set(sources.keys).subtracting(urls).isEmpty, "not listed: \(Set(sources.keys).subtracting(urls).sorted())")

        // Every audio file: a 32-bit float WAV at its lesson's rate, holding its source's frames
        // at that rate (soxi of both).
        for entry in audio {
            let url = entry["url"] as! String
            let file = site + "/" + url
            let kind = try runTool("soxi", ["-t", file]).stdout + (try runTool("soxi", ["-e", file]).stdout)
            let bits = try PackTests.soxi("-b", file)
            #expect(kind == "wav\nFloating Point PCM\n" && bits == 32, "\(url): \(kind), \(bits) bits")
            let rate = try #require(entry["sampleRate"] as? Int)
            #expect(try PackTests.soxi("-r", file) == rate, "\(url)")
            #expect(try PackTests.soxi("-c", file) == entry["channels"] as? Int, "\(url)")
            #expect(try PackTests.soxi("-s", file) == entry["frames"] as? Int, "\(url)")
            let source = try #require(sources[url], "\(url): no clip's file")
            let sourceFrames = Double(try PackTests.soxi("-s", source))
            let sourceRate = Double(try PackTests.soxi("-r", source))
            #expect(entry["frames"] as? Int == Int((sourceFrames * Double(rate) / sourceRate).rounded()), "\(url): the frames of \(source) at \(rate) Hz")
        }
        #expect(audio.contains { $0["markers"] != nil }, "a file whose clips read its markers keeps them in the manifest")

        // Every chain, every activity from each intro state (a wrong tap, then the answer),
        // rendered from the folder alone by Node.
        var jobs: [Job] = []
        for name in names { jobs += Self.jobs(originals[name]!, packed: "Timings/lessons/" + name) }
        #expect(jobs.count >= 50, "\(jobs.count) renders")
        try Self.expectPlaysAsTheOriginals(site: site, jobs: jobs, dir: dir)
    }

    /// One render from the pack, and the original lesson it must equal.
    struct Job {
        let original: Lesson
        let packed: String
        let program: [String: Any]
        let native: [String]
        var name: String { "\(packed) \(native.joined(separator: " "))" }
    }

    /// Every chain of `original`, and every activity from each intro state with scripted taps
    /// (a wrong choice, then the answer), as WasmEngineTests scripts them.
    static func jobs(_ original: Lesson, packed: String) -> [Job] {
        var jobs = original.chains.keys.sorted().map { Job(original: original, packed: packed, program: ["chain": $0], native: ["--chain", $0]) }
        for (id, activity) in original.activities.sorted(by: { $0.key < $1.key }) {
            var taps = ""
            if let step = activity.steps.first {
                taps = (step.choices.first { $0 != step.answer }.map { "2.5:\($0)," } ?? "") + "5:\(step.answer)"
            }
            for state in activity.intro.isEmpty ? [nil] : activity.intro.keys.sorted() as [String?] {
                jobs.append(
                    Job(original: original, packed: packed, program: ["activity": id, "taps": taps, "state": state ?? ""],
                        native: ["--activity", id, "--taps", taps] + (state.map { ["--state", $0] } ?? [])))
            }
        }
        return jobs
    }

    /// Node renders `jobs` from the folder `site` alone (Tests/wasm/render-pack.mjs); each
    /// equals `narrator render` of its original lesson (seed 7), sample for sample and cue sheet
    /// byte for byte, and so does `narrator render` of the packed lesson.
    static func expectPlaysAsTheOriginals(site: String, jobs: [Job], dir: TempDir) throws {
        let nodeJobs: [[String: Any]] = jobs.enumerated().map { index, job in
            job.program.merging([
                "lesson": job.packed, "seed": 7, "samples": dir.file("wasm-\(index).f32"), "cues": dir.file("wasm-\(index).json"),
                "error": dir.file("wasm-\(index).error"),
            ]) { $1 }
        }
        let jobsFile = dir.file("jobs.json")
        try JSONSerialization.data(withJSONObject: nodeJobs).write(to: URL(fileURLWithPath: jobsFile))
        let node = try run("/usr/bin/node", [Repo.path("Tests/wasm/render-pack.mjs"), site, jobsFile])
        try #require(node.status == 0, "node: \(node.stderr)")

        for (index, job) in jobs.enumerated() {
            let out = dir.file("native-\(index).wav")
            let cues = dir.file("native-\(index).json")
            let native = try run(Repo.narrator, ["render", job.original.path] + job.native + ["--seed", "7", "--output", out, "--format", "f32", "--cues", cues])
            try #require(native.status == 0, "\(job.name): \(native.stderr)")
            let wasmError = try? String(contentsOfFile: dir.file("wasm-\(index).error"), encoding: .utf8)
            try #require(wasmError == nil, "\(job.name): from the pack: \(wasmError ?? "")")
            #expect(
                try String(contentsOfFile: cues, encoding: .utf8) == String(contentsOfFile: dir.file("wasm-\(index).json"), encoding: .utf8),
                "\(job.name): cue sheets differ")
            let expected = try Self.samples(out, rate: job.original.sampleRate)
            let got = try Data(contentsOf: URL(fileURLWithPath: dir.file("wasm-\(index).f32"))).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            expectSame(got, expected, "\(job.name), from the pack in Node")
            // The packed lesson natively too (its WAVs keep their cue markers).
            let packedOut = dir.file("packed-\(index).wav")
            let packed = try run(
                Repo.narrator, ["render", site + "/" + job.packed] + job.native + ["--seed", "7", "--output", packedOut, "--format", "f32", "--cues", packedOut + ".json"])
            try #require(packed.status == 0, "\(job.name), the packed lesson natively: \(packed.stderr)")
            #expect(try String(contentsOfFile: cues, encoding: .utf8) == String(contentsOfFile: packedOut + ".json", encoding: .utf8), "\(job.name): packed cue sheet")
            expectSame(try Self.samples(packedOut, rate: job.original.sampleRate), expected, "\(job.name), the packed lesson natively")
        }
        func expectSame(_ got: [Float], _ expected: [Float], _ name: String) {
            #expect(got.count == expected.count, "\(name): \(got.count) samples, the original \(expected.count)")
            let first = got.count == expected.count ? got.indices.first { got[$0].bitPattern != expected[$0].bitPattern } : nil
            #expect(first == nil, "\(name): sample \(first ?? 0) differs (\(first.map { got[$0] } ?? 0) against \(first.map { expected[$0] } ?? 0))")
        }
    }

    /// The samples of a rendered file, copied while its buffer lives (it owns the storage).
    static func samples(_ path: String, rate: Int) throws -> [Float] {
        let buffer = try SndFileDecoder().decode(path: path, sampleRate: rate)
        return withExtendedLifetime(buffer) { Array(buffer.storage) }
    }

    /// Names a URL must encode (a space, '#', '%', ':', a non-ASCII letter), a clip in a
    /// sibling folder (its path keeps "..") at twice its lesson's rate, and an Audacity
    /// label file: fetched by their URLs and rendered from the pack, as the original renders.
    @Test(.requires(ready, "needs make wasm and node"))
    func oddNamesAndFoldersPlayFromThePack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let odd = "a b#1%:\u{E9}.wav"
        try FileManager.default.createDirectory(atPath: dir.file("lib/sounds"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("lib/sounds/" + odd), "synth", "1", "sine", "300:900"]).status == 0)
        dir.write("lib/lessons/t.txt", "0.1\t0.4\thello\n0.5\t0.9\tworld\n")
        let lesson = dir.write(
            "lib/lessons/l.json",
            #"{"sampleRate": 24000, "clips": {"a": {"file": "../sounds/\#(odd)", "timings": "t.txt"}, "b": {"file": "../sounds/\#(odd)", "start": 0.5}}, "#
                + #""chains": {"x": [{"clip": "a"}, {"silence": 0.25}, {"clip": "b"}]}}"#)
        let site = dir.file("site")
        let pack = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", site, "--web", "--no-progress"])
        try #require(pack.status == 0, "\(pack.stderr)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: site + "/narrator-web.json"))) as? [String: Any])
        let audio = try #require((manifest["audio"] as? [[String: Any]])?.first)
        #expect(audio["path"] as? String == "lessons/../sounds/" + odd)
        #expect(audio["url"] as? String == "sounds/a%20b%231%25%3A%C3%A9.wav")
        #expect(audio["sampleRate"] as? Int == 24000 && audio["frames"] as? Int == 24000)
        #expect((manifest["files"] as? [[String: Any]])?.compactMap { $0["url"] as? String } == ["lessons/l.json", "lessons/t.json"])
        try Self.expectPlaysAsTheOriginals(site: site, jobs: Self.jobs(try Lesson.load(path: lesson), packed: "lessons/l.json"), dir: dir)
    }

    /// What --web cannot do is one line, and leaves no DIR (nor anything beside it).
    @Test(.requires(ready, "needs make wasm and node"))
    func refusalsLeaveNoFolder() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.file("empty"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("lib/a.wav"), "synth", "0.5", "sine", "300"]).status == 0)
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}}, "chains": {"x": [{"clip": "a"}]}}"#)
        let out = dir.file("site")
        let cases: [([String], String)] = [
            (["--wasm", dir.file("empty")], "\(dir.file("empty")): narrator.wasm not found: build it with `make wasm` (or give --wasm)"),
            (["--format", "flac"], "--format: does not apply to --web"),
            (["--quality", "0.5"], "--quality: does not apply to --web"),
            (["--shard", "1/2"], "--shard: not with --web"),
        ]
        for (arguments, message) in cases {
            let result = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"] + arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(dir.contents() == ["empty", "lib"], "\(arguments) left \(dir.contents())")
        }

        // One file two lessons need at two rates.
        dir.write("lib/m.json", #"{"sampleRate": 24000, "clips": {"b": {"file": "a.wav"}}, "chains": {"y": [{"clip": "b"}]}}"#)
        let twoRates = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"])
        #expect(twoRates.status == 1)
        #expect(
            twoRates.stderr.split(separator: "\n").count == 1
                && twoRates.stderr.contains("a.wav: is needed at 48000 Hz by \(dir.file("lib/l.json")) and at 24000 Hz by \(dir.file("lib/m.json"))"),
            "\(twoRates.stderr)")
        #expect(dir.contents() == ["empty", "lib"], "left \(dir.contents())")
        try FileManager.default.removeItem(atPath: dir.file("lib/m.json"))

        // A timing file renamed .json onto its lesson.
        dir.write("lib/l.txt", "0.1\t0.2\ta\n")
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav", "timings": "l.txt"}}, "chains": {"x": [{"clip": "a"}]}}"#)
        let onto = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"])
        #expect(onto.status == 1 && onto.stderr.split(separator: "\n").count == 1, "\(onto.stderr)")
        #expect(onto.stderr.contains("l.json: and \(dir.file("lib/l.txt")) would both become \(out)/l.json: rename one"), "\(onto.stderr)")
        #expect(dir.contents() == ["empty", "lib"], "left \(dir.contents())")
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}}, "chains": {"x": [{"clip": "a"}]}}"#)

        // A folder that holds something else is not replaced.
        dir.write("site/keep.txt", "mine")
        let occupied = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"])
        #expect(occupied.status == 1 && occupied.stderr.contains("holds files and is not a web pack"), "\(occupied.stderr)")
        #expect(try String(contentsOfFile: dir.file("site/keep.txt"), encoding: .utf8) == "mine")
        try FileManager.default.removeItem(atPath: out)

        // An earlier web pack is replaced whole: what the library no longer has is gone.
        #expect(try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: out + "/a.wav"))
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("lib/c.wav"), "synth", "0.5", "sine", "400"]).status == 0)
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"c": {"file": "c.wav"}}, "chains": {"x": [{"clip": "c"}]}}"#)
        let again = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"])
        #expect(again.status == 0, "\(again.stderr)")
        // The packed files, the build's (narrator.wasm and its modules) and the page's.
        let build = try FileManager.default.contentsOfDirectory(atPath: WasmEngineTests.built).filter { $0 == "narrator.wasm" || $0.hasSuffix(".js") }
        let page = ["index.html", "narrator-player.js"]
        #expect(try FileManager.default.subpathsOfDirectory(atPath: out).sorted() == (["c.wav", "l.json", "narrator-web.json"] + build + page).sorted())
        #expect(dir.contents() == ["empty", "lib", "site"], "left \(dir.contents())")
    }

    /// What the browser build could not play as the original plays is refused in one line with
    /// no DIR: a WebVTT file whose cues group its words into sentences Narrator's JSON cannot
    /// hold (one cue, whose sentence the JSON gives back, is packed, renamed .json), and a file
    /// whose clips would be leveled apart.
    @Test(.requires(ready, "needs make wasm and node"))
    func refusesWhatTheBrowserCannotPlayAlike() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        try LoudnessTools.speechAtLevels([20], in: dir)
        try FileManager.default.moveItem(atPath: dir.file("c20.wav"), toPath: dir.file("lib/c20.wav"))
        let out = dir.file("site")
        func pack() throws -> ProcessResult { try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--web", "--no-progress"]) }
        let lesson = #"{"sampleRate": 48000, "clips": {"a": {"file": "c20.wav", "timings": "t.vtt"}}, "chains": {"x": [{"clip": "a"}]}}"#
        dir.write("lib/l.json", lesson)
        dir.write("lib/t.vtt", "WEBVTT\n\n00:00:00.100 --> 00:00:01.000\nred <00:00:00.500>apple\n\n00:00:01.200 --> 00:00:02.000\nis <00:00:01.600>sweet\n")
        let grouped = try pack()
        #expect(grouped.status == 1)
        #expect(grouped.stderr.split(separator: "\n").count == 1 && grouped.stderr.contains("t.vtt: its sentences come from its"), "\(grouped.stderr)")
        #expect(dir.contents() == ["lib", "speech.wav"], "left \(dir.contents())")

        dir.write("lib/t.vtt", "WEBVTT\n\n00:00:00.100 --> 00:00:02.000\nred <00:00:00.500>apple <00:00:01.200>is <00:00:01.600>sweet\n")
        let one = try pack()
        #expect(one.status == 0, "\(one.stderr)")
        let timings = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/t.json"))) as? [String: Any])
        #expect((timings["words"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["red", "apple", "is", "sweet"])
        #expect(try String(contentsOfFile: out + "/l.json", encoding: .utf8).contains(#""timings" : "t.json""#))
        try FileManager.default.removeItem(atPath: out)

        dir.write("lib/l.json", """
            {"sampleRate": 48000, "loudness": {"voice": -23, "sfx": -30},
             "clips": {"v": {"file": "c20.wav"}, "x": {"file": "c20.wav", "bus": "sfx"}}, "chains": {"c": [{"clip": "v"}, {"clip": "x"}]}}
            """)
        let apart = try pack()
        #expect(apart.status == 1)
        #expect(apart.stderr.split(separator: "\n").count == 1 && apart.stderr.contains("different loudness gains"), "\(apart.stderr)")
        #expect(dir.contents() == ["lib", "speech.wav"], "left \(dir.contents())")
    }

    /// Each lesson's `programs` in narrator-web.json are what the daemon's `library` lists for
    /// the original lesson (one member each as the daemon gives it), the lesson named by its
    /// path in the pack and each picture by its file there, whose bytes are the original's.
    @Test(.requires(ready && Clients.havePythonWebSockets, "needs make wasm, node and python3-websockets"))
    func theManifestListsTheDaemonsPrograms() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("web")
        let packed = try run(Repo.narrator, ["pack", Repo.path("Timings/lessons"), "--to", out, "--web", "--no-progress"])
        try #require(packed.status == 0, "\(packed.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/narrator-web.json"))) as? [String: Any])
        let lessons = try #require(manifest["lessons"] as? [[String: Any]])
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": 1, "op": "library"}"#])
        #expect(reply.status == 0, "\(reply.stderr)")
        let listed = reply.events.filter { $0.fields["type"] as? String == "program" }.map(\.fields)
        try #require(listed.count >= 40, "\(listed.count) programs")
        var inPack: [[String: Any]] = []
        for lesson in lessons { inPack += try #require(lesson["programs"] as? [[String: Any]], "\(lesson["path"] ?? "")") }
        #expect(inPack.count == listed.count)
        for (daemons, packs) in zip(listed, inPack) {
            let name = daemons["lesson"] as? String ?? ""
            var expected = daemons.filter { !["id", "type", "frame", "heard", "received", "pictures"].contains($0.key) }
            expected["lesson"] = "Timings/lessons/" + name
            var actual = packs
            let pictures = actual.removeValue(forKey: "pictures") as? [String: [String: String]]
            #expect(NSDictionary(dictionary: actual).isEqual(to: expected), "\(name): \(actual) against the daemon's \(expected)")
            let daemonPictures = daemons["pictures"] as? [String: [String: String]]
            #expect(pictures?.mapValues { $0["alt"] } == daemonPictures?.mapValues { $0["alt"] }, "\(name)")
            for (picture, entry) in pictures ?? [:] {
                let original = try #require(try? Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/lessons/" + (entry["url"] ?? "").replacingOccurrences(of: "Timings/lessons/", with: "")))), "\(picture)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/" + (entry["url"] ?? ""))) == original, "\(name) \(picture)")
            }
        }
    }

    /// The build named by $NARRATOR_WASM_DIR (and --wasm, over it) is what is copied, with the
    /// page (the component's demo page, its element given `pack="."`, and narrator-player.js as
    /// the daemon serves them), into a DIR that exists and is empty; a build without
    /// narrator-local.js is refused in one line.
    @Test(.requires(ready, "needs make wasm and node"))
    func copiesTheNamedBuildAndItsPage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("lib/a.wav"), "synth", "0.5", "sine", "300"]).status == 0)
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}}, "chains": {"x": [{"clip": "a"}]}}"#)
        for name in ["narrator.wasm", "narrator.js"] {
            dir.write("build/" + name, "the build's \(name)")
            dir.write("other/" + name, "another build's \(name)")
        }
        try FileManager.default.createDirectory(atPath: dir.file("site"), withIntermediateDirectories: true)
        let old = try HelpTests.narrator(
            ["pack", dir.file("lib"), "--to", dir.file("site"), "--web", "--no-progress"], variables: ["NARRATOR_WASM_DIR": dir.file("build")])
        #expect(old.status == 1 && old.stderr.split(separator: "\n").count == 1 && old.stderr.contains("has no narrator-local.js"), "\(old.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("site")).isEmpty)
        dir.write("build/narrator-local.js", "the build's narrator-local.js")
        dir.write("other/narrator-local.js", "another build's narrator-local.js")
        let result = try HelpTests.narrator(
            ["pack", dir.file("lib"), "--to", dir.file("site"), "--web", "--no-progress"], variables: ["NARRATOR_WASM_DIR": dir.file("build")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("with narrator.wasm, its modules, the <narrator-player> page (index.html) and narrator-web.json"), "\(result.stdout)")
        for (name, text) in [("narrator.wasm", "the build's narrator.wasm"), ("narrator.js", "the build's narrator.js"), ("narrator-local.js", "the build's narrator-local.js")] {
            #expect((try? String(contentsOfFile: dir.file("site/" + name), encoding: .utf8)) == text, "\(name)")
        }
        let component = try String(contentsOfFile: Repo.path("Sources/NarratorService/Page/narrator-player.js"), encoding: .utf8)
        #expect((try? String(contentsOfFile: dir.file("site/narrator-player.js"), encoding: .utf8)) == component)
        let demo = try String(contentsOfFile: Repo.path("Sources/NarratorService/Page/index.html"), encoding: .utf8)
        let page = try String(contentsOfFile: dir.file("site/index.html"), encoding: .utf8)
        #expect(page == demo.replacingOccurrences(of: #"<narrator-player id="player">"#, with: #"<narrator-player id="player" pack=".">"#))
        #expect(page != demo)
        let over = try HelpTests.narrator(
            ["pack", dir.file("lib"), "--to", dir.file("site"), "--web", "--wasm", dir.file("other"), "--no-progress"],
            variables: ["NARRATOR_WASM_DIR": dir.file("build")])
        #expect(over.status == 0, "\(over.stderr)")
        #expect((try? String(contentsOfFile: dir.file("site/narrator.wasm"), encoding: .utf8)) == "another build's narrator.wasm")
        #expect((try? String(contentsOfFile: dir.file("site/narrator-local.js"), encoding: .utf8)) == "another build's narrator-local.js")
    }
}
