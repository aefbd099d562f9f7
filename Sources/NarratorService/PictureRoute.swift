import Foundation
import NarratorKit
import Synchronization

/// A lesson's picture for the web server's `GET /pictures/LESSON/NAME`.
///
/// The lesson is read by a loader child, as every lesson the daemon reads (`LessonLoader`): it
/// finds the picture the lesson names `NAME`, checks its file (`PictureFile`: inside the
/// library where its path really leads, at most 2 MiB, SVG, PNG or WebP by its first bytes)
/// and answers with its real path. The daemon then reads that file itself, checked again the
/// same way: nothing from the URL is ever a path, and nothing in a lesson file is parsed in the
/// daemon for a picture.
enum PictureRoute {
    /// What the web server answers.
    enum Answer: Sendable {
        case picture(Data, PictureFile.Kind)
        /// An HTTP status (403, 404, 413, 500, 503) and why, in words a client may read.
        case refused(Int, String)
    }

    /// The internal request the daemon sends its loader child (never a client's: `op` is no
    /// request of the protocol, so a client's message never reaches a child as one).
    static let op = "picture"

    static func request(lesson: String, name: String) -> Data {
        var out: [UInt8] = []
        EventEncoder.appendObject(
            [EventEncoder.Member("lesson", .string(lesson)), EventEncoder.Member("name", .string(name)), EventEncoder.Member("op", .string(op))],
            to: &out)
        return Data(out)
    }

    /// The lesson and name of a picture request; nil for any other message.
    static func parse(_ request: String) -> (lesson: String, name: String)? {
        guard let value = try? JSONValue.parse(Data(request.utf8), file: "request", maxDepth: 4), case .object(let members) = value,
            members["op"] == .string(op), case .string(let lesson)? = members["lesson"], case .string(let name)? = members["name"]
        else { return nil }
        return (lesson, name)
    }

    /// The status of a refusal.
    static func status(_ problem: PictureFile.Problem) -> Int {
        switch problem {
        case .outside: 403
        case .tooLarge: 413
        case .unusable: 404
        }
    }

    /// The child's side: the picture's real path and kind as a `finished` line, or an `error`
    /// line with the HTTP `status`.
    static func answerInChild(lesson name: String, picture: String, library: LessonLibrary) -> (line: EventLine, found: Bool) {
        func refused(_ status: Int, _ message: String) -> (line: EventLine, found: Bool) {
            (.error(message, fields: [EventEncoder.Member("status", .int(status))]), false)
        }
        let lesson: Lesson
        do throws(NarratorError) {
            lesson = try library.load(name).lesson
        } catch {
            return refused(404, library.publicDescription(of: error))
        }
        guard let entry = lesson.pictures[picture] else { return refused(404, "lesson '\(name)' has no picture '\(picture)'") }
        switch PictureFile.load(path: entry.file, inside: library.root) {
        case .failure(let refusal):
            return refused(status(refusal.problem), library.publicDescription(of: refusal.error))
        case .success(let read):
            let fields = [
                EventEncoder.Member("path", .string(RealPath.resolve(entry.file) ?? entry.file)), EventEncoder.Member("type", .string(read.kind.rawValue)),
            ]
            return (EventLine(.finished, frame: nil, heard: nil, fields: fields), true)
        }
    }

    /// Picture requests being answered at once, all clients together; one more is refused
    /// (503): each holds a thread and a loader child.
    static let maxAtOnce = 8
    private static let atOnce = Atomic<Int>(0)

    /// The daemon's side, off the event loop: the loader child's answer, then the file read
    /// and checked again here.
    static func answer(lesson: String, name: String, service: NarratorService) async -> Answer {
        guard atOnce.add(1, ordering: .relaxed).newValue <= maxAtOnce else {
            atOnce.subtract(1, ordering: .relaxed)
            return .refused(503, "busy: \(maxAtOnce) pictures are being read; try again shortly")
        }
        return await withCheckedContinuation { (done: CheckedContinuation<Answer, Never>) in
            DispatchQueue.global().async {
                defer { atOnce.subtract(1, ordering: .relaxed) }
                done.resume(returning: blockingAnswer(lesson: lesson, name: name, service: service))
            }
        }
    }

    private static func blockingAnswer(lesson: String, name: String, service: NarratorService) -> Answer {
        let library = service.library
        // Refused by its name alone (`..`, an absolute path, a link out) before any child
        // starts: as a lesson that is not there.
        do throws(NarratorError) {
            _ = try library.resolve(lesson)
        } catch {
            return .refused(404, library.publicDescription(of: error))
        }
        let outcome = service.loader.run(request: request(lesson: lesson, name: name), lesson: lesson, isCanceled: { false }, lines: { _ in })
        guard case .finished(let terminal, let prepared) = outcome else {
            if case .failed(let problem) = outcome { return .refused(500, library.scrub(problem)) }
            return .refused(500, "stopped")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(("{" + terminal).utf8)) as? [String: Any] else {
            return .refused(500, "the lesson loader's answer was not understood")
        }
        guard prepared, let path = object["path"] as? String else {
            return .refused(object["status"] as? Int ?? 500, object["message"] as? String ?? "the picture cannot be read")
        }
        switch PictureFile.load(path: path, inside: library.root) {
        case .success(let read): return .picture(read.bytes, read.kind)
        case .failure(let refusal): return .refused(status(refusal.problem), library.publicDescription(of: refusal.error))
        }
    }
}
