import Foundation
import NarratorTestSupport

/// The Learn-with-Homer sight-words lesson, which the activity, priority and live suites play;
/// the length of each of its clips is read by hand (`WAVFile`), not from the code under test.
enum SightWordsLesson {
    static let path = Repo.path("Timings/lessons/homer-sight-words.json")
    static let rate = 48000

    static func frames(_ clip: String) throws -> Int {
        let paths = [
            "intro": "homer/intro", "try-again": "homer/try-again", "see-tap-see": "homer/see-tap-see",
            "hat-tap-hat": "homer/hat-tap-hat", "word-see": "homer/word-see", "word-hat": "homer/word-hat",
            "sfx": "sfx/correct", "whoosh": "sfx/whoosh", "p1": "sight-words/part1", "p2": "sight-words/part2",
            "ga": "congrats/great-job", "gb": "congrats/well-done", "gc": "congrats/awesome",
        ]
        return try WAVFile(path: Repo.path("Audio/lessons/\(paths[clip]!).wav")).frames
    }
}

/// What `narrator simulate` writes: one event per line.
enum Simulated {
    struct Event {
        let fields: [String: Any]
        var type: String { fields["type"] as? String ?? "" }
        var frame: Int { fields["frame"] as? Int ?? -1 }
        subscript(_ key: String) -> String? { fields[key].map { "\($0)" } }
    }

    /// `type@frame` of each begin/end/canceled of request `id`.
    static func outcome(_ trace: [Event], _ id: String) -> [String] {
        trace.filter { ["begin", "end", "canceled"].contains($0.type) && $0["id"] == id }.map { "\($0.type)@\($0.frame)" }
    }
}
