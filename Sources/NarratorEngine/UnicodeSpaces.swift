/// White space and lower case without the standard library's Unicode property tables: asking
/// `Unicode.Scalar.Properties` (`isWhitespace`, `generalCategory`) or `lowercased()` links them
/// into the browser build (31 KB of its gzipped module, docs/wasm.md#size). The two sets are
/// Unicode's own, unchanged since Unicode 6.3 (U+180E left White_Space then);
/// EngineSeamTests checks them against `Unicode.Scalar.Properties` for every scalar, natively.
enum UnicodeSpaces {
    /// The scalar has the White_Space property (`Unicode.Scalar.Properties.isWhitespace`).
    static func isWhiteSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x85: true
        default: isSpaceSeparator(scalar) || scalar.value == 0x2028 || scalar.value == 0x2029
        }
    }

    /// The scalar's general category is Zs, a space separator (`generalCategory == .spaceSeparator`).
    static func isSpaceSeparator(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x202F, 0x205F, 0x3000: true
        default: false
        }
    }

    /// The character is white space as `Character.isWhitespace` says: its first scalar is.
    static func isWhiteSpace(_ character: Character) -> Bool {
        character.unicodeScalars.first.map(isWhiteSpace) ?? false
    }
}

extension StringProtocol {
    /// The text with its ASCII letters lowercased, every other scalar as it is. Equal to
    /// `lowercased()` wherever the result is compared with ASCII text: the only scalar past
    /// ASCII whose lower case is ASCII is U+212A KELVIN SIGN (`k`), checked for every scalar by
    /// EngineSeamTests; callers compare with words that have no `k`, or with text already
    /// checked to be ASCII.
    func asciiLowercased() -> String {
        String(decoding: utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
