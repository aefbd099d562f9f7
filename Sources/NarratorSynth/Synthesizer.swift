import CEspeakNG
import CEspeakNGLoader
import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// Scratch narration through libespeak-ng: speech for a text, and each word's frames taken
/// from espeak-ng's own word events (the sample at which it starts the word, moved on to where
/// the word's sound starts), so that lessons can be built and tested before the voice is
/// recorded.
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
                // libespeak-ng is loaded here, by the first synthesis, not at process start.
                if let failure = narrator_espeak_open() { throw NarratorError(file: "libespeak-ng", String(cString: failure)) }
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
            let events = Synthesizer.wordStarts(starts, in: characters)
            var words: [WordTiming] = []
            for (index, event) in events.enumerated() {
                // A word runs from its token to the next word's token: espeak-ng speaks some
                // pairs ("in the", "on the") as one word with one event, and they stay together
                // rather than lose the second word.
                let from = event.character
                let to = index + 1 < events.count ? events[index + 1].character : characters.count
                // The word keeps its text as written, punctuation included ("penny.", "kite,"),
                // as `align` keeps it: the sentences, sentence cues and `resume=sentence` of
                // every timing file are found by the punctuation that ends a word.
                let word = String(String.UnicodeScalarView(characters[from..<to]))
                    .split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
                let next = min(index + 1 < events.count ? events[index + 1].sample : samples.count, samples.count)
                let begin = Synthesizer.soundStart(samples, from: min(event.sample, samples.count), before: next)
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

    /// The word events that start a new word of the text, each with the first character of its
    /// token (a run of non-whitespace) and its sample.
    ///
    /// espeak-ng sends more word events than the text has words, and not all point forward: a
    /// number or a symbol read as several words ("123", "3.14", "7:30", "$5") gives one event
    /// per spoken word inside one token; an emoji read as a phrase gives events pointing at the
    /// space after it; and at the end of a clause it may send a zero-length event pointing back
    /// at the clause's start ("… calling, so run fast!" ends with one at "calling,"). A timed
    /// word is one or more whole tokens of the text, in order: an event starts a word only if
    /// its position lies inside a token after the previous word's token, at a sample no
    /// earlier than the previous word's. (A zero-length event can be a real word: "Wait—no"
    /// starts with one, at the text's first character.)
    static func wordStarts(_ events: [(sample: Int, position: Int, length: Int)], in characters: [Unicode.Scalar])
        -> [(character: Int, sample: Int)]
    {
        // The token of each character: its index among the runs of non-whitespace, nil for
        // whitespace.
        var token: [Int?] = []
        token.reserveCapacity(characters.count)
        var count = 0
        var inside = false
        for character in characters {
            if character.properties.isWhitespace {
                token.append(nil)
                inside = false
            } else {
                if !inside { count += 1 }
                inside = true
                token.append(count - 1)
            }
        }
        var starts: [(character: Int, sample: Int)] = []
        var lastToken = -1
        var lastSample = 0
        for event in events {
            let at = event.position - 1
            guard at >= 0, at < characters.count, let index = token[at], index > lastToken, event.sample >= lastSample else { continue }
            var first = at
            while first > 0, token[first - 1] == index { first -= 1 }
            starts.append((first, event.sample))
            lastToken = index
            lastSample = event.sample
        }
        return starts
    }

    /// Where a word's sound starts: the first sample from `from` (its word event) on that is not
    /// digital silence, before `limit` (the next word's event); `from` if there is none.
    ///
    /// espeak-ng places a word event where it starts the word's first phoneme, and before a
    /// fricative, an affricate or a plosive that phoneme begins with exact zeros: 12 ms before
    /// /s/, /f/, /ð/, /h/, 13 ms before /b/, /d/, /g/ after a pause, 32 ms before them within
    /// speech, 49 ms before /p/, /t/, /k/, /tʃ/. For a stop that silence is its closure: a
    /// listener cannot tell it from the pause before it, and the first thing heard of the
    /// word is the burst, so the word starts at the burst. The test is exact zero because
    /// that is what espeak-ng writes in pauses and closures (16-bit samples at its own rate,
    /// before any resampling); its speech rises from zero past ±8 within one sample, so a
    /// higher floor would move no silence-led start by more than 45 µs, while it could move a
    /// word whose event lands on the quiet end of the previous word's sound.
    static func soundStart(_ samples: [Int16], from: Int, before limit: Int) -> Int {
        var index = from
        while index < limit, samples[index] == 0 { index += 1 }
        return index < limit ? index : from
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
