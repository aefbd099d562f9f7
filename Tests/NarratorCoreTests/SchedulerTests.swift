import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorCore
@testable import NarratorEngine

@Suite struct LessonTests {
    /// The lesson of the issue, verbatim: it parses, and playing its chain names the first
    /// clip it does not define.
    @Test func acceptsTheDocumentedLessonVerbatim() throws {
        let json = """
            {
              "sampleRate": 48000,
              "channels": 2,
              "clips": {
                "sfx":   {"file": "sfx/correct.wav"},
                "apple": {"file": "dictionary/apple.wav", "timings": "dictionary/apple.txt"},
                "def":   {"file": "dictionary/apple.wav", "timings": "dictionary/apple.txt", "start": 1.005, "end": 4.44}
              },
              "pools":  {"congrats": {"clips": ["ga", "gb", "gc"], "noRepeat": 2}},
              "chains": {
                "correct": [{"clip": "sfx"}, {"pool": "congrats"}, {"pulse": ["ticket-1"]},
                            {"clip": "p1"}, {"silence": 0.25}, {"clip": "p2"}, {"pulse": ["checkbox"]}]
              }
            }
            """
        let lesson = try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
        #expect(lesson.sampleRate == 48000)
        #expect(lesson.channels == 2)
        #expect(lesson.clips["def"] == Lesson.ClipSpec(
            id: "def", file: "/l/dictionary/apple.wav", timings: "/l/dictionary/apple.txt", start: 1.005, end: 4.44, bus: .voice))
        #expect(lesson.pools["congrats"] == Lesson.Pool(id: "congrats", clips: ["ga", "gb", "gc"], noRepeat: 2))
        #expect(lesson.chains["correct"] == [
            .clip("sfx"), .pool("congrats"), .pulse(targets: ["ticket-1"]), .clip("p1"), .silence(frames: 12000),
            .clip("p2"), .pulse(targets: ["checkbox"]),
        ])
        #expect(throws: NarratorError(file: "/l/lesson.json", place: "pools.congrats.clips[0]", "unknown clip 'ga' (the lesson has: apple, def, sfx)")) {
            try lesson.clipIDs(reachableFrom: "correct")
        }
    }

    @Test func errorsNameTheKey() throws {
        func error(_ json: String) -> NarratorError? {
            do {
                let (l, dir) = try lesson(json)
                defer { dir.remove() }
                _ = try l.clipIDs(reachableFrom: "c")
                return nil
            } catch let e as NarratorError { return e } catch { return nil }
        }
        let clips = #""clips": {"a": {"file": "a.wav"}}"#
        #expect(error("not json")?.description.hasSuffix("lesson.json: line 1, column 1: not valid JSON: 'not' is not a JSON value (a value is a number, a string in double quotes, true, false, null, an array or an object)") == true)
        #expect(error("{\n\"sampleRate\": 48000,\n\"clips\": {}\n\"chains\": {}}")?.place == "line 4, column 1")
        #expect(error(#"{"clips": {}, "chains": {}}"#)?.place == "sampleRate")
        #expect(error(#"{"sampleRate": 48000.5, "clips": {}, "chains": {}}"#)?.place == "sampleRate")
        #expect(error(#"{"sampleRate": 48000, "clip": {}, "chains": {}}"#)?.place == "clip")
        #expect(error(#"{"sampleRate": 48000, \#(clips), "chains": {"c": [{"clip": "b"}]}}"#)?.description.hasSuffix("chains.c[0].clip: unknown clip 'b' (the lesson has: a)") == true)
        #expect(error(#"{"sampleRate": 48000, \#(clips), "chains": {"c": [{"pool": "p"}]}}"#)?.place == "chains.c[0].pool")
        #expect(error(#"{"sampleRate": 48000, \#(clips), "chains": {"d": []}}"#)?.place == "chains.c")
        #expect(error(#"{"sampleRate": 48000, \#(clips), "pools": {"p": {"clips": []}}, "chains": {}}"#)?.message.contains("empty pool") == true)
        #expect(error(#"{"sampleRate": 48000, \#(clips), "chains": {"c": [{"clip": "a", "pool": "p"}]}}"#)?.place == "chains.c[0]")
        #expect(error(#"{"sampleRate": 48000, \#(clips), "chains": {"c": [{"silence": -1}]}}"#)?.place == "chains.c[0].silence")
        #expect(error(#"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav", "start": 2, "end": 1}}, "chains": {}}"#)?.place == "clips.a.end")
        #expect(error(#"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav", "gain": 1}}, "chains": {}}"#)?.place == "clips.a.gain")
    }
}

@Suite struct SchedulerTests {
    let decoder = MemoryDecoder(files: [
        "1.wav": (1, 1000), "2.wav": (2, 500), "3.wav": (1, 300), "4.wav": (1, 700), "5.wav": (1, 200),
    ])

