extension Cue {
    /// The cue's members besides `frame` and `type`, named as in the cue sheet.
    public var members: [String: Field] {
        switch kind {
        case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
            var members: [String: Field] = ["clip": .string(clip)]
            if let pool { members["pool"] = .string(pool) }
            return members
        case .word(let clip, let index, let text, let endFrame), .sentence(let clip, let index, let text, let endFrame):
            return ["clip": .string(clip), "index": .int(index), "text": .string(text), "endFrame": .int(endFrame)]
        case .pulse(let target):
            return ["target": .string(target)]
        case .chainEnd(let chain):
            return ["chain": .string(chain)]
        case .activity(_, let fields):
            return fields
        }
    }

    /// The cue as one line of JSON, keys sorted: the cue sheet's line (`EventEncoder`).
    public var jsonLine: String { EventEncoder.line(self) }
}

/// The cue sheet: `{"sampleRate", "channels", "frames", "cues": [...]}` with one cue a line.
public enum CueSheet {
    public static func json(_ schedule: Schedule) -> String {
        var all: [UInt8] = []
        write(schedule) { all.append(contentsOf: $0) }
        return String(decoding: all, as: UTF8.self)
    }

    /// The sheet with every frame passed through `map` (the schedule's length, each cue's frame
    /// and a word's or a sentence's end): the sheet of the audio stretched by a time stretcher whose map it is.
    public static func json(_ schedule: Schedule, frames map: (Int) -> Int) -> String {
        var all: [UInt8] = []
        write(schedule, frames: map) { all.append(contentsOf: $0) }
        return String(decoding: all, as: UTF8.self)
    }

    /// The same text as UTF-8 in pieces of about 64 KiB, for `output` to write as they come: a
    /// sheet of millions of cues is never held whole in memory.
    /// `map`: as in `json(_:frames:)`; none by default.
    public static func write(_ schedule: Schedule, frames map: (Int) -> Int = { $0 }, to output: ([UInt8]) -> Void) {
        let frames = map(schedule.frames)
        var text = Array("{\"sampleRate\": \(schedule.sampleRate), \"channels\": \(schedule.channels), \"frames\": \(frames), \"cues\": [".utf8)
        text.reserveCapacity(1 << 17)
        for (index, cue) in schedule.cues.enumerated() {
            text.append(contentsOf: index == 0 ? [0x0A, 0x20, 0x20] : [0x2C, 0x0A, 0x20, 0x20])
            var mapped = cue
            mapped.frame = map(cue.frame)
            if case .word(let clip, let index, let word, let endFrame) = cue.kind {
                mapped.kind = .word(clip: clip, index: index, text: word, endFrame: map(endFrame))
            } else if case .sentence(let clip, let index, let text, let endFrame) = cue.kind {
                mapped.kind = .sentence(clip: clip, index: index, text: text, endFrame: map(endFrame))
            }
            EventEncoder.appendCue(mapped, to: &text)
            if text.count >= 1 << 16 {
                output(text)
                text.removeAll(keepingCapacity: true)
            }
        }
        text.append(contentsOf: (schedule.cues.isEmpty ? "]}\n" : "\n]}\n").utf8)
        output(text)
    }
}
