import Foundation
import NarratorTestSupport

@testable import NarratorCore
@testable import NarratorEngine

// Lessons on audio made in memory, shared by the scheduler's, the sentences' and the activity
// state machine's suites.

/// Audio made in memory: each file name maps to (channels, frames); sample f of channel c is
/// a value that encodes the file, the frame and the channel, so a render can be checked
/// sample by sample.
struct MemoryDecoder: AudioDecoder {
    let files: [String: (channels: Int, frames: Int)]

    static func value(file: Int, frame: Int, channel: Int) -> Float {
        Float(file * 100_000 + frame * 4 + channel) / 8_388_608
    }

    func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let spec = files[name] else { throw NarratorError(file: path, "no such file") }
        let id = Int(name.filter(\.isNumber)) ?? 0
        var samples: [Float] = []
        for f in 0..<spec.frames {
            for c in 0..<spec.channels { samples.append(Self.value(file: id, frame: f, channel: c)) }
        }
        return AudioBuffer(channels: spec.channels, samples: samples)
    }
}

/// `json` parsed as a lesson in a fresh folder holding `timings` (file name → text); the
/// caller removes the folder.
func lesson(_ json: String, timings: [String: String] = [:]) throws -> (Lesson, TempDir) {
    let dir = TempDir()
    for (name, text) in timings { try text.write(toFile: dir.file(name), atomically: true, encoding: .utf8) }
    let lesson = try Lesson.parse(Data(json.utf8), path: dir.file("lesson.json"), directory: dir.url)
    return (lesson, dir)
}