    func schedule(_ json: String, chain: String = "c", repeats: Int = 1, seed: UInt64 = 1, timings: [String: String] = [:]) throws -> Schedule {
        let (l, dir) = try lesson(json, timings: timings)
        defer { dir.remove() }
        let bank = try ClipBank.prepare(lesson: l, chain: chain, decoder: decoder)
        var draws = PoolDraws(seed: seed)
        return try Scheduler.schedule(chain: chain, repeats: repeats, bank: bank, draws: &draws)
    }

    @Test func clipsPlayBackToBackWithSilenceAndPulses() throws {
        let s = try schedule("""
            {"sampleRate": 48000, "clips": {"a": {"file": "1.wav"}, "b": {"file": "2.wav"}},
             "chains": {"c": [{"pulse": ["x", "y"]}, {"clip": "a"}, {"silence": 0.01}, {"clip": "b"}, {"pulse": ["z"]}]}}
            """)
        #expect(s.channels == 2)  // the largest among the chain's clips
        #expect(s.frames == 1000 + 480 + 500)
        #expect(s.voices.map(\.startFrame) == [0, 1480])
        #expect(s.cues == [
            Cue(frame: 0, kind: .pulse(target: "x")),
            Cue(frame: 0, kind: .pulse(target: "y")),
            Cue(frame: 0, kind: .clipStart(clip: "a", pool: nil)),
            Cue(frame: 1000, kind: .clipEnd(clip: "a", pool: nil)),
            Cue(frame: 1480, kind: .clipStart(clip: "b", pool: nil)),
            Cue(frame: 1980, kind: .clipEnd(clip: "b", pool: nil)),
            Cue(frame: 1980, kind: .pulse(target: "z")),
            Cue(frame: 1980, kind: .chainEnd(chain: "c")),
        ])
    }

    @Test func wordsAreShiftedByClipStartAndRegion() throws {
        // Region 0.005 s … 0.015 s of a 1000-frame file at 48 kHz = frames 240 ..< 720.
        let labels = "0.001\t0.002\tbefore\n0.003\t0.0055\tstraddle\n0.0055\t0.006\tfirst\n0.010\t0.015\tlast\n0.0150\t0.0200\tcut\n"
        let s = try schedule("""
            {"sampleRate": 48000, "clips": {"r": {"file": "1.wav", "timings": "t.txt", "start": 0.005, "end": 0.015},
                                            "s": {"file": "3.wav"}},
             "chains": {"c": [{"clip": "s"}, {"clip": "r"}]}}
            """, timings: ["t.txt": labels])
        #expect(s.frames == 300 + 480)
        #expect(s.voices[1].audio.offset == 240)
        #expect(s.voices[1].audio.frames == 480)
        let words = s.cues.filter { $0.type == "word" }
        // "straddle" (144 ..< 264) is cut by the region start (240): it keeps 240 ..< 264.
        #expect(words == [
            Cue(frame: 300 + 0, kind: .word(clip: "r", index: 1, text: "straddle", endFrame: 300 + 24)),
            Cue(frame: 300 + 24, kind: .word(clip: "r", index: 2, text: "first", endFrame: 300 + 48)),
            Cue(frame: 300 + 240, kind: .word(clip: "r", index: 3, text: "last", endFrame: 300 + 480)),
        ])
    }

    @Test func repeatEndsEachPassWithChainEnd() throws {
        let s = try schedule(#"{"sampleRate": 48000, "clips": {"a": {"file": "3.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#, repeats: 3)
        #expect(s.frames == 900)
        #expect(s.cues.filter { $0.type == "chainEnd" }.map(\.frame) == [300, 600, 900])
    }

    @Test func timingErrorsAgainstAudio() throws {
        let json = #"{"sampleRate": 48000, "clips": {"a": {"file": "5.wav", "timings": "t.txt"}}, "chains": {"c": [{"clip": "a"}]}}"#
        #expect(throws: NarratorError.self) { try schedule(json, timings: ["t.txt": "0.001\t0.005\tlate\n"]) }
        do {
            _ = try schedule(json, timings: ["t.txt": "0.001\t0.002\tok\n0.003\t0.005\tlate\n"])
            Issue.record("a word past the end of its audio was accepted")
        } catch let error as NarratorError {
            #expect(error.file.hasSuffix("t.txt"))
            #expect(error.place == "word 1 'late'")
            #expect(error.message.contains("past the end of its audio"))
        }
        let region = #"{"sampleRate": 48000, "clips": {"a": {"file": "5.wav", "end": 0.01}}, "chains": {"c": [{"clip": "a"}]}}"#
        #expect(throws: NarratorError.self) { try schedule(region) }
    }

    @Test func poolsNeverRepeatTheirLastPicks() throws {
        let json = """
            {"sampleRate": 48000,
             "clips": {"a": {"file": "1.wav"}, "b": {"file": "3.wav"}, "c": {"file": "4.wav"}, "d": {"file": "5.wav"}},
             "pools": {"p": {"clips": ["a", "b", "c", "d"], "noRepeat": 2}, "q": {"clips": ["a", "b"]}},
             "chains": {"c": [{"pool": "p"}, {"pool": "q"}]}}
            """
        for seed in UInt64(1)...20 {
            let s = try schedule(json, repeats: 300, seed: seed)
            var picksP: [String] = []
            var picksQ: [String] = []
            for cue in s.cues {
                if case .clipStart(let clip, let pool) = cue.kind {
                    if pool == "p" { picksP.append(clip) } else { picksQ.append(clip) }
                }
            }
            #expect(picksP.count == 300 && picksQ.count == 300)
            for i in 2..<picksP.count {
                #expect(picksP[i] != picksP[i - 1] && picksP[i] != picksP[i - 2])
            }
            for i in 1..<picksQ.count { #expect(picksQ[i] != picksQ[i - 1]) }
            // Every allowed clip still gets drawn.
            #expect(Set(picksP) == ["a", "b", "c", "d"])
        }
    }

    @Test func sameSeedSamePicksOtherSeedOtherPicks() throws {
        let json = """
            {"sampleRate": 48000, "clips": {"a": {"file": "1.wav"}, "b": {"file": "3.wav"}, "c": {"file": "4.wav"}},
             "pools": {"p": {"clips": ["a", "b", "c"], "noRepeat": 1}}, "chains": {"c": [{"pool": "p"}]}}
            """
        let picks = { (seed: UInt64) in try self.schedule(json, repeats: 40, seed: seed).cues.filter { $0.type == "clipStart" } }
        #expect(try picks(7) == picks(7))
        #expect(try picks(7) != picks(8))
    }

    @Test func noRepeatIsClampedSoAPickIsAlwaysPossible() throws {
        let json = """
            {"sampleRate": 48000, "clips": {"a": {"file": "1.wav"}, "b": {"file": "3.wav"}},
             "pools": {"p": {"clips": ["a", "b"], "noRepeat": 5}, "one": {"clips": ["a"]}},
             "chains": {"c": [{"pool": "p"}, {"pool": "one"}]}}
            """
        let s = try schedule(json, repeats: 10)
        let picks = s.cues.compactMap { cue -> String? in
            if case .clipStart(let clip, "p") = cue.kind { return clip }
            return nil
        }
        #expect(picks.count == 10)
        for i in 1..<picks.count { #expect(picks[i] != picks[i - 1]) }
    }
}

@Suite struct MixerTests {
    let decoder = MemoryDecoder(files: ["1.wav": (1, 1000), "2.wav": (2, 500)])

    func render(_ mixer: Mixer, blocks: [Int]) -> [Float] {
        var out: [Float] = []
        var i = 0
        while !mixer.finished {
            let n = min(blocks[i % blocks.count], mixer.schedule.frames - mixer.position)
            var block = [Float](repeating: .nan, count: n * mixer.channels)
            block.withUnsafeMutableBufferPointer { mixer.render(into: $0, frameCount: n) }
            out += block
            i += 1
        }
        return out
    }

    func schedule(channels: Int?) throws -> Schedule {
        let ch = channels.map { #""channels": \#($0),"# } ?? ""
        let (l, dir) = try lesson("""
            {"sampleRate": 48000, \(ch) "clips": {"m": {"file": "1.wav", "start": 0.001}, "s": {"file": "2.wav"}},
             "chains": {"c": [{"clip": "s"}, {"silence": 0.001}, {"clip": "m"}]}}
            """)
        defer { dir.remove() }
        let bank = try ClipBank.prepare(lesson: l, chain: "c", decoder: decoder)
        var draws = PoolDraws(seed: 0)
        return try Scheduler.schedule(chain: "c", bank: bank, draws: &draws)
    }

    @Test func rendersEverySampleWhereTheScheduleSays() throws {
        let s = try schedule(channels: nil)
        let out = render(Mixer(schedule: s), blocks: [4096])
        #expect(out.count == s.frames * 2)
        for f in 0..<s.frames {
            for c in 0..<2 {
                let expected: Float
                if f < 500 {
                    expected = MemoryDecoder.value(file: 2, frame: f, channel: c)
                } else if f < 548 {
                    expected = 0
                } else {
                    // Mono plays on both channels, from the region start (frame 48 of its file).
                    expected = MemoryDecoder.value(file: 1, frame: f - 548 + 48, channel: 0)
                }
                if out[f * 2 + c] != expected {
                    Issue.record("frame \(f) channel \(c): \(out[f * 2 + c]) != \(expected)")
                    return
                }
            }
        }
    }

    @Test func blockSizeDoesNotChangeTheOutput() throws {
        let s = try schedule(channels: nil)
        let whole = render(Mixer(schedule: s), blocks: [s.frames])
        #expect(render(Mixer(schedule: s), blocks: [1]) == whole)
        #expect(render(Mixer(schedule: s), blocks: [7, 64, 499, 1, 13]) == whole)
    }

    @Test func stereoIntoMonoIsTheAverage() throws {
        let s = try schedule(channels: 1)
        let out = render(Mixer(schedule: s), blocks: [256])
        #expect(out.count == s.frames)
        let a = MemoryDecoder.value(file: 2, frame: 10, channel: 0)
        let b = MemoryDecoder.value(file: 2, frame: 10, channel: 1)
        #expect(out[10] == (a + b) * 0.5)
    }
}
