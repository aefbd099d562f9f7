/// Time inside Narrator is an integer count of frames at the lesson's sample rate.
/// Seconds exist only at the edges (files, display) and are converted once, here.
public enum Frames {
    /// `round(seconds × rate)`, halves away from zero. Returns nil for values that are
    /// not finite or would not fit a frame count (a timing file that says 1e300 seconds).
    /// The longest session a schedule may hold, in frames: 2^36 (over 16 days at 48 kHz)
    /// where `Int` has 64 bits, 2^31 − 1 (12.4 hours at 48 kHz) in the WebAssembly build,
    /// whose `Int` has 32. No frame count at any rate may exceed it, so none can overflow.
    #if arch(wasm32)
    public static let maxSession = Int(Int32.max)
    #else
    public static let maxSession = 1 << 36
    #endif

    /// `seconds` (whole, not negative) at `rate`, or `maxSession` if that is longer.
    public static func capped(seconds: Int, rate: Int) -> Int {
        let (frames, overflow) = seconds.multipliedReportingOverflow(by: rate)
        return overflow ? maxSession : min(frames, maxSession)
    }

    public static func from(seconds: Double, rate: Int) -> Int? {
        let exact = seconds * Double(rate)
        guard exact.isFinite, abs(exact) < min(9.0e15, Double(Int.max)) else { return nil }
        return Int(exact.rounded(.toNearestOrAwayFromZero))
    }

    /// A frame count at `rate` expressed at `targetRate`: `round(frames × targetRate / rate)`,
    /// computed in integers so that it is exact for any length.
    public static func convert(_ frames: Int, from rate: Int, to targetRate: Int) -> Int {
        precondition(rate > 0 && targetRate > 0)
        if rate == targetRate { return frames }
        let (high, low) = frames.multipliedFullWidth(by: targetRate)
        let (q, r) = rate.dividingFullWidth((high, low))
        // round half away from zero
        return 2 * abs(r) >= rate ? q + (frames < 0 ? -1 : 1) : q
    }

    /// Seconds for display: frames / rate.
    public static func seconds(_ frames: Int, rate: Int) -> Double {
        Double(frames) / Double(rate)
    }
}

extension Frames {
    /// Seconds as a person reads them in a message: to the millisecond, trailing zeros
    /// dropped, with the unit ("0.444 s", "1.5 s", "12 s", "-0.25 s"). From frames the
    /// milliseconds are computed in integers, so no binary residue ("0.44358333333333333")
    /// ever reaches a message. A time shorter than half a millisecond but not zero keeps
    /// three significant digits ("0.000208 s") rather than reading as "0 s".
    public static func describe(_ frames: Int, rate: Int) -> String {
        guard rate > 0 else { return "\(frames) frames" }
        // frames × 1000 must fit an Int for the exact path.
        guard frames.magnitude <= UInt(Int.max / 1000) else { return describe(seconds: seconds(frames, rate: rate)) }
        let millis = convert(frames, from: rate, to: 1000)
        if millis == 0, frames != 0 { return describe(seconds: seconds(frames, rate: rate)) }
        return text(millis: millis)
    }

    /// `describe` for a time that never was frames (a parsed value, which may be anything a
    /// file holds: NaN, infinite, 1e300).
    public static func describe(seconds: Double) -> String {
        if seconds.isNaN { return "NaN s" }
        if seconds.isInfinite { return seconds < 0 ? "-infinite s" : "infinite s" }
        if seconds == 0 { return "0 s" }
        if abs(seconds) >= 1e12 || abs(seconds) < 0.0005 { return threeSignificant(seconds) + " s" }
        return text(millis: Int((seconds * 1000).rounded(.toNearestOrAwayFromZero)))
    }

