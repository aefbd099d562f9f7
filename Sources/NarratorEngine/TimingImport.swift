/// The timing formats Narrator reads (from aligners, subtitle tools, Audacity, EPUB) and
/// writes (for web players, captions, EPUB, and its own canonical JSON).
public enum TimingFormat: String, Sendable, CaseIterable {
    /// `{"words": [{"text", "start", "end"}]}`, seconds: Narrator's own.
    case json
    /// Audacity labels: `start<TAB>end<TAB>text`.
    case audacity
    case webvtt
    case srt
    /// Praat TextGrid (long or short text), the `words` tier.
    case textgrid
    /// aeneas sync maps.
    case aeneasJSON = "aeneas-json"
    case aeneasCSV = "aeneas-csv"
    case aeneasTSV = "aeneas-tsv"
    /// SMIL: EPUB 3 Media Overlays, aeneas's SMIL.
    case smil
    /// Gentle's JSON: words it did not find in the audio are skipped and reported.
    case gentle
    /// Labelled cue markers inside an audio file (read through libsndfile, in NarratorAudioFile).
    case markers

    /// The formats `timings convert` writes, by the output's extension.
    public static let writable: [String: TimingFormat] = ["json": .json, "txt": .audacity, "vtt": .webvtt, "srt": .srt, "smil": .smil]
    /// The writable extensions, as messages list them.
    public static let writableList = ".json, .txt, .vtt, .srt or .smil"
}

/// Words read from a timing file, and what the reader had to leave out or guess.
public struct TimingImport: Sendable {
    public var format: TimingFormat
    public var words: [WordTiming]
    /// The words' sentences, from the file's grouping or the words' punctuation (`Sentences`).
    public var sentences: [SentenceTiming]
    /// Words skipped (Gentle's not found), texts that could not be resolved (SMIL): for the author.
    public var notes: [String]

    public init(format: TimingFormat, words: [WordTiming], sentences: [SentenceTiming]? = nil, notes: [String] = []) {
        self.format = format
        self.words = words
        self.sentences = sentences ?? Sentences.group(words)
        self.notes = notes
    }
}

