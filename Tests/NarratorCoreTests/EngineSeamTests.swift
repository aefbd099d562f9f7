import Foundation
import Testing

@testable import NarratorEngine

/// The engine builds without Foundation (for WebAssembly), so it formats numbers and joins
/// paths itself. Each is checked here against what Foundation and the C library say.
@Suite struct EngineSeamTests {
    /// `%.3g` as C's printf writes it, over values chosen to round at every digit (ties,
    /// carries into a new digit, both exponent forms, the switch between them) and a spread
    /// of random ones.
    @Test func threeSignificantDigitsAreWhatPrintfWrites() {
        var values: [Double] = [
            1e12, 9.995e12, 9.9949e12, 1.2345e15, 1e300, 1.7976931348623157e308, .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, 0.0005 - 1e-12,
            0.0004999, 0.0001, 0.00012345, 0.000099999, 0.00009995, 1.005e-5, 1.015e-5, 2.5e-7, 1.125e-8,
            999.5, 1000, 0.1, 123.45, 12.345, 1.2345, 0.99995, 0.00099951,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let exponent = Double.random(in: -320...308, using: &generator)
            let mantissa = Double.random(in: 1..<10, using: &generator)
            values.append(mantissa * pow(10, exponent))
        }
        for value in values + values.map({ -$0 }) {
            #expect(Frames.threeSignificant(value) == String(format: "%.3g", value), "\(value)")
        }
    }

    /// Joining and splitting paths as a file URL does, for the paths a lesson names.
    @Test func pathsJoinAsFileURLsDo() {
        let folders = ["/srv/lessons", "/srv/lessons/", "/", "/a b/c"]
        let relatives = ["a.wav", "audio/a.wav", "audio/", "../shared/a.wav", "./a.wav", "/abs/a.wav", "é/ü.wav"]
        for folder in folders {
            for relative in relatives where !relative.hasPrefix("/") {
                let url = URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(relative).path
                #expect(Paths.join(folder, relative) == url, "\(folder) + \(relative)")
            }
        }
        #expect(Paths.join("/srv", "/abs/a.wav") == "/abs/a.wav")
        for path in ["/srv/lessons/a.json", "/a.json", "/srv/x/", "/srv/x/y.json"] {
            #expect(Paths.folder(of: path) == URL(fileURLWithPath: path).deletingLastPathComponent().path, "\(path)")
        }
        for path in ["a.WAV", "/x/y.tar.gz", "/x.d/y", "/x/.wav", "/x/y.", "noext"] {
            #expect(Paths.fileExtension(path) == URL(fileURLWithPath: path).pathExtension.lowercased(), "\(path)")
        }
    }

    /// The gain of the standard ducking (−12 dB) and of any level in dB is the C library's
    /// `pow`, the same float Foundation gives.
    @Test func decibelsAreTheCLibrarysPow() {
        for decibels in stride(from: -96.0, through: 0, by: 0.25) {
            #expect(Decibels.factor(decibels) == pow(10, decibels / 20))
        }
    }

    /// Spaces and tabs trimmed as Foundation's `.whitespaces` trims them (line breaks kept).
    @Test func spacesTrimAsFoundationTrimsThem() {
        let samples = ["  a ", "\ta b\t", "\u{00A0}x\u{2003}", "\u{3000}", "\na\n", " \r\n ", "", "é ", " 3.2", "\u{202F}w\u{205F}"]
        for sample in samples {
            #expect(sample.trimmingSpaces() == sample.trimmingCharacters(in: .whitespaces), "\(sample.debugDescription)")
        }
    }

    /// The engine's white space and space separators (kept out of the browser build's
    /// property tables) are the standard library's, for every scalar of Unicode.
    @Test func whiteSpaceIsUnicodesForEveryScalar() {
        var differing: [String] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if UnicodeSpaces.isWhiteSpace(scalar) != scalar.properties.isWhitespace { differing.append("White_Space U+\(String(value, radix: 16))") }
            if UnicodeSpaces.isSpaceSeparator(scalar) != (scalar.properties.generalCategory == .spaceSeparator) {
                differing.append("Zs U+\(String(value, radix: 16))")
            }
        }
        #expect(differing == [])
        for text in ["", " ", "\u{3000}\t", " \u{301}", "\r\n", "a ", "\u{2028}\u{85}", "\u{180E}", "\u{200B}"] {
            #expect(text.allSatisfy(UnicodeSpaces.isWhiteSpace) == text.allSatisfy(\.isWhitespace), "\(text.debugDescription)")
        }
    }

    /// `asciiLowercased()` equals `lowercased()` where the engine uses it: the only scalar past
    /// ASCII whose lower case is all ASCII is the Kelvin sign, and the words compared with
    /// (audio extensions, JSON's non-numbers) have no `k`.
    @Test func asciiLowerCaseIsLowerCaseWhereItIsCompared() {
        var toASCII: [UInt32] = []
        for value in UInt32(0x80)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if String(scalar).lowercased().unicodeScalars.allSatisfy(\.isASCII) { toASCII.append(value) }
        }
        #expect(toASCII == [0x212A])
        #expect(AudioMarker.audioExtensions.allSatisfy { !$0.contains("k") })
        for text in ["WAV", "wAv", "Ünïcode", "\u{212A}", "İ", "ΣΑΣ", "mp3", ""] {
            let lowered = text.unicodeScalars.map { $0.isASCII ? String($0).lowercased() : String($0) }.joined()
            #expect(text.asciiLowercased() == lowered, "\(text.debugDescription)")
        }
        for path in ["a.WAV", "b/c.Flac", "x.w\u{212A}v", "d.\u{130}iff", "e.wäv", "f.WÄV", ".wav", "g"] {
            #expect(AudioMarker.isAudioFile(path) == AudioMarker.audioExtensions.contains(Self.extensionLowercased(path)), "\(path)")
        }
    }

    private static func extensionLowercased(_ path: String) -> String {
        let name = (path as NSString).lastPathComponent
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }
}
