import Foundation
import NarratorTestSupport
import Testing
import CAllocationCounter

@testable import NarratorCore
@testable import NarratorEngine

/// What reading `text` as the timing file `name` throws, if anything.
enum TimingParse {
    static func error(_ text: String, _ name: String) -> NarratorError? {
        do {
            _ = try WordTimings.parse(Data(text.utf8), path: name, rate: 48000)
            return nil
        } catch {
            return error
        }
    }
}

/// Timing files made to break the readers: numbers no integer holds, counts no file holds,
/// times that are not times. Each must give one line naming the file and the place, fast.
@Suite struct HostileTimingNumberTests {
    static func textGrid(tiers: String = "1", intervals: String = "1", short: Bool) -> String {
        short
            ? "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n\(tiers)\n\"IntervalTier\"\n\"words\"\n0\n1\n\(intervals)\n0\n1\n\"a\"\n"
            : """
            File type = "ooTextFile"
            Object class = "TextGrid"

            xmin = 0
            xmax = 1
            tiers? <exists>
            size = \(tiers)
            item []:
                item [1]:
                    class = "IntervalTier"
                    name = "words"
                    xmin = 0
                    xmax = 1
                    intervals: size = \(intervals)
                    intervals [1]:
                        xmin = 0
                        xmax = 1
                        text = "a"

            """
    }

    /// Tier and interval counts that trapped in `Int(Double)` (1e30, 2^64), or that would
    /// allocate or loop for ages (10^18, 10^9), or are not counts (-1, 1.5): each refused at
    /// its line, with the count as written.
    @Test(arguments: [true, false])
    func textGridCountsAreCheckedAgainstTheFile(short: Bool) throws {
        let tiersLine = 7
        let intervalsLine = short ? 12 : 14
        let cases: [(tiers: String, intervals: String, line: Int, message: String)] = [
            ("1e30", "1", tiersLine, "announces 1e+30 tiers, but the rest of the file holds at most 1"),
            ("18446744073709551616", "1", tiersLine, "announces 1.8446744073709552e+19 tiers"),
            ("1e308", "1", tiersLine, "announces 1e+308 tiers"),
            ("-1", "1", tiersLine, "the number of tiers must be a whole number, 0 or more, not -1"),
            ("1.5", "1", tiersLine, "not 1.5"),
            ("1", "1e30", intervalsLine, "announces 1e+30 intervals, but the rest of the file holds at most 1"),
            ("1", "18446744073709551616", intervalsLine, "announces 1.8446744073709552e+19 intervals"),
            ("1", "1000000000000000000", intervalsLine, "announces 1000000000000000000 intervals"),
            ("1", "1000000000", intervalsLine, "announces 1000000000 intervals"),
            ("1", "2", intervalsLine, "announces 2 intervals, but the rest of the file holds at most 1"),
            ("1", "-0.5", intervalsLine, "not -0.5"),
            ("2", "1", tiersLine, "announces 2 tiers, but the rest of the file holds at most 1"),
        ]
        // The work is bounded by the file, not by the count it announces: the heap allocations
        // of reading each hostile file (counted on this thread) stay within those of reading
        // the honest one plus a few for the error, where trusting a count of 10^9 would make
        // (or reserve) one per announced item. Counted, not timed: a wall-clock limit here
        // failed on a stall of the shared host.
        func allocations(_ text: String) -> UInt64 {
            narrator_reset_allocation_count()
            narrator_count_allocations(true)
            _ = TimingParse.error(text, "t.TextGrid")
            narrator_count_allocations(false)
            return narrator_allocation_count()
        }
        let honest = allocations(Self.textGrid(short: short))
        for item in cases {
            let hostile = Self.textGrid(tiers: item.tiers, intervals: item.intervals, short: short)
            let error = try #require(TimingParse.error(hostile, "t.TextGrid"), "\(item)")
            let made = allocations(hostile)
            #expect(made <= honest + 200, "\(item.tiers) tiers, \(item.intervals) intervals: \(made) allocations, \(honest) for the honest file")
            #expect(error.file == "t.TextGrid" && error.place == "line \(item.line)", "\(error)")
            #expect(error.message.contains(item.message), "\(error)")
        }
        // The same files with honest counts read.
        let words = try WordTimings.parse(Data(Self.textGrid(short: short).utf8), path: "t.TextGrid", rate: 48000)
        #expect(words == [WordTiming(index: 0, text: "a", startFrame: 0, endFrame: 48000)])
    }

