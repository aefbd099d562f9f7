import Foundation
import NarratorTestSupport
import Testing

/// The sample lessons of every app in the product documents, run on the virtual clock.
@Suite("Sample lessons")
struct SampleLessonTests {
    static func simulate(_ lesson: String, _ arguments: [String]) throws -> [Simulated.Event] {
        let result = try run(Repo.narrator, ["simulate", Repo.path("Timings/lessons/\(lesson).json"), "--seed", "1"] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
    }

    static func clipFrames(_ name: String) throws -> Int {
        let wav = try WAVFile(path: Repo.path("Audio/lessons/apps/\(name).wav"))
        return Int((Double(wav.frames) * 48000 / Double(wav.sampleRate)).rounded())
    }

    /// Learn with Homer's hat shop: the welcome by state over the music, the camera/mirror
    /// pulse when it ends, tap sounds over it with at most two at once.
    @Test func hatShopWelcomeByStateWithTapSounds() throws {
        let first = try Self.simulate("homer-hat-shop", ["--activity", "hat-shop", "--state", "first-use"])
        let back = try Self.simulate("homer-hat-shop", ["--activity", "hat-shop", "--state", "return-use"])
        #expect(first.contains { $0.type == "clipStart" && $0["clip"] == "welcome-first" })
        #expect(back.contains { $0.type == "clipStart" && $0["clip"] == "welcome-return" })
        // The music is the activity's bed (MusicBedTests): it starts with it, fades out after it.
        #expect(first.contains { $0.type == "musicStart" && $0["clip"] == "music" && $0.frame == 0 })
        let welcomeEnd = 24_000 + (try Self.clipFrames("welcome-first"))
        #expect(first.contains { $0.type == "pulse" && $0["target"] == "mirror" && $0.frame == welcomeEnd })
        #expect(first.contains { $0.type == "activityEnd" && $0.frame == welcomeEnd })
        #expect(first.last?.type == "musicStop" && first.last?.frame == welcomeEnd + 24_000)

        let noState = try run(Repo.narrator, ["simulate", Repo.path("Timings/lessons/homer-hat-shop.json"), "--activity", "hat-shop"])
        #expect(noState.status == 1 && noState.stderr == "narrator: --state: activity 'hat-shop' has an intro per state: choose one of first-use, return-use\n")

        let taps = try Self.simulate("homer-hat-shop", ["--activity", "hat-shop", "--state", "first-use", "--taps", "1:cat,1.1:hats,1.2:cat"])
        #expect(taps.filter { $0.type == "sound" }.map { "\($0["name"]!)@\($0.frame)" } == ["cat@48000", "hats@52800", "cat@57600"])
        #expect(taps.contains { $0.type == "soundCut" && $0.frame == 57600 && $0["name"] == "cat" }, "a third sound cuts the oldest")
        let wrongState = try run(Repo.narrator, ["simulate", Repo.path("Timings/lessons/homer-hat-shop.json"), "--activity", "hat-shop", "--state", "later"])
        #expect(wrongState.stderr == "narrator: --state: 'later': activity 'hat-shop' has an intro per state: choose one of first-use, return-use\n")
        // The welcome is not interrupted by the sounds.
        #expect(!taps.contains { $0.type == "canceled" })
    }

    /// Learn with Homer's discover matching template: "Try again" and the image animates back
    /// when it ends; each right answer a congratulation and the photo explained; after the
    /// fourth, the final audio, then the page advances.
    @Test func discoverMatchingTemplate() throws {
        let trace = try Self.simulate("homer-discover", ["--activity", "matching", "--taps", "3:photo-2,5:photo-1,9:photo-2,13:photo-3,17:photo-4"])
        let tryAgain = try WAVFile(path: Repo.path("Audio/lessons/homer/try-again.wav")).frames
        #expect(trace.contains { $0.type == "feedbackEnd" && $0["kind"] == "wrong" && $0.frame == 144_000 + tryAgain })
        let corrects = trace.filter { $0.type == "feedbackEnd" && $0["kind"] == "correct" }
        #expect(corrects.count == 4)
        let finalStart = try #require(trace.first { $0.type == "chainStart" && $0["chain"] == "all-matched" })
        #expect(finalStart.frame == corrects.last?.frame)
        let finalEnd = try finalStart.frame + Self.clipFrames("all-matched")
        #expect(trace.last?.type == "activityEnd" && trace.last?.frame == finalEnd)
        for k in 1...4 { #expect(trace.contains { $0.type == "clipStart" && $0["clip"] == "photo-\(k)" }) }
    }

    /// The main-menu popup: each line pulses its icon as it begins. The lines are regions of
    /// one file with pulses in the chain, or the whole file with the pulses as its WAV cue
    /// markers: both give the frames the fixture script computed from the lines' lengths.
    @Test func mainMenuLinesPulseTheirIcons() throws {
        let truth = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/fixtures/menu.truth.json")))) as? [String: Any])
        let expected: [String] = try #require(truth["pulses"] as? [[Any]]).map { "\($0[0])@\($0[1])" }
        let total = try #require(truth["frames"] as? Int)
        #expect(try Self.clipFrames("menu") == total)

        let trace = try Self.simulate("homer-main-menu", ["--activity", "main-menu-popup"])
        let pulses: [String] = trace.filter { $0.type == "pulse" }.map { "\($0["target"]!)@\($0.frame)" }
        #expect(pulses == expected)
        for (icon, clip) in [("icon-read", "read"), ("icon-games", "games"), ("icon-library", "library")] {
            let pulse = try #require(trace.first { $0.type == "pulse" && $0["target"] == icon })
            #expect(trace.contains { $0.type == "clipStart" && $0["clip"] == clip && $0.frame == pulse.frame })
        }
        #expect(trace.last?.type == "activityEnd" && trace.last?.frame == total)

        let marked = try Self.simulate("homer-main-menu", ["--activity", "main-menu-markers"])
        let markedPulses: [String] = marked.filter { $0.type == "pulse" }.map { "\($0["target"]!)@\($0.frame)" }
        #expect(markedPulses == expected)
        #expect(marked.last?.type == "activityEnd" && marked.last?.frame == total)
    }

    /// The hat shop's tap sounds are a howler.js sprite: each region, in milliseconds in the
    /// map, plays as a clip of that many frames (the map lists a WebM first, which is skipped).
    @Test func hatShopSoundsComeFromASpriteMap() throws {
        let map = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Audio/lessons/apps/hat-shop-sfx.json")))) as? [String: Any])
        let sprites = try #require(map["sprite"] as? [String: [Double]])
        for (chain, sprite) in [("meow", "meow"), ("hats", "hats")] {
            let frames = Int((try #require(sprites[sprite])[1] / 1000 * 48000).rounded())
            let dir = TempDir()
            defer { dir.remove() }
            let result = try run(
                Repo.narrator,
                ["render", Repo.path("Timings/lessons/homer-hat-shop.json"), "--chain", chain, "--output", dir.file("out.wav"), "--cues", dir.file("cues.json")])
            try #require(result.status == 0, "\(result.stderr)")
            let wav = try WAVFile(path: dir.file("out.wav"))
            #expect(wav.frames == frames)
            let cues = try String(contentsOfFile: dir.file("cues.json"), encoding: .utf8)
            #expect(cues.contains(#"{"clip":"sfx.\#(sprite)","frame":\#(frames),"type":"clipEnd"}"#), "\(cues)")
            // The sound itself, not the silence between the sprites.
            let peak = wav.int16Samples.map { abs(Int($0)) }.max() ?? 0
            #expect(peak > 8000, "peak \(peak)")
        }
    }

    /// Picture Dictionary: the definition highlights word by word; replay starts again from
    /// the word; close cancels the rest.
    @Test func dictionaryPopupReplaysAndCloses() throws {
        let trace = try Self.simulate("picture-dictionary", ["--activity", "word-popup", "--taps", "2:replay,3:close"])
        let words = trace.filter { $0.type == "word" }
        #expect(words.first?["text"] == "apple")
        #expect(words.filter { $0["text"] == "apple" }.map(\.frame).count == 2, "the word again after replay")
        #expect(trace.contains { $0.type == "canceled" && $0.frame == 96_000 })
        #expect(trace.suffix(2).map(\.type) == ["close", "activityEnd"] && trace.last?.frame == 144_000)
        #expect(!trace.contains { $0.frame > 144_000 })
    }

    /// Animal Island: popups narrate by themselves, the speaker button replays, Mr. Goose
    /// hands over to the main screen.
    @Test func animalIslandPopupsAndWelcome() throws {
        for popup in ["screen-time", "change-avatar", "no-wifi"] {
            let trace = try Self.simulate("animal-island", ["--activity", "\(popup)-popup"])
            #expect(trace.last?.type == "activityEnd" && trace.last?["reason"] == "advance")
            let popupEnd = try Self.clipFrames(popup)
            #expect(trace.last?.frame == popupEnd)
        }
        let replayed = try Self.simulate("animal-island", ["--activity", "no-wifi-popup", "--taps", "1:replay"])
        let replayedEnd = try 48_000 + Self.clipFrames("no-wifi")
        #expect(replayed.last?.frame == replayedEnd)
        let goose = try Self.simulate("animal-island", ["--activity", "goose-welcome"])
        #expect(goose.contains { $0.type == "pulse" && $0["target"] == "main-screen" })
        #expect(goose.last?["reason"] == "advance")
    }

    /// iBC's: swiping letters announces each name at priority text, interrupting the last;
    /// the info button (message) waits for nothing less urgent.
    @Test func ibcsLetterNamesInterrupt() throws {
        let trace = try Self.simulate("ibcs", ["--requests", "0:text:letter-a,0.6:text:letter-b,1.0:message:info,1.2:text:letter-c"])
        #expect(Simulated.outcome(trace, "r1") == ["begin@0", "canceled@28800"])
        #expect(Simulated.outcome(trace, "r2") == ["begin@28800", "canceled@48000"])
        #expect(Simulated.outcome(trace, "r3").first == "begin@48000")
        // letter-c waits for the info to finish, then is said.
        let infoEnd = try 48_000 + Self.clipFrames("info")
        #expect(Simulated.outcome(trace, "r4") == ["begin@\(infoEnd)", "end@\(try infoEnd + Self.clipFrames("letter-c") + Self.clipFrames("trace"))"])
    }

    /// K-1 Math: coin announcements queue, each heard whole, then the recap.
    @Test func mathCoinsQueueThenRecap() throws {
        let trace = try Self.simulate("math", ["--requests", "0:message:intro,4:message:dime,4.2:message:nickel,4.4:message:penny,5:message:recap"])
        let begins = trace.filter { $0.type == "begin" }.map { $0["chain"]! }
        #expect(begins == ["intro", "dime", "nickel", "penny", "recap"])
        #expect(!trace.contains { $0.type == "canceled" })
    }
}
