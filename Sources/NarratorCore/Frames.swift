/// Time inside Narrator is an integer count of frames at the lesson's sample rate.
/// Seconds exist only at the edges (files, display) and are converted once, here.
public enum Frames {
    /// `round(seconds × rate)`, halves away from zero. Returns nil for values that are
    /// not finite or would not fit a frame count (a timing file that says 1e300 seconds).
    public static func from(seconds: Double, rate: Int) -> Int? {
        let exact = seconds * Double(rate)
        guard exact.isFinite, abs(exact) < 9.0e15 else { return nil }
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
        if abs(seconds) >= 1e12 || abs(seconds) < 0.0005 { return String(format: "%.3g s", seconds) }
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
}
