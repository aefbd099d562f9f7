import Foundation
import NarratorCore
import NarratorKit

/// `--controls 1.5:pause,3:resume=word,4:say=p2/3`: controls at seconds of playback time
/// (since frame 0 was heard, pauses included), the same for `play` and `simulate`.
struct ControlScript: Sendable {
    enum Control: Sendable, Equatable {
        case pause
        case resume(Playback.ResumePoint)
        /// A timeline position; a word or sentence without a clip is of the clip heard then.
        case seekFrame(seconds: Double)
        case seekWord(clip: String?, index: Int)
        case seekSentence(clip: String?, index: Int)
        case say(clip: String?, index: Int)
        case gain(MixGains.Target, Float)
        case mute(MixGains.Target, Bool)
        case speed(Double)
    }

    struct Item: Sendable {
        /// Nanoseconds after frame 0 was heard.
        let at: Int64
        let control: Control
        let text: String
    }

    let items: [Item]

    static let usage =
        "expected SECONDS:CONTROL, e.g. 2:pause; controls: pause, resume, resume=word, resume=sentence, seek=SECONDS, "
        + "word=[CLIP/]INDEX, sentence=[CLIP/]INDEX, say=[CLIP/]INDEX, mute=BUS, unmute=BUS, volume=BUS/GAIN, "
        + "speed=SPEED (BUS: voice, sfx, music, master; GAIN 0-4; SPEED 0.5-2)"

    static func parse(_ script: String) throws(NarratorError) -> ControlScript {
        var items: [Item] = []
        for (index, item) in script.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            func fail(_ why: String = usage) -> NarratorError {
                NarratorError(file: "--controls", place: "item \(index + 1) '\(item)'", why)
            }
            let parts = item.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let seconds = Double(parts[0]), seconds >= 0, seconds <= maxScriptSeconds else {
                throw fail()
            }
            let control = try parseControl(parts[1], fail: fail)
            items.append(Item(at: Int64((seconds * 1e9).rounded()), control: control, text: String(item)))
        }
        return ControlScript(items: items.sorted { $0.at < $1.at })
    }

    private static func parseControl(_ text: String, fail: (String) -> NarratorError) throws(NarratorError) -> Control {
        let pieces = text.split(separator: "=", maxSplits: 1).map(String.init)
        let name = pieces[0]
        let value = pieces.count == 2 ? pieces[1] : nil
        func wordRef() throws(NarratorError) -> (String?, Int) {
            guard let value else { throw fail(usage) }
            let halves = value.split(separator: "/", maxSplits: 1).map(String.init)
            guard let index = Int(halves.last!), (0...100_000).contains(index), halves.allSatisfy({ !$0.isEmpty }) else {
                throw fail("expected [CLIP/]INDEX, an index from 0 to 100000")
            }
            return (halves.count == 2 ? halves[0] : nil, index)
        }
        func bus(_ text: String?) throws(NarratorError) -> MixGains.Target {
            guard let text, let bus = MixGains.Target(rawValue: text) else { throw fail("expected a bus: voice, sfx, music or master") }
            return bus
        }
        switch (name, value) {
        case ("pause", nil): return .pause
        case ("resume", nil), ("resume", "paused"?): return .resume(.pausedFrame)
        case ("resume", "word"?): return .resume(.wordStart)
        case ("resume", "sentence"?): return .resume(.sentenceStart)
        case ("seek", let value?):
            guard let seconds = Double(value), seconds >= 0, seconds <= maxScriptSeconds else { throw fail("expected seek=SECONDS of the timeline") }
            return .seekFrame(seconds: seconds)
        case ("word", _):
            let (clip, index) = try wordRef()
            return .seekWord(clip: clip, index: index)
        case ("sentence", _):
            let (clip, index) = try wordRef()
            return .seekSentence(clip: clip, index: index)
        case ("say", _):
            let (clip, index) = try wordRef()
            return .say(clip: clip, index: index)
        case ("mute", let value), ("unmute", let value):
            return .mute(try bus(value), name == "mute")
        case ("volume", let value?):
            let halves = value.split(separator: "/", maxSplits: 1).map(String.init)
            guard halves.count == 2, let gain = Float(halves[1]), gain >= 0, gain <= MixGains.maximum else {
                throw fail("expected volume=BUS/GAIN, a gain from 0 to 4")
            }
            return .gain(try bus(halves[0]), gain)
        case ("speed", let value?):
            guard let speed = Double(value), speed.isFinite, (0.5...2.0).contains(speed) else {
                throw fail("expected speed=SPEED, a speed from 0.5 to 2")
            }
            return .speed(speed)
        default:
            throw fail(usage)
        }
    }

    /// Applies `control` to `playback` now. A position that is not in what plays is an error
    /// naming the item.
    static func apply(_ item: Item, to playback: Playback, rate: Int) throws(NarratorError) {
        func clip(_ named: String?) throws(NarratorError) -> String {
            guard let clip = named ?? playback.clipHeard else {
                throw NarratorError(file: "--controls", place: "'\(item.text)'", "no clip is heard yet: name one (CLIP/INDEX)")
            }
            return clip
        }
        do throws(NarratorError) {
            switch item.control {
            case .pause: playback.pause()
            case .resume(let point): playback.resume(from: point)
            case .seekFrame(let seconds):
                try playback.seek(to: .frame(Frames.from(seconds: seconds, rate: rate) ?? 0))
            case .seekWord(let named, let index): try playback.seek(to: .word(clip: try clip(named), index: index))
            case .seekSentence(let named, let index): try playback.seek(to: .sentence(clip: try clip(named), index: index))
            case .say(let named, let index):
                try playback.say(clip: try clip(named), word: index, then: playback.isPaused ? .pauseWhereItWas : .resumeWhereItWas)
            case .gain(let bus, let gain): playback.gains.set(bus, gain: gain)
            case .mute(let bus, let muted): playback.gains.set(bus, muted: muted)
            case .speed(let speed): try playback.setSpeed(speed)
            }
        } catch {
            throw error.file == "--controls" ? error : NarratorError(file: "--controls", place: "'\(item.text)'", error.message)
        }
    }
}
