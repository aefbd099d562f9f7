import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import NarratorService

/// `narrator pack --web`: the browser build a web pack ships (narrator.wasm and its modules, and
/// the page: the daemon's `<narrator-player>` demo page, its element playing the pack), and the checks and steps only a web pack has. `Packer` does the rest as for
/// any pack: the lessons found, the layout mirrored, the audio converted (here to 32-bit float
/// WAV at each lesson's rate, the loudness baked in), the lessons rewritten.
struct WebBuild: Sendable {
    /// The folder holding narrator.wasm and its modules (narrator.js … narrator-local.js).
    let folder: String

    /// The manifest's name in DIR.
    static let manifestName = "narrator-web.json"

    /// --format, --quality, --shard and --finish do not combine with --web: one line naming the option.
    static func refuseOptions(format: String?, quality: Double?, shard: String?, finish: Bool) throws(NarratorError) {
        if format != nil {
            throw NarratorError(file: "--format", "does not apply to --web, which writes 32-bit float WAV at each lesson's rate")
        }
        if quality != nil { throw NarratorError(file: "--quality", "does not apply to --web, whose WAV files are lossless") }
        if shard != nil || finish {
            throw NarratorError(file: shard != nil ? "--shard" : "--finish", "not with --web: a web pack is written in one run")
        }
    }

    /// The build: `--wasm`, else $NARRATOR_WASM_DIR, else the .build-wasm of the repository
    /// the executable is in (walking up from its folder).
    static func find(option: String?, environment: [String: String]) throws(NarratorError) -> WebBuild {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var ancestors: [String] = []
        var folder = URL(fileURLWithPath: executable).deletingLastPathComponent().standardizedFileURL
        while true {
            ancestors.append(folder.path)
            let up = folder.deletingLastPathComponent().standardizedFileURL
            if up.path == folder.path { break }
            folder = up
        }
        let chosen =
            option ?? environment["NARRATOR_WASM_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ancestors.map { $0 + "/.build-wasm" }.first { isFile($0 + "/narrator.wasm") }
        let searched = chosen ?? ".build-wasm"
        guard let chosen, isFile(chosen + "/narrator.wasm"), isFile(chosen + "/narrator.js") else {
            throw NarratorError(file: searched, "narrator.wasm not found: build it with `make wasm` (or give --wasm)")
        }
        guard isFile(chosen + "/narrator-local.js") else {
            throw NarratorError(file: chosen, "has no narrator-local.js (a build older than the component's local transport): build it again with `make wasm`")
        }
        return WebBuild(folder: chosen)
    }

    /// Where the pack is written before it becomes `out` (beside it, on its file system).
    /// `out` must be new, an empty folder or an earlier web pack (which it replaces whole).
    func stagingFolder(for out: String) throws(NarratorError) -> String {
        if FileManager.default.fileExists(atPath: out) {
            guard isFolder(out) else { throw NarratorError(file: out, "is not a folder") }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
            guard names.isEmpty || names.contains(Self.manifestName) else {
                throw NarratorError(
                    file: out, "holds files and is not a web pack: --web writes its folder whole (give a new or empty folder, or an earlier web pack to replace)")
            }
        }
        let url = URL(fileURLWithPath: out)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).narrator-web-\(getpid())").path
    }

    static func createStaging(_ staging: String) throws(NarratorError) {
        try? FileManager.default.removeItem(atPath: staging)
        do {
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        } catch {
            throw NarratorError(file: staging, "cannot create the folder")
        }
    }

    /// A file two lessons need at two rates (audio or timings) is refused: the pack holds each
    /// file once, at its lesson's rate.
    static func checkRates(_ lessons: [Lesson], canonical: (String) -> String) throws(NarratorError) {
        var seen: [String: (rate: Int, lesson: String)] = [:]
        for lesson in lessons {
            for id in lesson.clips.keys.sorted() {
                let clip = lesson.clips[id]!
                for file in [clip.file] + (clip.timings.map { [$0] } ?? []) {
                    let key = canonical(file)
                    if let first = seen[key], first.rate != lesson.sampleRate {
                        throw NarratorError(
                            file: file,
                            "is needed at \(first.rate) Hz by \(first.lesson) and at \(lesson.sampleRate) Hz by \(lesson.path): a web pack holds each file once, at its lesson's rate (give the lessons one rate, or each its own copy)")
                    }
                    seen[key] = seen[key] ?? (lesson.sampleRate, lesson.path)
                }
            }
        }
    }