    @Test func textGridNumbersThatAreNotFinite() throws {
        let grid = Self.textGrid(short: true).replacingOccurrences(of: "0\n1\n\"a\"", with: "0\n1e999\n\"a\"")
        let error = try #require(TimingParse.error(grid, "t.TextGrid"))
        #expect(error.place == "line 14" && error.message == "bad number '1e999'", "\(error)")
        // A file cut after its tier count: one tier announced, none there.
        let cut = try #require(TimingParse.error("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n0\n1\n<exists>\n1\n\"IntervalTier\"\n", "t.TextGrid"))
        #expect(cut.place == "line 6" && cut.message == "announces 1 tier, but the rest of the file holds at most 0", "\(cut)")
        // CRLF line ends count as one line each.
        let counted = try #require(TimingParse.error(Self.textGrid(intervals: "7", short: true).replacingOccurrences(of: "\n", with: "\r\n"), "t.TextGrid"))
        #expect(counted.place == "line 12" && counted.message.contains("announces 7 intervals"), "\(counted)")
    }

    /// Times a file can write that are not times, or no frame count holds.
    @Test func timesOutOfRangeNameTheWordAndTheValue() throws {
        let cases: [(file: String, text: String, place: String, message: String)] = [
            ("t.txt", "nan\t1\ta\n", "line 1 'a'", "starts at nan, not a time"),
            ("t.txt", "0\tinf\ta\n", "line 1 'a'", "ends at inf, not a time"),
            ("t.txt", "0\t1e400\ta\n", "line 1 'a'", "ends at inf, not a time"),
            ("t.txt", "-1\t1\ta\n", "line 1 'a'", "starts at -1 s, before the audio starts (0 s)"),
            ("t.txt", "1e300\t1e301\ta\n", "line 1 'a'", "starts at 1e+300 s, beyond any audio"),
            ("t.txt", "0\t-0.0004\ta\n", "line 1 'a'", "ends at -0.0004 s, before the audio starts (0 s)"),
            ("t.tsv", "0.5\t9223372036854775807\tb\n", "line 1 'b'", "ends at 9.22e+18 s, beyond any audio"),
            ("t.csv", "f1,0,18446744073709551616,\"a\"\n", "line 1 'a'", "ends at 1.84e+19 s, beyond any audio"),
            ("t.json", #"{"words": [{"text": "a", "start": 0, "end": 1e300}]}"#, "words[0] 'a'", "ends at 1e+300 s, beyond any audio"),
            ("t.json", #"{"fragments": [{"begin": "nan", "end": "1", "lines": ["a"]}]}"#, "fragments[0] 'a'", "starts at nan, not a time"),
            ("t.json", #"{"fragments": [{"begin": "0", "end": "1e999", "lines": ["a"]}]}"#, "fragments[0] 'a'", "ends at inf, not a time"),
            ("t.json", #"{"transcript": "a", "words": [{"word": "a", "case": "success", "start": -5, "end": 1}]}"#, "words[0] 'a'", "starts at -5 s, before"),
            ("t.json", #"{"transcript": "a", "words": [{"word": "a", "case": "success", "start": 0, "end": 1e20}]}"#, "words[0] 'a'", "ends at 1e+20 s, beyond any audio"),
        ]
        for item in cases {
            let error = try #require(TimingParse.error(item.text, item.file), "\(item)")
            #expect(error.file == item.file && error.place == item.place, "\(error)")
            #expect(error.message == item.message || error.message.hasPrefix(item.message), "\(error)")
        }
    }

    /// Subtitle clocks whose fields overflowed `Int` arithmetic (hours of 2^63 − 1), or took
    /// a sign (`-1`, `+5`): refused as bad timing lines.
    @Test func subtitleClocksAreDigitsOnly() throws {
        for stamp in ["9223372036854775807:00:00,000", "1000000000:00:00,000", "-1:00:00,000", "00:-1:00,000", "00:+5:00,000", "00:00:+1,000",
                      "00:00:01,-12", "00:00:01,+12", "00:00:01,1e2", "00:00:60,000", "00:60:00,000", "0x1:00:00,000"]
        {
            let error = try #require(TimingParse.error("1\n\(stamp) --> 00:00:02,000\na\n", "t.srt"), "\(stamp)")
            #expect(error.place == "line 2" && error.message.hasPrefix("bad cue timing line"), "\(error)")
        }
        for stamp in ["9223372036854775807:00:00.000", "-1:00:00.000", "00:+1:00.000", "00:00:-1.000", "00:00:01.+12", "+0:00:01.000"] {
            let error = try #require(TimingParse.error("WEBVTT\n\n\(stamp) --> 00:00:02.000\na\n", "t.vtt"), "\(stamp)")
            #expect(error.place == "line 3" && error.message.hasPrefix("bad cue timing line"), "\(error)")
        }
        // The largest hours a clock takes is a time, out of range for frames.
        let far = try #require(TimingParse.error("1\n999999999:00:00,000 --> 999999999:00:00,001\na\n", "t.srt"))
        #expect(far.message == "starts at 3.6e+12 s, beyond any audio", "\(far)")
    }

    @Test func smilClockValues() throws {
        #expect(SMIL.clock("0:00:01.5") == 1.5)
        #expect(SMIL.clock("01:30.25") == 90.25)
        #expect(SMIL.clock("1500ms") == 1.5)
        #expect(SMIL.clock("0.5min") == 30)
        #expect(SMIL.clock("1h") == 3600)
        #expect(SMIL.clock(" 2.5s ") == 2.5)
        #expect(SMIL.clock("7") == 7)
        // Hours that overflowed Int arithmetic are a (huge) number now, refused as frames.
        #expect(SMIL.clock("99999999999999999999:00:00") == 99999999999999999999.0 * 3600)
        for bad in ["nan", "nans", "inf", "infs", "-1s", "+1s", "1e3s", "0x10s", "1.2.3s", "", "s", ":", "1:60:00", "1:00:60", "1.5:00:00", "-0:00:01"] {
            #expect(SMIL.clock(bad) == nil, "\(bad)")
        }
        let smil = #"<smil><body><par><text src="p.xhtml#a"/><audio clipBegin="99999999999999999999:00:00" clipEnd="99999999999999999999:00:01"/></par></body></smil>"#
        let error = try #require(TimingParse.error(smil, "t.smil"))
        #expect(error.place == "line 1 'a'" && error.message == "starts at 3.6e+23 s, beyond any audio", "\(error)")
    }
}

@Suite struct MessageWordingTests {
    /// Seconds as a person reads them: to the millisecond, exact from frames.
    @Test func secondsToTheMillisecond() {
        #expect(Frames.describe(21292, rate: 48000) == "0.444 s")  // 0.443583… s
        #expect(Frames.describe(48000, rate: 48000) == "1 s")
        #expect(Frames.describe(72000, rate: 48000) == "1.5 s")
        #expect(Frames.describe(0, rate: 48000) == "0 s")
        #expect(Frames.describe(-24000, rate: 48000) == "-0.5 s")
        #expect(Frames.describe(44_101, rate: 44100) == "1 s")  // 1.0000227 s
        #expect(Frames.describe(1, rate: 48000) == "2.08e-05 s")  // not "0 s"
        #expect(Frames.describe(Int.max, rate: 48000) == "1.92e+14 s")
        #expect(Frames.describe(7_200_000 * 48000 + 1, rate: 48000) == "7200000 s")
        #expect(Frames.describe(seconds: 0.44358333333333333) == "0.444 s")
        #expect(Frames.describe(seconds: 0.1 + 0.2) == "0.3 s")
        #expect(Frames.describe(seconds: 2) == "2 s")
        #expect(Frames.describe(seconds: 1e300) == "1e+300 s")
        #expect(Frames.describe(seconds: .nan) == "NaN s")
        #expect(Frames.describe(seconds: -.infinity) == "-infinite s")
        #expect(Frames.describe(seconds: -0.0) == "0 s")
        #expect(Frames.describe(seconds: 0.0005) == "0.001 s")
    }

    @Test func countsAgreeWithTheirNoun() {
        #expect(Wording.count(1, "word") == "1 word")
        #expect(Wording.count(0, "word") == "0 words")
        #expect(Wording.count(2, "audio file") == "2 audio files")
        #expect(Wording.count(2, "match", plural: "matches") == "2 matches")
    }

    /// An overlap names the previous word's end as read; an end before a start a millisecond
    /// away names the frames too, since the seconds read the same.
    @Test func timingMessagesPrintMilliseconds() throws {
        let overlap = try #require(TimingParse.error("0\t0.44358333333333333\ta\n0.4\t0.5\tb\n", "t.txt"))
        #expect(overlap.message == "overlaps word 0 'a', which ends at 0.444 s", "\(overlap)")
        let close = try #require(TimingParse.error("1.0002\t1.0001\ta\n", "t.txt"))
        #expect(close.message == "ends (1 s) before it starts (1 s) (frame 48005 before frame 48010 at 48000 Hz)", "\(close)")
        let long = String(repeating: "x", count: 100)
        let named = try #require(TimingParse.error("1\t0.5\t\(long)\n", "t.txt"))
        #expect(named.place == "line 1 '\(String(repeating: "x", count: 59))…'", "\(named)")
    }
}
