#if hasFeature(Embedded)
@_extern(c, "pow") private func pow(_ x: Double, _ y: Double) -> Double
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Levels in decibels as the factors the mixer multiplies by. One place calls the C library's
/// `pow`: glibc natively, wasi-libc in the WebAssembly build (both the same correctly rounded
/// implementation), so a gain is the same float in either.
public enum Decibels {
    /// The amplitude factor of `decibels`: 10^(dB/20).
    public static func factor(_ decibels: Double) -> Double { pow(10, decibels / 20) }
}
