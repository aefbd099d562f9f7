import Foundation
import NarratorCore

/// Writing the command's output to a descriptor with write(2), to the end, EINTR retried.
/// Foundation's `FileHandle.write(_:)` traps when the write fails (a full disk, `/dev/full`, a
/// closed pipe with SIGPIPE ignored); a failed write here is an errno the caller turns into one
/// line.
enum Output {
    /// Writes every byte of `bytes` to `descriptor`: 0, or the errno of the failure.
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Int32 {
        var offset = 0
        return bytes.withUnsafeBytes { buffer -> Int32 in
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if written == 0 { return EIO }
                offset += written
            }
            return 0
        }
    }

    @discardableResult
    static func write(_ text: String, to descriptor: Int32) -> Int32 { write(Array(text.utf8), to: descriptor) }

    /// The error for a failed write of the command's output `name` ("stdout", or a path).
    static func failure(_ name: String, _ code: Int32) -> NarratorError {
        NarratorError(file: name, "cannot be written (\(FileProblem.describe(errno: code)))")
    }
}