    /// A timing file as Narrator's JSON at `rate` (what the browser build reads), refused when
    /// reading it back would not give the same words and sentences (a WebVTT cue or SMIL
    /// sentence grouping the JSON format has no place for).
    static func narratorJSON(_ imported: TimingImport, path: String, rate: Int) throws(NarratorError) -> Data {
        let text = WordTimings.writeJSON(imported.words, rate: rate)
        let back = try WordTimings.readJSON(Array(text.utf8), path: path, rate: rate)
        guard back.words == imported.words else {
            throw NarratorError(file: path, "its words do not read back the same from Narrator's JSON at \(rate) Hz, so it cannot be packed for the web")
        }
        guard back.sentences == imported.sentences else {
            throw NarratorError(
                file: path,
                "its sentences come from its \(imported.format) grouping, which Narrator's JSON timing format cannot hold, so it cannot be packed for the web (convert it with `narrator timings convert` and check its sentences)")
        }
        return Data(text.utf8)
    }

    /// The page: the daemon's demo page of `<narrator-player>` (its menu of the library's
    /// programs around the element), its element given `pack="."`: it plays the folder it is in.
    static let pageElement = "<narrator-player id=\"player\">"

    /// Copies narrator.wasm, the build's modules (narrator.js, narrator-worklet.js,
    /// narrator-web.js, narrator-local.js: every .js beside narrator.wasm), the component
    /// (narrator-player.js) and its page (index.html) into `root`, beside what is packed there.
    func copy(into root: String) throws(NarratorError) {
        let modules = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".js") && isFile(folder + "/" + $0) }
        var files: [(from: String, to: String, bytes: Data)] = []
        for name in ["narrator.wasm"] + modules.sorted() {
            files.append((folder + "/" + name, name, try InputFile.read(path: folder + "/" + name, limit: 1 << 30)))
        }
        files.append(("narrator-player.js", "narrator-player.js", Data(try Page.read("narrator-player.js"))))
        let page = String(decoding: try Page.read("index.html"), as: UTF8.self)
        let parts = page.components(separatedBy: Self.pageElement)
        guard parts.count == 2 else {
            throw NarratorError(file: "index.html", "the component's demo page has no one \(Self.pageElement) to give the pack to")
        }
        files.append(("index.html", "index.html", Data(parts.joined(separator: "<narrator-player id=\"player\" pack=\".\">").utf8)))
        for file in files {
            let target = root + "/" + file.to
            guard !FileManager.default.fileExists(atPath: target) else {
                throw NarratorError(file: file.from, "and a packed file would both become \(file.to): rename one")
            }
            try AtomicFile.write(file.bytes, to: target)
        }
    }

    /// Makes the finished `staging` folder `out`: renamed into place (over an empty folder),
    /// or, over an earlier web pack, that one moved aside first and removed after.
    static func publish(_ staging: String, as out: String) throws(NarratorError) {
        if rename(staging, out) == 0 { return }
        let aside = staging + "-old"
        guard rename(out, aside) == 0 else {
            throw NarratorError(file: out, "cannot be replaced: \(String(cString: strerror(errno)))")
        }
        guard rename(staging, out) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = rename(aside, out)
            throw NarratorError(file: out, "cannot be replaced: \(reason)")
        }
        try? FileManager.default.removeItem(atPath: aside)
    }
}

/// A packed audio file as the manifest lists it.
struct WebAudio: Sendable {
    let rate: Int
    let channels: Int
    let frames: Int
    /// Its cue markers at `rate` (for the clips that read them; the WAV has none).
    let markers: [AudioMarker]
}

/// A web pack being written (under `root`, relative paths as the page hands them over), read
/// back as the browser build reads it: each lesson parsed by the engine by its path relative
/// to the pack, files under `root`, audio the written WAVs, markers from the manifest.
struct WebPack: Sendable {
    let root: String
    /// By written file's path (absolute, normalized).
    let audio: [String: WebAudio]

