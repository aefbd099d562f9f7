import ArgumentParser
import Foundation
import Logging
import NarratorKit
import NarratorPlot
import NarratorService
import Synchronization

struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Adjust a clip's word timings by eye: a local page with its waveform, its words and Save.",
        discussion: """
            Serves a page on 127.0.0.1 with the clip's waveform and a box per word; each boundary \
            can be dragged (or moved with the arrow keys: 1 ms, 10 ms with Shift), a click on a \
            word plays it, Shift+click plays the words between. Save writes the clip's timing \
            file in its own format (Narrator JSON, Audacity labels, WebVTT or SubRip) at the \
            lesson's rate, complete or not at all. The page's address is the first line on \
            stdout. Ctrl-C ends it. What each format keeps: docs/edit.md.

            Example:
              narrator edit Timings/lessons/picture-dictionary.json --clip apple
            """)

    @Argument(help: "The lesson file (JSON).")
    var lesson: String

    @Option(help: "The clip whose timings to edit, by its id in the lesson's \"clips\".")
    var clip: String

    @Option(help: "The port to serve the page on, on 127.0.0.1 (0: any free port).")
    var port = 0

    @Flag(help: "Do not open the page in a browser (xdg-open); just print its address.")
    var noOpen = false

    @Option(help: "Connections held at once; one more is answered 503 and closed.")
    var maxConnections = EditServer.defaultMaxConnections

    @Option(help: "Seconds a connection may stay open sending nothing (between requests, or from its start) before it is closed; 0: no limit.")
    var idleTimeout: Double = EditServer.defaultIdleTimeout

    /// Columns of the page's waveform: its width in CSS pixels.
    static let columns = 1000

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535, got \(port)") }
        guard (1...65536).contains(maxConnections) else { throw ValidationError("--max-connections must be between 1 and 65536, got \(maxConnections)") }
        guard idleTimeout.isFinite, (0...86400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be between 0 and 86400 seconds, got \(idleTimeout)") }
    }

    func run() throws {
        var made: EditSession?
        try reportingErrors { () throws(NarratorError) in made = try Self.session(lesson: lesson, clip: clip) }
        guard let session = made else { return }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let open = !noOpen
        let limits = EditServer.Limits(maxConnections: maxConnections, idleTimeout: idleTimeout > 0 ? idleTimeout : nil)
        Task.detached { [port] in
            do {
                try await EditServer.run(session, host: "127.0.0.1", port: port, limits: limits, logger: Logger(label: "narrator-edit")) { port in
                    let url = "http://127.0.0.1:\(port)/"
                    Output.write(url + "\n", to: STDOUT_FILENO)
                    if open { Self.openInBrowser(url) }
                }
            } catch let error as NarratorError {
                failure.withLock { $0 = error.description }
            } catch {
                failure.withLock { $0 = "127.0.0.1:\(port): \(error)" }
            }
            done.signal()
        }
        done.wait()
        if let message = failure.withLock({ $0 }) {
            printError(message)
            throw ExitCode(1)
        }
    }

    /// The clip's audio, envelope and timing file, through the lesson loader and the clip bank
    /// (so the checks are `render`'s: the region inside its audio, the words inside it).
    static func session(lesson path: String, clip id: String) throws(NarratorError) -> EditSession {
        let lesson = try NarratorLesson(path: path).lesson
        guard let spec = lesson.clips[id] else {
            let known = lesson.clips.keys.sorted().prefix(8).joined(separator: ", ")
            throw NarratorError(file: path, place: "clips.\(id)", "no such clip (the lesson's clips include: \(known))")
        }
        guard let timings = spec.timings else {
            throw NarratorError(file: path, place: "clips.\(id)", "has no timings file to edit (give it \"timings\")")
        }
        let bank = try ClipBank.prepare(lesson: lesson, clipIDs: [id], decoder: SndFileDecoder(streamAboveSeconds: nil))
        let audio = bank.clips[id]!.audio
        guard case .memory(let buffer) = audio.source else {
            throw NarratorError(file: spec.file, "could not be held in memory (clips.\(id))")
        }
        let rate = lesson.sampleRate
        let editor = try TimingEditor(path: timings, rate: rate, regionStart: audio.offset, clipFrames: audio.frames)
        let samples = UnsafeBufferPointer(rebasing: buffer.storage[(audio.offset * buffer.channels)..<((audio.offset + audio.frames) * buffer.channels)])

        var envelope = WaveformEnvelope(totalFrames: audio.frames, columns: columns, channels: buffer.channels)
        envelope.add(samples, frames: audio.frames)
        func list(_ value: (WaveformEnvelope.Column) -> Float) -> String {
            "[" + (0..<columns).map { envelope[$0].map { String(format: "%.4f", value($0)) } ?? "null" }.joined(separator: ",") + "]"
        }
        let envelopeJSON = #"{"columns":\#(columns),"min":\#(list(\.minimum)),"max":\#(list(\.maximum)),"rms":\#(list(\.rms))}"#

        // The region as 16-bit WAV, written by the one WAV writer and read back.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("narrator-edit-\(getpid()).wav").path
        defer { unlink(scratch) }
        let writer = try SoundFileWriter(path: scratch, sampleRate: rate, channels: buffer.channels, format: .s16, maxFrames: audio.frames)
        try writer.write(samples, frames: audio.frames)
        try writer.finish()
        guard let wav = FileManager.default.contents(atPath: scratch) else { throw NarratorError(file: scratch, "could not be read back") }
        return EditSession(lesson: path, clip: id, wav: Array(wav), envelope: envelopeJSON, editor: editor)
    }

    /// `xdg-open URL` when there is one; the address is on stdout either way.
    static func openInBrowser(_ url: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }
}
