/// One sentence of a timing file: consecutive words, in frames from the start of its audio file
/// (or, in a prepared clip, from the clip's first frame, like its words).
public struct SentenceTiming: Sendable, Equatable {
    /// 0-based position among the timing file's sentences (a region keeps the file's numbering,
    /// as it keeps the words').
    public var index: Int
    /// The indexes (`WordTiming.index`) of its first and last word.
    public var words: ClosedRange<Int>
    /// Its words' texts joined by one space (empty texts left out).
    public var text: String
    /// Its first word's start.
    public var startFrame: Int
    /// Exclusive: its last word's end.
    public var endFrame: Int

    public init(index: Int, words: ClosedRange<Int>, text: String, startFrame: Int, endFrame: Int) {
        self.index = index
        self.words = words
        self.text = text
        self.startFrame = startFrame
        self.endFrame = endFrame
    }
}

/// Sentences from timing files: how words are grouped (by the file's own grouping, else by
/// punctuation), what a region keeps of them, and where a seek or a resume lands.
/// docs/timing-formats.md describes the grouping per format.
public enum Sentences {
    /// Sentences of `words` (a timing file's, in order, `words[k].index == k` not required).
    /// `groups[k]` is the file's group of word k (a WebVTT cue, a SMIL sentence, a TextGrid
    /// phrase), nil where the file gives none. Consecutive words of one group are a sentence;
    /// runs of words without a group are split after each word that ends a sentence by its
    /// punctuation. A file whose every group holds one word (one cue per word) has no grouping:
    /// its words are split by punctuation, and so are they when `groups` is not one per word.
    public static func group(_ words: [WordTiming], groups: [Int?] = []) -> [SentenceTiming] {
        var keys = groups.count == words.count ? groups : []
        // A grouping that never puts two consecutive words together says nothing.
        if !keys.isEmpty, !keys.indices.dropFirst().contains(where: { keys[$0] != nil && keys[$0] == keys[$0 - 1] }) {
            keys = []
        }
        var sentences: [SentenceTiming] = []
        var first = 0
        for k in words.indices {
            let key = keys.isEmpty ? nil : keys[k]
            let last = k + 1 == words.count
            let ends: Bool
            if last {
                ends = true
            } else if let key {
                ends = keys[k + 1] != key
            } else {
                ends = keys.isEmpty || keys[k + 1] == nil ? endsSentence(words[k].text) : true
            }
            if ends {
                sentences.append(make(index: sentences.count, words[first...k]))
                first = k + 1
            }
        }
        return sentences
    }

    /// Whether a word ends a sentence by its punctuation: its last character (after closing
    /// quotes and brackets) is `.` `!` `?` `…` or their CJK and combined forms.
    public static func endsSentence(_ text: String) -> Bool {
        for scalar in text.unicodeScalars.reversed() {
            if closers.contains(scalar) || UnicodeSpaces.isWhiteSpace(scalar) { continue }
            return enders.contains(scalar)
        }
        return false
    }

    static let enders: [Unicode.Scalar] = [".", "!", "?", "…", "。", "！", "？", "｡", "‼", "⁇", "⁈", "⁉", "؟", "।", "॥"]
    static let closers: [Unicode.Scalar] = [
        "\"", "'", "”", "’", "»", "›", ")", "]", "}", "」", "』", "）", "〕", "】", "〉", "》", "＂", "＇",
    ]

    /// The sentence of `words` (consecutive, at least one).
    static func make(index: Int, _ words: ArraySlice<WordTiming>) -> SentenceTiming {
        SentenceTiming(
            index: index, words: words.first!.index...words.last!.index,
            text: words.lazy.map { $0.text }.filter { !$0.isEmpty }.joined(separator: " "),
            startFrame: words.first!.startFrame, endFrame: words.last!.endFrame)
    }

    /// What a region keeps of `sentences`: `kept` are the words it keeps (in frames of the clip,
    /// consecutive words of the file). A sentence partly inside keeps the words inside: its text
    /// is theirs and its frames run from the first kept word's start to the last's end (a word
    /// the region cuts counts with its part inside). Sentences with no word kept are dropped.
    public static func clip(_ sentences: [SentenceTiming], to kept: [WordTiming]) -> [SentenceTiming] {
        var out: [SentenceTiming] = []
        var next = 0
        // Both in order: one pass over each.
        for sentence in sentences {
            while next < kept.count, kept[next].index < sentence.words.lowerBound { next += 1 }
            let from = next
            while next < kept.count, kept[next].index <= sentence.words.upperBound { next += 1 }
            if next > from { out.append(make(index: sentence.index, kept[from..<next])) }
        }
        return out
    }

    // MARK: Lookups (seek and resume)

    /// The position in `sentences` of the sentence that holds the word of index `word`
    /// (`WordTiming.index`); nil when none does. O(log n).
    public static func sentence(containingWord word: Int, in sentences: [SentenceTiming]) -> Int? {
        var low = 0
        var high = sentences.count
        while low < high {
            let middle = (low + high) / 2
            if sentences[middle].words.upperBound < word { low = middle + 1 } else { high = middle }
        }
        return low < sentences.count && sentences[low].words.contains(word) ? low : nil
    }

    /// The position in `words` of the word being heard at `frame`: the word whose frames hold
    /// it, else (in a pause) the last word that started before it; nil before the first word.
    /// Of words starting at the same frame, the last (a zero-length word is passed). O(log n).
    public static func word(heardAt frame: Int, in words: [WordTiming]) -> Int? {
        var low = 0
        var high = words.count
        // The first word that starts after `frame`.
        while low < high {
            let middle = (low + high) / 2
            if words[middle].startFrame <= frame { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }

    /// Where playback resumes from `frame`.
    public enum ResumePoint: Sendable, Equatable {
        /// The frame itself.
        case frame
        /// The start of the word being heard.
        case word
        /// The start of the sentence of the word being heard.
        case sentence
    }

    /// The frame to resume `frame` from, as `point` asks: the start of the word being heard at
    /// `frame` (`word(heardAt:)`) or of its sentence; `frame` itself before the first word.
    public static func resumeFrame(
        _ frame: Int, from point: ResumePoint, words: [WordTiming], sentences: [SentenceTiming]
    ) -> Int {
        guard point != .frame, let position = word(heardAt: frame, in: words) else { return frame }
        let word = words[position]
        if point == .sentence, let sentence = sentence(containingWord: word.index, in: sentences) {
            return min(sentences[sentence].startFrame, frame)
        }
        return min(word.startFrame, frame)
    }
}
