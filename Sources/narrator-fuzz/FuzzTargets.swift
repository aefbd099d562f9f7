import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorService

/// Every parser Narrator runs on files or messages it did not write, as one fuzz target each:
/// the entry point the CLI, the library or the daemon calls, fed the input's bytes. A thrown
/// `NarratorError` is the right answer to bad input; only a trap, a sanitizer report or a hang
/// is a finding. docs/fuzzing.md lists what each covers and where its seeds come from.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// Timing files, through `WordTimings.read(_:path:rate:)`: format detection, the format's
    /// parser, then the conversion to frames and the order/overlap checks.
    case json
    case aeneasJSON = "aeneas-json"
    case gentle
    case audacity
    case aeneasTSV = "aeneas-tsv"
    case aeneasCSV = "aeneas-csv"
    case webvtt
    case srt
    case textgrid
    /// A SMIL document; the XHTML pages its seeds name (`page.xhtml`, `sentence.xhtml`) are
    /// in the workspace, so the page lookup runs too.
    case smil
    /// The XHTML page a SMIL file points to: the input is the page, read for a fixed SMIL.
    case smilPage = "smil-page"
    /// `Lesson.parse` (JSONValue, clips, sprites, pools, chains, ducking, activities), then the
    /// reference checks of every chain and activity.
    case lesson
    /// A howler.js sprite map, `SpriteMap.parse`.
    case spriteMap = "sprite-map"
    /// Audio file bytes, written to a file and read through libsndfile as the engine does:
    /// header, cue markers and their labels, words from markers, decoding and resampling.
    case wav
    /// One message of the daemon's protocol, through its request decoder.
    case request

    /// The file name a timing input is read under: timing formats are detected by extension.
    var timingFileName: String? {
        switch self {
        case .json, .aeneasJSON, .gentle: "input.json"
        case .audacity: "input.txt"
        case .aeneasTSV: "input.tsv"
        case .aeneasCSV: "input.csv"
        case .webvtt: "input.vtt"
        case .srt: "input.srt"
        case .textgrid: "input.TextGrid"
        case .smil: "input.smil"
        case .smilPage, .lesson, .spriteMap, .wav, .request: nil
        }
    }

    /// What one input came to: parsed (with a short account), or the error the user would see.
    enum Outcome: Sendable {
        case accepted(String)
        case rejected(NarratorError)
    }

    /// The rate timings and audio are read at.
    static let rate = 48000

    /// Runs one input. Never throws: an error is an outcome; a trap ends the process.
    func run(_ data: Data, in workspace: Workspace) -> Outcome {
        do throws(NarratorError) {
            return .accepted(try parse(data, in: workspace))
        } catch {
            return .rejected(error)
        }
    }

    private func parse(_ data: Data, in workspace: Workspace) throws(NarratorError) -> String {
        if let name = timingFileName {
            // A path in the workspace, so that SMIL finds the pages beside it; read from memory.
            let imported = try WordTimings.read(data, path: workspace.file(name), rate: Self.rate)
            return "\(imported.format.rawValue): \(imported.words.count) words, \(imported.notes.count) notes"
        }
        switch self {
        case .smilPage:
            workspace.put(data, as: "fuzz-page.xhtml")
            let imported = try WordTimings.read(Data(Workspace.pageSMIL.utf8), path: workspace.file("fuzz-page.smil"), rate: Self.rate)
            return "\(imported.words.count) words: " + imported.words.map(\.text).joined(separator: " ")
        case .lesson:
            let lesson = try Lesson.parse(data, path: workspace.file("lesson.json"), directory: workspace.url)
            // Parsing checks shape; references are checked per chain and activity, as playing does.
            var problems = 0
            for id in lesson.chains.keys {
                do throws(NarratorError) { _ = try lesson.clipIDs(reachableFrom: id) } catch { problems += 1 }
            }
            for id in lesson.activities.keys {
                do throws(NarratorError) { _ = try lesson.activity(id) } catch { problems += 1 }
            }
            // Each locale laid over the default as it loads, and what it lacks.
            for tag in lesson.locales.keys {
                do throws(NarratorError) { _ = try lesson.localized(to: tag + "-x1") } catch { problems += 1 }
                _ = lesson.untranslated(in: tag)
            }
            return "\(lesson.clips.count) clips, \(lesson.chains.count) chains, \(lesson.activities.count) activities, \(problems) bad references"
        case .spriteMap:
            let map = try SpriteMap.parse(data, path: workspace.file("sprites.json"))
            return "\(map.sprites.count) sprites, \(map.sources.count) sources"
        case .wav:
            let path = workspace.put(data, as: "input.wav")
            let decoder = SndFileDecoder()
            let info = try AudioFileInfo(path: path)
            let markers = try decoder.markers(path: path, sampleRate: Self.rate)
            let words = markers.isEmpty ? 0 : try decoder.markerWords(path: path, sampleRate: Self.rate).count
            let buffer = try decoder.decode(path: path, sampleRate: Self.rate)
            return "\(info.format), \(info.frames) frames, \(markers.count) markers, \(words) words, \(buffer.frames) frames at \(Self.rate) Hz"
        case .request:
            if let error = RequestDecoding.decode(data) { throw error }
            return "a valid request"
        default:
            preconditionFailure("\(rawValue) is a timing format")
        }
    }
}

