import CEspeakNG
import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// Scratch narration through libespeak-ng: speech for a text, and each word's frames taken
/// from espeak-ng's own word events (the sample at which it starts the word), so that lessons
/// can be built and tested before the voice is recorded.
public enum Synthesizer {
    public struct Speech: Sendable {
        /// Mono samples at `sampleRate`.
        public var samples: [Float]
        public var sampleRate: Int
        public var words: [WordTiming]
    }

    /// espeak-ng keeps global state: one synthesis at a time in the process. Holds its rate
    /// once initialized.
    private static let engine = Mutex<Int?>(nil)
    /// Where the callback puts what it receives (set while `engine` is held).
    private static let current = Mutex<Collector?>(nil)

    /// Speaks `text` with `voice` and returns it at `rate` (resampled with libsoxr from
    /// espeak-ng's own rate; word frames scaled alike).
    public static func speak(_ text: String, voice: String = "en", rate: Int = 48000) throws(NarratorError) -> Speech {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw NarratorError(file: "text", "nothing to say") }
        let native = try engine.withLock { (initialized: inout Int?) throws(NarratorError) -> Speech in
            if initialized == nil {
                let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, Int32(espeakINITIALIZE_DONT_EXIT))
                guard rate > 0 else { throw NarratorError(file: "libespeak-ng", "could not start (is espeak-ng-data installed?)") }
                initialized = Int(rate)
                espeak_SetSynthCallback { wav, count, events in Synthesizer.collect(wav, count, events) }
            }
            guard espeak_SetVoiceByName(voice) == EE_OK else {
                throw NarratorError(file: "libespeak-ng", "no voice '\(voice)' (espeak-ng --voices lists them)")
            }
            let collector = Collector()
            // The callback runs on this thread, inside espeak_Synth; not every call carries an
            // event with our user data, so the collector is found here.
            current.withLock { $0 = collector }
            defer { current.withLock { $0 = nil } }
            let status = trimmed.withCString { pointer in
                espeak_Synth(pointer, strlen(pointer) + 1, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil, nil)
            }
            guard status == EE_OK, espeak_Synchronize() == EE_OK else { throw NarratorError(file: "libespeak-ng", "synthesis failed") }
            return try collector.speech(text: trimmed, rate: initialized!)
        }
        guard rate != native.sampleRate else { return native }
        let samples = try Resampler.convert(native.samples, channels: 1, from: native.sampleRate, to: rate, file: "libespeak-ng")
        let words = native.words.map { word in
            WordTiming(
                index: word.index, text: word.text, startFrame: Frames.convert(word.startFrame, from: native.sampleRate, to: rate),
                endFrame: Frames.convert(word.endFrame, from: native.sampleRate, to: rate))
        }
        return Speech(samples: samples, sampleRate: rate, words: words)
    }

    /// Receives espeak-ng's output: samples, and word events with their sample positions.
    private final class Collector: @unchecked Sendable {
        var samples: [Int16] = []
        /// (first sample, character position 1-based, length in characters)
        var starts: [(sample: Int, position: Int, length: Int)] = []

        func speech(text: String, rate: Int) throws(NarratorError) -> Speech {
            let characters = Array(text.unicodeScalars)
            var words: [WordTiming] = []
            for (index, start) in starts.enumerated() {
                // A word runs to where the next word event's text starts: espeak-ng speaks some
                // pairs ("in the", "on the") as one word with one event, and they stay together
                // rather than lose the second word.
                let from = max(0, min(characters.count, start.position - 1))
                let nextText = index + 1 < starts.count ? starts[index + 1].position - 1 : characters.count
                let to = max(from, min(characters.count, max(nextText, from + start.length)))
                var word = String(String.UnicodeScalarView(characters[from..<to]))
                word = word.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
                    .trimmingCharacters(in: .punctuationCharacters.union(.whitespacesAndNewlines))
                let begin = min(start.sample, samples.count)
                let next = min(index + 1 < starts.count ? starts[index + 1].sample : samples.count, samples.count)
                // The word ends where its sound does: the last sample above the noise floor
                // before the next word starts (espeak-ng's pauses belong to no word).
                var end = next
                while end > begin, abs(Int(samples[end - 1])) < 64 { end -= 1 }
                words.append(WordTiming(index: words.count, text: word, startFrame: begin, endFrame: max(end, begin)))
            }
            guard !words.isEmpty else { throw NarratorError(file: "libespeak-ng", "reported no words") }
            return Speech(samples: samples.map { Float($0) / 32768 }, sampleRate: rate, words: words)
        }
    }

    /// espeak-ng's synth callback: a block of samples and the events inside it.
    fileprivate static func collect(_ wav: UnsafeMutablePointer<Int16>?, _ count: Int32, _ events: UnsafeMutablePointer<espeak_EVENT>?) -> Int32 {
        guard let collector = current.withLock({ $0 }) else { return 1 }
        if var event = events {
            while event.pointee.type != espeakEVENT_LIST_TERMINATED {
                if event.pointee.type == espeakEVENT_WORD {
                    collector.starts.append((Int(event.pointee.sample), Int(event.pointee.text_position), Int(event.pointee.length)))
                }
                event += 1
            }
        }
        if let wav, count > 0 { collector.samples.append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count))) }
        return 0
    }
}
