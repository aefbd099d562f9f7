/// Words of messages that depend on a number.
public enum Wording {
    /// "1 word", "2 words", "0 words"; `plural` for nouns that do not take an "s"
    /// ("1 match", "2 matches").
    public static func count(_ number: Int, _ singular: String, plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }

    /// The words of `text` as a reader hears them, for comparing texts: lower case, split at
    /// white space, each word kept to its letters, marks, digits and apostrophes (a curly one
    /// made straight), empty words dropped. "Trees." and "trees" are one word; so are "It’s"
    /// and "it's".
    public static func spokenWords(_ text: String) -> [String] {
        text.lowercased().split(whereSeparator: { $0.isWhitespace }).compactMap { word in
            var kept = String.UnicodeScalarView()
            for scalar in word.unicodeScalars {
                if scalar == "\u{2019}" || scalar == "'" {
                    kept.append("'")
                } else if isLetterMarkOrNumber(scalar) {
                    kept.append(scalar)
                }
            }
            return kept.isEmpty ? nil : String(kept)
        }
    }

    private static func isLetterMarkOrNumber(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
            true
        default: false
        }
    }
}