/// The folder a fuzzing process works in: the files its targets read beside the input (SMIL's
/// pages, a lesson's sprite map) and the input itself where a parser takes a path. One per
/// process, so parallel jobs do not share files.
struct Workspace: Sendable {
    let url: URL

    /// Under `NARRATOR_FUZZ_WORKDIR` (set by `make fuzz`), else the temp dir.
    static func make() -> Workspace {
        let base = ProcessInfo.processInfo.environment["NARRATOR_FUZZ_WORKDIR"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("narrator-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let workspace = Workspace(url: url)
        workspace.put(Data(page(ids: ["p1"] + (1...7).map { "word\($0)" }).utf8), as: "page.xhtml")
        workspace.put(Data(page(ids: (1...7).map { String(format: "f%06d", $0) }).utf8), as: "sentence.xhtml")
        workspace.put(Data(#"{"src": ["sfx.webm", "sfx.wav"], "sprite": {"ding": [0, 450], "whoosh": [1000, 820, false]}}"#.utf8), as: "sprites.json")
        return workspace
    }

    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func put(_ data: Data, as name: String) -> String {
        let path = file(name)
        guard FileManager.default.createFile(atPath: path, contents: data) else {
            fatalError("narrator-fuzz: cannot write \(path)")
        }
        return path
    }

    func remove() { try? FileManager.default.removeItem(at: url) }

    /// An XHTML page with one span per id, its text the id's number of letters.
    private static func page(ids: [String]) -> String {
        let spans = ids.enumerated().map { "<span id=\"\($1)\">\(String(repeating: "a", count: $0 + 1))</span>" }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <html xmlns="http://www.w3.org/1999/xhtml"><body><p>\(spans.joined(separator: " "))</p></body></html>
            """
    }

    /// The SMIL `smil-page` reads its input page through: the ids of both fixture pages.
    static let pageSMIL: String = {
        let ids = ["p1"] + (1...7).map { "word\($0)" } + (1...7).map { String(format: "f%06d", $0) }
        let pars = ids.enumerated().map { index, id in
            "<par><text src=\"fuzz-page.xhtml#\(id)\"/><audio src=\"a.wav\" clipBegin=\"\(index)s\" clipEnd=\"\(index + 1)s\"/></par>"
        }
        return "<smil xmlns=\"http://www.w3.org/ns/SMIL\" version=\"3.0\"><body><seq>\(pars.joined())</seq></body></smil>"
    }()
}