    private static func text(millis: Int) -> String {
        let sign = millis < 0 ? "-" : ""
        let magnitude = millis.magnitude
        var fraction = String(magnitude % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(magnitude / 1000)\(fraction.isEmpty ? "" : "." + fraction) s"
    }

    /// `value` as C's `%.3g` writes it (three significant digits, rounded half to even from
    /// the double's exact binary value; exponent form below 1e-4 and from 1e3 up; trailing
    /// zeros dropped), without the C library, so that a message reads the same in the
    /// WebAssembly build. Exact: the value is a ratio of big integers while digits are taken.
    package static func threeSignificant(_ value: Double) -> String {
        if value == 0 { return "0" }
        if !value.isFinite { return value.isNaN ? "nan" : value < 0 ? "-inf" : "inf" }
        let magnitude = value.magnitude
        // magnitude = significand × 2^exponent, exactly, as numerator / denominator.
        let significand = magnitude.significandBitPattern | (magnitude.isNormal ? 1 << 52 : 0)
        let exponent = (magnitude.isNormal ? Int(magnitude.exponentBitPattern) : 1) - 1075
        var numerator = BigUInt(significand)
        var denominator = BigUInt(1)
        if exponent > 0 { numerator.shiftLeft(exponent) } else { denominator.shiftLeft(-exponent) }
        // Scale to [1, 10): decimal exponent from the shortest digits, then corrected.
        var decimal = Int((magnitude.exponent * 30103).quotientAndRemainder(dividingBy: 100_000).quotient)
        if decimal > 0 { denominator.multiply(byPowerOfTen: decimal) } else { numerator.multiply(byPowerOfTen: -decimal) }
        while numerator < denominator { numerator.multiply(by: 10); decimal -= 1 }
        var ten = denominator
        ten.multiply(by: 10)
        while !(numerator < ten) { denominator.multiply(by: 10); ten.multiply(by: 10); decimal += 1 }
        var digits: [Int] = []
        for _ in 0..<3 {
            var digit = 0
            while !(numerator < denominator) { numerator.subtract(denominator); digit += 1 }
            digits.append(digit)
            numerator.multiply(by: 10)
        }
        // numerator is now 10 × the remainder: compare it with 5 × denominator (a half).
        var half = denominator
        half.multiply(by: 5)
        if half < numerator || (!(numerator < half) && digits[2] % 2 == 1) {
            var index = 2
            while index >= 0 {
                digits[index] += 1
                if digits[index] < 10 { break }
                digits[index] = 0
                index -= 1
            }
            if index < 0 { digits = [1, 0, 0]; decimal += 1 }
        }
        while digits.count > 1, digits.last == 0 { digits.removeLast() }
        let sign = value < 0 ? "-" : ""
        let characters = digits.map { Character(Unicode.Scalar(UInt8(48 + $0))) }
        if decimal < -4 || decimal >= 3 {
            var body = String(characters[0])
            if characters.count > 1 { body += "." + String(characters[1...]) }
            return sign + body + "e" + (decimal < 0 ? "-" : "+") + (decimal.magnitude < 10 ? "0" : "") + "\(decimal.magnitude)"
        }
        if decimal < 0 { return sign + "0." + String(repeating: "0", count: -decimal - 1) + String(characters) }
        if characters.count <= decimal + 1 { return sign + String(characters) + String(repeating: "0", count: decimal + 1 - characters.count) }
        return sign + String(characters[...decimal]) + "." + String(characters[(decimal + 1)...])
    }
}

/// An unsigned integer of any size, little-endian 32-bit limbs: just what `threeSignificant`
/// needs to hold a double's exact value.
private struct BigUInt {
    var limbs: [UInt32]

    init(_ value: UInt64) { limbs = [UInt32(truncatingIfNeeded: value), UInt32(truncatingIfNeeded: value >> 32)] }

    mutating func multiply(by factor: UInt32) {
        var carry: UInt64 = 0
        for index in limbs.indices {
            let product = UInt64(limbs[index]) * UInt64(factor) + carry
            limbs[index] = UInt32(truncatingIfNeeded: product)
            carry = product >> 32
        }
        if carry != 0 { limbs.append(UInt32(carry)) }
    }

    mutating func multiply(byPowerOfTen power: Int) {
        for _ in 0..<power { multiply(by: 10) }
    }

    mutating func shiftLeft(_ bits: Int) {
        limbs.insert(contentsOf: repeatElement(0, count: bits / 32), at: 0)
        let shift = UInt32(bits % 32)
        guard shift > 0 else { return }
        var carry: UInt32 = 0
        for index in limbs.indices {
            let limb = limbs[index]
            limbs[index] = (limb << shift) | carry
            carry = limb >> (32 - shift)
        }
        if carry != 0 { limbs.append(carry) }
    }

    /// self −= other; other ≤ self.
    mutating func subtract(_ other: BigUInt) {
        var borrow: Int64 = 0
        for index in limbs.indices {
            var difference = Int64(limbs[index]) - borrow - (index < other.limbs.count ? Int64(other.limbs[index]) : 0)
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 1 << 32 }
            limbs[index] = UInt32(difference)
        }
    }

    static func < (a: BigUInt, b: BigUInt) -> Bool {
        let count = max(a.limbs.count, b.limbs.count)
        for index in stride(from: count - 1, through: 0, by: -1) {
            let x = index < a.limbs.count ? a.limbs[index] : 0
            let y = index < b.limbs.count ? b.limbs[index] : 0
            if x != y { return x < y }
        }
        return false
    }
}
