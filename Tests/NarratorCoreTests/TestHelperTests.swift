import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The test helpers' own rules: a skip under `make test` fails unless allow-listed, and a
/// percentile is never the maximum in disguise.
@Suite struct TestHelperTests {
    @Test func aMissingRequirementFailsUnderMakeTestUnlessAllowListed() async throws {
        let test = try #require(Test.current)
        func outcome(_ met: Bool, allowed: AllowedSkip?, skipsFail: Bool) async -> String {
            do {
                try await RequirementTrait.check(met, comment: "needs x", allowed: allowed, skipsFail: skipsFail, sourceLocation: #_sourceLocation, test: test)
                return "runs"
            } catch let missing as RequirementTrait.Missing {
                return "fails: \(missing)"
            } catch {
                return "skips"
            }
        }
        #expect(await outcome(true, allowed: nil, skipsFail: true) == "runs")
        #expect(await outcome(false, allowed: nil, skipsFail: false) == "skips")
        #expect(await outcome(false, allowed: .root, skipsFail: true) == "skips")
        #expect(await outcome(false, allowed: nil, skipsFail: true).hasPrefix("fails: "))
        // `make test` sets it (the Makefile's test target).
        print("NARRATOR_NO_SKIPS: \(RequirementTrait.skipsFail)")
    }

    @Test func percentilesAreNearestRankWithAMinimumCount() throws {
        let values = (1...100).map(Double.init).shuffled()
        #expect(try Percentile.of(99, values) == 99)
        #expect(try Percentile.of(50, values) == 50)
        #expect(try Percentile.of(95, Array(values.sorted().prefix(20))) == 19)
        // 45 values: a p99 would be the maximum; refused.
        #expect(throws: Percentile.TooFewValues.self) { try Percentile.of(99, Array(values.prefix(45))) }
        #expect(Percentile.minimumCount(99) == 100 && Percentile.minimumCount(95) == 20 && Percentile.minimumCount(50) == 2)
        let few = Spread((1...45).map(Double.init))
        #expect(few.p99 == nil && few.p95 == 43 && few.max == 45)
        #expect(few.exceeds(p99: 44, max: 50) != nil, "with too few for a p99, every value is held to the p99 bound")
        #expect(few.exceeds(p99: 45, max: 50) == nil)
        let many = Spread((1...200).map(Double.init))
        #expect(many.p99 == 198 && many.exceeds(p99: 198, max: 200) == nil && many.exceeds(p99: 197, max: 500) != nil)
        #expect(Spread([]).exceeds(p99: 1, max: 1) == "no values")
    }

    /// The one WAV writer: what it writes reads back, by hand, as what it was given.
    @Test func theWAVWriterRoundTrips() throws {
        let samples: [Int16] = [0, 1, -1, .max, .min, 12345, -12345, 7]
        let bytes = WAVFile.pcm16(samples, rate: 22050, channels: 2)
        #expect(bytes.count == 44 + samples.count * 2)
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.write("s.wav", data: bytes)
        let read = try WAVFile(path: path)
        #expect(read.formatTag == 1 && read.channels == 2 && read.sampleRate == 22050 && read.bitsPerSample == 16)
        #expect(read.int16Samples == samples && read.frames == 4)
    }
}
