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