    /// The pack's files by their paths relative to it.
    struct Files: LessonFiles {
        let root: String
        func read(path: String, limit: Int) throws(NarratorError) -> [UInt8] {
            Array(try InputFile.read(path: Paths.join(root, path), limit: limit))
        }
        func exists(path: String) -> Bool { FileManager.default.fileExists(atPath: Paths.join(root, path)) }
    }

    /// Decodes as the page does: the WAV's floats (at the lesson's rate: no conversion),
    /// markers from the manifest, timings as Narrator's JSON, no loudness measured.
    struct Decoder: AudioDecoder {
        let root: String
        let audio: [String: WebAudio]
        func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer {
            try SndFileDecoder(streamAboveSeconds: nil).decode(path: Paths.join(root, path), sampleRate: sampleRate)
        }
        func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker] {
            audio[WebPack.normalized(Paths.join(root, path))]?.markers ?? []
        }
        func wordTimings(path: String, sampleRate: Int) throws(NarratorError) -> TimingImport {
            try WordTimings.readJSON(try Files(root: root).read(path: path, limit: InputFile.timingLimit), path: path, rate: sampleRate)
        }
        func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double? {
            throw NarratorError(file: "(the web pack)", "measures no loudness: its targets are baked in")
        }
    }

    /// The packed lesson at `path` (relative to the pack) as the engine parses it.
    func lesson(_ path: String) throws(NarratorError) -> Lesson {
        let files = Files(root: root)
        return try Lesson.parse(try files.read(path: path, limit: InputFile.documentLimit), path: path, folder: Paths.folder(of: path), files: files)
    }

    /// Every chain of `original` (its locale `tag`'s clips) gives the same cue sheet from the
    /// packed lesson at `path`, read as the browser build reads it.
    func check(_ original: Lesson, packed path: String, tag: String?, seed: UInt64) throws(NarratorError) {
        var packed = try lesson(path)
        if let tag { packed = try packed.localized(to: tag) }
        let decoder = Decoder(root: root, audio: audio)
        for chain in original.chains.keys.sorted() {
            let old = CueSheet.json(try original.schedule(chain: chain, seed: seed, decoder: SndFileDecoder()))
            let new = CueSheet.json(try packed.schedule(chain: chain, seed: seed, decoder: decoder))
            guard old == new else {
                throw NarratorError(
                    file: path, place: "chains.\(chain)", "its cue sheet\(tag.map { " (locale \($0))" } ?? "") in the web pack differs from the original's")
            }
        }
    }

    /// narrator-web.json: every lesson (its rate, chains, activities and their intro states, the
    /// paths of what it uses), every file the engine asks for by the path it asks for it by,
    /// and every audio file.
    func manifest(lessons paths: [String]) throws(NarratorError) -> Data {
        var lessons: [[String: Any]] = []
        var files: [[String: Any]] = []
        var audio: [[String: Any]] = []
        var listed: Set<String> = []
        func url(_ path: String) throws(NarratorError) -> String {
            let relative = Self.normalized(path)
            guard !relative.hasPrefix("/"), !relative.hasPrefix("../"), FileManager.default.fileExists(atPath: root + "/" + relative) else {
                throw NarratorError(file: path, "is not in the web pack, though a packed lesson names it")
            }
            return relative.addingPercentEncoding(withAllowedCharacters: Self.urlAllowed)!
        }
        for path in paths {
            let lesson = try lesson(path)
            // What this lesson's engine asks for (every locale's): the page fetches and decodes
            // only these for it.
            var uses: Set<String> = [path]
            if listed.insert(path).inserted { files.append(["path": path, "url": try url(path)]) }
            var variants = [lesson]
            for tag in lesson.locales.keys.sorted() { variants.append(try lesson.localized(to: tag)) }
            for variant in variants {
                for spec in variant.clips.values.sorted(by: { $0.id < $1.id }) {
                    uses.formUnion([spec.file, spec.timings, spec.spriteMap].compactMap { $0 })
                    for file in [spec.timings, spec.spriteMap].compactMap({ $0 }) where listed.insert(file).inserted {
                        files.append(["path": file, "url": try url(file)])
                    }
                    guard listed.insert(spec.file).inserted else { continue }
                    guard let written = self.audio[Self.normalized(Paths.join(root, spec.file))] else {
                        throw NarratorError(file: spec.file, "is not in the web pack, though \(path) names it")
                    }
                    var entry: [String: Any] = [
                        "path": spec.file, "url": try url(spec.file), "sampleRate": written.rate, "channels": written.channels, "frames": written.frames,
                    ]
                    if !written.markers.isEmpty { entry["markers"] = written.markers.map { ["label": $0.label, "frame": $0.frame] } }
                    audio.append(entry)
                }
            }
            // The daemon's `library` listing of the lesson (one writer of it), its pictures the
            // files in the pack: what <narrator-player pack> lists.
            var pictures: [String: String] = [:]
            for (name, picture) in lesson.pictures { pictures[name] = try url(picture.file) }
            var programs: [Any] = []
            for members in LessonLibrary.programs(of: lesson, named: path, pictureURL: { pictures[$0] ?? "" }) {
                var line: [UInt8] = []
                EventEncoder.appendObject(members, to: &line)
                guard let program = try? JSONSerialization.jsonObject(with: Data(line)) else {
                    throw NarratorError(file: path, "its programs cannot be listed as JSON")
                }
                programs.append(program)
            }
            lessons.append([
                "path": path, "sampleRate": lesson.sampleRate, "chains": lesson.chains.keys.sorted(),
                "activities": lesson.activities.keys.sorted().map { ["id": $0, "states": lesson.activities[$0]!.intro.keys.sorted()] },
                "uses": uses.sorted(), "programs": programs,
            ])
        }
        let top: [String: Any] = ["format": "narrator-web", "version": 1, "lessons": lessons, "files": files, "audio": audio]
        guard let data = try? JSONSerialization.data(withJSONObject: top, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            throw NarratorError(file: WebBuild.manifestName, "cannot be written as JSON")
        }
        return data + Data("\n".utf8)
    }

    /// What a URL path may hold as it is (no ':', which would read as a scheme, nor '%', '?', '#').
    static let urlAllowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/!$&'()*+,;=@")

    /// `path` with its "." and ".." names resolved as written (the pack's folders are real
    /// folders, no links); a relative path stays relative.
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for name in path.split(separator: "/", omittingEmptySubsequences: true) {
            if name == "." { continue }
            if name == "..", let last = parts.last, last != ".." {
                parts.removeLast()
            } else if name == "..", path.hasPrefix("/") {
                continue
            } else {
                parts.append(name)
            }
        }
        return (path.hasPrefix("/") ? "/" : "") + parts.joined(separator: "/")
    }
}

