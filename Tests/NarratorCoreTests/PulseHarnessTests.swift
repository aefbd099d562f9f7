import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The live-playback harness against a real PulseAudio server: what `aplay` plays through ALSA's
/// pulse plugin comes back bit-exact, on a clock that fits to well under a millisecond.
@Suite struct PulseHarnessTests {
    @Test(.requires(PulseTestServer.isAvailable && PulseTestServer.findExecutable("aplay") != nil,
                   "needs pulseaudio, pulseaudio-utils, libasound2-plugins, alsa-utils (aplay) and python3"))
    func aplayIsRecordedBitExactOnASubMillisecondClock() throws {
        // The fixture sentence (words between exact zeros), left as is, right at half level.
        let mono = try WAVFile(path: Repo.path("Audio/fixtures/sentence.wav"))
        #expect(mono.sampleRate == 48000 && mono.channels == 1)
        let reference = mono.int16Samples.flatMap { [$0, $0 / 2] }
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.write("sentence-stereo.wav", data: WAVFile.pcm16(reference, rate: 48000, channels: 2))

        let server = try PulseTestServer()
        defer { server.stop() }
        let before = UInt64(monotonicNanoseconds())
        let aplay = try server.runClient(try #require(PulseTestServer.findExecutable("aplay")), ["-q", "-D", "default", file])
        let after = UInt64(monotonicNanoseconds())
        #expect(aplay.status == 0, "aplay: \(aplay.stderr)\n\(server.logTail())")
        let recording = try server.recording()

        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.segments.count == 1 && alignment.gaps.isEmpty, "\(alignment)")

        let clock = recording.clock
        print("pulse harness: \(clock.residualsMs), slope \(String(format: "%.2f", clock.slopePPM)) ppm, "
            + "\(clock.pointCount) of \(clock.readCount) reads used; sentence at recording frame \(alignment.startFrame)")
        #expect(clock.residualsMs.p50 < 1, "\(clock.residualsMs)")
        // Bogus early points (the reader stalled between two reads of one wake-up) are rare.
        #expect(clock.residualsMs.early * 20 <= clock.residualsMs.count, "\(clock.residualsMs)")
        #expect(abs(clock.slopePPM) < 200, "\(clock.slopePPM) ppm")

        // The sentence was heard while aplay ran: from its start to its end (aplay returns once
        // the stream has drained).
        let firstHeard = recording.audibleTime(ofFrame: alignment.startFrame)
        let lastHeard = recording.audibleTime(ofFrame: alignment.startFrame + alignment.referenceFrameCount)
        #expect(firstHeard > before && lastHeard < after + 50_000_000,
                "heard \(firstHeard)…\(lastHeard), aplay ran \(before)…\(after)")
        let duration = Double(lastHeard - firstHeard) / 1e9
        #expect(abs(duration - Double(mono.frames) / 48000) < 0.001)
    }

    @Test(.requires(PulseTestServer.isAvailable && PulseTestServer.findExecutable("aplay") != nil,
                   "needs pulseaudio, pulseaudio-utils, libasound2-plugins, alsa-utils (aplay) and python3"))
    func aplayStoppedForAWhileLeavesASilentGapAndLosesNothing() throws {
        // aplay with a 100 ms buffer, stopped (SIGSTOP) 1 s in for 300 ms: the server underruns
        // and plays silence, then the rest follows, nothing lost or repeated.
        let mono = try WAVFile(path: Repo.path("Audio/fixtures/sentence.wav"))
        let reference = mono.int16Samples.flatMap { [$0, $0 / 2] }
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.write("sentence-stereo.wav", data: WAVFile.pcm16(reference, rate: 48000, channels: 2))

        let server = try PulseTestServer()
        defer { server.stop() }
        let aplay = try server.startClient(
            try #require(PulseTestServer.findExecutable("aplay")),
            ["-q", "-D", "default", "--buffer-time=100000", "--period-time=25000", file])
        Thread.sleep(forTimeInterval: 1)
        let stopped = UInt64(monotonicNanoseconds())
        kill(aplay.processIdentifier, SIGSTOP)
        Thread.sleep(forTimeInterval: 0.3)
        let continued = UInt64(monotonicNanoseconds())
        kill(aplay.processIdentifier, SIGCONT)
        aplay.waitUntilExit()
        #expect(aplay.terminationStatus == 0, "\(server.logTail())")
        let recording = try server.recording()

        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        print("pulse harness, SIGSTOP: \(recording.clock.residualsMs), "
            + "slope \(String(format: "%.2f", recording.clock.slopePPM)) ppm\n\(alignment)")
        #expect(alignment.isComplete, "\(alignment)")
        // The gap the stop caused: it starts after the stop, once the buffer ran dry, and ends
        // after the process continued.
        let gap = try #require(
            alignment.gaps.first { recording.audibleTime(ofFrame: $0.recordingStart + $0.length) > continued },
            "\(alignment)")
        let gapStart = recording.audibleTime(ofFrame: gap.recordingStart)
        let gapEnd = recording.audibleTime(ofFrame: gap.recordingStart + gap.length)
        #expect(gapStart > stopped && gapStart < stopped + 150_000_000, "gap from \(gapStart), stopped at \(stopped)")
        #expect(gapEnd > continued && gapEnd < continued + 150_000_000, "gap to \(gapEnd), continued at \(continued)")
    }
}
