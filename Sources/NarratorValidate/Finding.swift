import Foundation

/// One thing `narrator validate` found wrong with a library.
public struct Finding: Sendable, Equatable, Encodable {
    public enum Severity: String, Sendable, Encodable {
        /// The lesson cannot play as written.
        case error
        /// It plays, but not as well as it should.
        case warning
    }

    /// Which check found it (the summary table's rows).
    public enum Check: String, Sendable, Encodable, CaseIterable {
        /// The lesson file: JSON, keys, references to chains, pools and clips.
        case lesson
        /// A file that is not there.
        case missing
        /// A file there but unreadable: audio libsndfile cannot decode, JSON that does not parse.
        case unreadable
        /// Audio at another rate than its lesson's: resampled every time it loads.
        case sampleRate = "sample-rate"
        /// Audio whose channels do not match the lesson's output: averaged, dropped or left silent.
        case channels
        /// Word timings that do not parse, overlap, are out of order or run past their audio.
        case timings
        /// Timing words that differ from the transcript the lesson gives.
        case transcript
        /// Word timings that disagree with the sound they time: a word mostly over silence, a
        /// boundary through a word's sound, a duration no word has, timings that drift.
        case alignment
        case silent
        case clipped
        /// A clip whose integrated loudness (EBU R 128) is far from its lesson's other clips on
        /// the same bus: a child hears the jump.
        case loudness
        /// A clip whose true peak, as it plays, is over −1 dBTP: it may clip once encoded or
        /// resampled.
        case truePeak = "true-peak"
        /// An MP3 without gapless information (no Xing/Info or VBRI header): it plays its
        /// encoder's delay and padding, silence before and after the sound.
        case gapless
        /// A clip no chain plays, or an audio file no lesson uses.
        case unreferenced
        /// A locale's voice clips that fall back to the default's recording, timings or
        /// transcript (`"locales"`): allowed, but a translation left to do.
        case locale
        /// A picture a lesson names (`"pictures"`): a file that is missing, not an SVG, PNG or
        /// WebP image by its first bytes, over 2 MiB or leading outside the lesson's folder
        /// (errors); a picture for a name no choice, answer, tap sound or pulse target has
        /// (a warning: nothing shows it).
        case picture
    }

    public let severity: Severity
    public let check: Check
    /// The lesson it was found through; nil for a file no lesson names.
    public let lesson: String?
    /// The file at fault.
    public let file: String
    /// Where in it: a lesson key, a line, a word.
    public let place: String?
    public let message: String

    public init(_ severity: Severity, _ check: Check, lesson: String?, file: String, place: String? = nil, _ message: String) {
        self.severity = severity
        self.check = check
        self.lesson = lesson
        self.file = file
        self.place = place
        self.message = message
    }

    /// "error: FILE: PLACE: MESSAGE", one line whatever the message holds.
    public var line: String {
        let text = place.map { "\(file): \($0): \(message)" } ?? "\(file): \(message)"
        return "\(severity.rawValue): \(text)".replacingOccurrences(of: "\n", with: "\\n")
    }
}