private func isFile(_ path: String) -> Bool {
    var folder: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && !folder.boolValue
}

private func isFolder(_ path: String) -> Bool {
    var folder: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
}

extension Packer {
    /// The cue markers of each file some clip reads them from, at the rate it is written at,
    /// read from its source as a lesson load reads them.
    static func webMarkers(jobs: [AudioJob], markerFiles: Set<String>) throws(NarratorError) -> [String: [AudioMarker]] {
        var markers: [String: [AudioMarker]] = [:]
        for job in jobs where markerFiles.contains(job.source) {
            guard let rate = job.rate else { continue }
            markers[job.source] = try SndFileDecoder().markers(path: job.source, sampleRate: rate)
        }
        return markers
    }

    /// What each converted file is (from its conversion, checked against the file written)
    /// and its cue markers.
    static func webAudio(
        jobs: [AudioJob], written: [(Int, Swift.Result<Transcoder.Result?, NarratorError>)], markers: [String: [AudioMarker]]
    ) throws(NarratorError) -> [String: WebAudio] {
        var audio: [String: WebAudio] = [:]
        for (index, outcome) in written {
            guard let result = try outcome.get() else { continue }
            let job = jobs[index]
            audio[WebPack.normalized(job.target)] = WebAudio(
                rate: result.rate, channels: result.channels, frames: result.frames, markers: markers[job.source] ?? [])
        }
        return audio
    }
}
