// What the Swift runtime asks of the C library natively and Embedded Swift leaves to us:
// `Double(String)` calls `_swift_stdlib_strtod_clocale`, here wasi-libc's strtod (in the "C"
// locale, WASI's only one; musl's correctly rounded conversion, as glibc's is natively).

@_extern(c, "strtod")
func strtod(_ text: UnsafePointer<CChar>, _ end: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Double

@_cdecl("_swift_stdlib_strtod_clocale")
public func swiftStdlibStrtod(_ text: UnsafePointer<CChar>, _ result: UnsafeMutablePointer<Double>) -> UnsafePointer<CChar>? {
    var end: UnsafeMutablePointer<CChar>?
    result.pointee = strtod(text, &end)
    return end.map { UnsafePointer($0) }
}
