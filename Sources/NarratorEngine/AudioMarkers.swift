/// A labelled point in an audio file: a WAV `cue ` point with its `LIST`/`adtl`/`labl` label,
/// as Audacity, Sound Forge or Wavosaur write them. `frame` is at the rate the file is read at.
public struct AudioMarker: Sendable, Equatable {
    public let label: String
    public let frame: Int

    public init(label: String, frame: Int) {
        self.label = label
        self.frame = frame
    }

    /// The same marker in frames at `targetRate` (read at `rate`).
    public func converted(from rate: Int, to targetRate: Int) -> AudioMarker {
        AudioMarker(label: label, frame: Frames.convert(frame, from: rate, to: targetRate))
    }

    /// The file extensions libsndfile decodes, among those clips and web sprites come in: what
    /// counts as an audio file (for markers, sprite sources, a library's files).
    public static let audioExtensions: Set<String> = ["wav", "flac", "ogg", "oga", "opus", "mp3", "aiff", "aif", "w64", "caf"]

    /// Whether `path` names an audio file by its extension.
    public static func isAudioFile(_ path: String) -> Bool {
        audioExtensions.contains(Paths.fileExtension(path))
    }
}

extension WordTimings {
    /// Words from markers in the file at `path` (`audioFrames` long): each labelled marker starts
    /// a word, which ends at the next marker or at the audio's end. A marker without a label
    /// only ends the word before it, so authors can mark a pause after the last word.
    public static func fromMarkers(
        _ markers: [AudioMarker], audioFrames: Int, path: String
    ) throws(NarratorError) -> [WordTiming] {
        let ordered = stablySorted(markers) { $0.frame < $1.frame }
        if let late = ordered.last, late.frame > audioFrames {
            throw NarratorError(
                file: path, place: "marker '\(late.label)'",
                "at frame \(late.frame), past the end of the audio (\(audioFrames) frames)")
        }
        var words: [WordTiming] = []
        for (position, marker) in ordered.enumerated() where !marker.label.isEmpty {
            let end = position + 1 < ordered.count ? ordered[position + 1].frame : audioFrames
            words.append(WordTiming(index: words.count, text: marker.label, startFrame: marker.frame, endFrame: end))
        }
        if words.isEmpty { throw NarratorError(file: path, "holds no labelled cue markers") }
        return words
    }
}
