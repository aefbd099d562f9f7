/// Float samples (full scale ±1) to the integer formats files and devices take. One
/// definition, so that what a device plays is what a rendered file holds.
public enum SampleConversion {
    /// clamp(round(x × 32768)), ties to even: the exact inverse of libsndfile's read
    /// normalisation, so 16-bit clips come back bit for bit. By the float "magic number" trick:
    /// adding 1.5 × 2^23 leaves the rounded integer in the low mantissa bits. Plain SSE2
    /// arithmetic that vectorises, where rounded() costs a libm call per sample.
    @inline(__always)
    static func level16(_ x: Float) -> Int32 {
        let clamped = max(-32768, min(32767, x * 32768))
        return Int32(bitPattern: (clamped + 12_582_912).bitPattern) &- 0x4B40_0000
    }

    @inline(__always)
    public static func toInt16(_ source: UnsafePointer<Float>, _ target: UnsafeMutablePointer<Int16>, count: Int) {
        for i in 0..<count {
            target[i] = Int16(truncatingIfNeeded: level16(source[i]))
        }
    }

    /// The 16-bit value in the top bits, so a 32-bit device plays exactly what `toInt16` gives.
    @inline(__always)
    public static func toInt32(_ source: UnsafePointer<Float>, _ target: UnsafeMutablePointer<Int32>, count: Int) {
        for i in 0..<count {
            target[i] = level16(source[i]) << 16
        }
    }

    /// Floats quantised like `toInt16`, so a float device plays exactly what a 16-bit render holds.
    @inline(__always)
    public static func toQuantisedFloat(_ source: UnsafePointer<Float>, _ target: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count {
            target[i] = Float(level16(source[i])) / 32768
        }
    }
}
