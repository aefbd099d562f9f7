import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import NarratorLive
import Synchronization

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run an activity (or announcements, or a chain) on a virtual clock and print its trace (JSON lines), exact to the frame.",
        discussion: """
            The trace holds every event with its "frame" (at the lesson's rate) and "type": \
            activityStart, variant, stepStart, chainStart, the chains' cues (clipStart, word, \
            pulse, clipEnd, chainEnd), idlePrompt, tap, feedback, feedbackEnd, sound, soundCut, \
            canceled, advance, close, activityEnd, or stop when --until comes first; for \
            --requests: request, begin, the cues, end or canceled. The same taps and seed give the same trace.

            Example:
              narrator simulate Timings/lessons/homer-sight-words.json \\
                --activity sight-words --taps 3:cat,4.5:see,9.5:hat --seed 7

            With --controls, it plays on a virtual output instead (period 10 ms, buffer 40 ms) \
            and prints the events as `play` writes them, "t" being seconds since frame 0 was \
            heard, exact: the controls (pause, resume, seek, say a word, volumes) at seconds \
            of playback time. docs/controls.md.

              narrator simulate Timings/lessons/sample.json --chain correct --seed 7 \\
                --controls 1.2:pause,2:resume=word,3.5:say=p2/3
            """)

    @OptionGroup var options: ChainOptions

    @Option(help: "Controls at seconds of playback time (since frame 0 was heard, pauses included), comma-separated: SECONDS:CONTROL with pause, resume[=word|sentence], seek=SECONDS, word=[CLIP/]INDEX, sentence=[CLIP/]INDEX, say=[CLIP/]INDEX, mute=BUS, unmute=BUS, volume=BUS/GAIN.")
    var controls: String?

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            guard let controls else {
                print(try options.schedule().cues.map(\.jsonLine).joined(separator: "\n"))
                return
            }
            let script = try ControlScript.parse(controls)
            // It plays in virtual time, step by step: an hour at most.
            if let late = script.items.first(where: { $0.at > 3_600_000_000_000 }) {
                throw NarratorError(file: "--controls", place: "'\(late.text)'", "simulate plays at most an hour (3600 s)")
            }
            let prepared = try options.prepare()
            let schedule = prepared.schedule
            let clock = VirtualClock()
            let output = VirtualOutput(clock: clock, sampleRate: schedule.sampleRate, channels: schedule.channels, periodFrames: 480, bufferFrames: 1920)
            output.keepsSamples = false
            let heard = Mutex<(origin: Int64?, lines: [String], paused: Bool, final: EventSink.FinalCue)>(
                (nil, [], false, EventSink.FinalCue(lastCue: schedule.cues.last)))
            let playback = prepared.play(on: output, clock: clock, onEvents: { events in
                heard.withLock { heard in
                    for event in events {
                        if case .start(let info) = event { heard.origin = info.firstFrameHeardTime }
                        if case .paused = event { heard.paused = true } else { heard.paused = false }
                        heard.lines.append(
                            EventSink.line(event, startTime: heard.origin ?? event.heard, final: heard.final.isFinal(event)))
                    }
                }
            })
            let limit = clock.now() + 3_700_000_000_000
            func run(until done: () -> Bool) throws(NarratorError) {
                while !done() {
                    guard clock.now() < limit, !playback.isFinished else { return }
                    output.run(for: 1_000_000)
                }
            }
            try run { heard.withLock { $0.origin != nil } }
            if let origin = heard.withLock({ $0.origin }) {
                for item in script.items {
                    try run { clock.now() >= origin + item.at }
                    try ControlScript.apply(item, to: playback, rate: schedule.sampleRate)
                }
            }
            // A script that leaves playback paused ends it there (`stopped`).
            try run { playback.isPaused && heard.withLock { $0.paused } }
            if !playback.isFinished { playback.stop() }
            output.runToEnd(limit: 60_000_000_000)
            _ = playback.waitUntilFinished()
            print(heard.withLock { $0.lines }.joined(separator: "\n"))
        }
    }
}
