import Foundation

/// A RIFF/WAVE file read by hand (not through the code under test): its format fields and its
/// raw data chunk.
public struct WAVFile: Sendable {
    public let formatTag: Int
    public let channels: Int
    public let sampleRate: Int
    public let bitsPerSample: Int
    public let data: Data

    public init(path: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, bytes.prefix(4) == Data("RIFF".utf8), bytes[8..<12] == Data("WAVE".utf8) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        var offset = 12
        var fmt: (Int, Int, Int, Int)?
        var data: Data?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                fmt = (u16(body), u16(body + 2), u32(body + 4), u16(body + 14))
            } else if id == "data" {
                data = bytes[body..<min(body + size, bytes.count)]
            }
            offset = body + size + (size & 1)
        }
        guard let fmt, let data else { throw CocoaError(.fileReadCorruptFile) }
        (formatTag, channels, sampleRate, bitsPerSample) = fmt
        self.data = Data(data)
    }

    /// 16-bit samples, interleaved.
    public var int16Samples: [Int16] {
        precondition(bitsPerSample == 16)
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 2)).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) }
        }
    }

    /// Samples as floats at full scale ±1 (16-bit integer or 32-bit float data).
    public var floatSamples: [Float] {
        if bitsPerSample == 16 { return int16Samples.map { Float($0) / 32768 } }
        precondition(bitsPerSample == 32 && (formatTag == 3 || formatTag == 0xFFFE))
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 4)).map {
                Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)))
            }
        }
    }

    public var frames: Int { data.count / (channels * bitsPerSample / 8) }
}

extension WAVFile {
    /// The bytes of a 16-bit PCM WAV file (a 44-byte header, then `samples`, interleaved),
    /// written by hand: the one writer the tests use to make their own audio.
    public static func pcm16(_ samples: [Int16], rate: Int, channels: Int = 1) -> Data {
        var data = Data()
        func u32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + samples.count * 2)
        data.append(contentsOf: Array("WAVEfmt ".utf8)); u32(16)
        u16(1); u16(channels); u32(rate); u32(rate * channels * 2); u16(channels * 2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(samples.count * 2)
        for sample in samples { withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }
}
