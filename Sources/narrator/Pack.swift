import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import Synchronization

/// The codecs `pack` converts to, by name.
enum PackFormat: String, ExpressibleByArgument, CaseIterable {
    case opus, vorbis, mp3, flac

    var type: AudioFileType {
        switch self {
        case .opus: .opus
        case .vorbis: .vorbis
        case .mp3: .mp3
        case .flac: .flac
        }
    }
}

struct Pack: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pack",
        abstract: "Convert the clips a library's lessons use to a compressed format (or, --web, to a folder the browser build plays), and write the lessons pointing at them.",
        discussion: """
            Every lesson (JSON with "sampleRate" and "chains") under LIBRARY, every audio file \
            its clips and sprites use, and the timing, sprite-map and picture files they name are written \
            under --to, laid out as they were (relative to the folder that holds them all), the \
            audio converted (in parallel) and the lessons pointing at the new files. Then it \
            verifies: each new file decodes to the frames of its source, and the cue sheet of \
            every chain of every lesson is the same before and after. Clips that take words or \
            pulses from their file's cue markers keep their file as it is (compressed formats \
            carry no markers). Opus takes 8, 12, 16, 24 or 48 kHz: a file at another rate is \
            converted to its lesson's rate (as loading the lesson would). Prints the sizes \
            before and after, per lesson and in total.

            --normalize bakes each lesson's "loudness" target in: every file gets the gain its \
            clips get when the lesson loads, and the packed lessons have no "loudness" key, so \
            they play as the originals. A lesson without a target keeps its files' levels. A \
            file whose clips would need different gains (regions or sprites leveled apart, two \
            lessons with different targets) is refused, as is a leveled file whose clips read \
            its cue markers (it is copied as it is).

            A batch over many machines: --shard K/N converts only this worker's audio files \
            (round robin, in the order the lessons name them) and writes a marker for its shard \
            under DIR/.narrator-pack once all of them are converted; then `pack --finish` (the \
            same library, --to and options) checks that the markers of shards 1/N … N/N are all \
            there and complete, and writes what depends on every file: the timing files, the \
            lessons, the cue-sheet check and the sizes, so that DIR is byte for byte what one \
            unsharded run writes (the markers are removed). --shard auto takes K and N from the \
            job array it runs in (Slurm, a Kubernetes Indexed Job; docs/cluster.md).

            --web writes a folder any static HTTP server can host, from which the browser \
            build (narrator.wasm, docs/pack-web.md) plays the lessons with no daemon: every \
            audio file as a 32-bit float WAV at its lesson's rate (decoded as a lesson load \
            decodes it, the loudness targets baked in as --normalize does), every timing file \
            as Narrator's JSON, narrator.wasm and narrator.js (from --wasm, else \
            $NARRATOR_WASM_DIR, else the repository's .build-wasm: `make wasm`), the page, and \
            narrator-web.json listing every lesson and file. DIR appears whole or not at all \
            (it must be new, empty or an earlier web pack, which it replaces). --format, \
            --quality, --shard and --finish do not apply to it; a file two lessons need at two \
            rates, or leveled apart, is refused.

            Examples:
              narrator pack Timings/lessons --to packed --format opus --quality 0.5
              narrator pack Timings/lessons --to packed --format flac --shard 1/1
              narrator pack Timings/lessons --to site --web
            """)

    @Argument(help: "The library: a folder searched for lessons.")
    var library: String

    @Option(help: "The folder to write to (created if missing; must not hold the library).")
    var to: String

    @Option(help: "opus, vorbis, mp3 or flac (not with --web).")
    var format: PackFormat?

    @Option(help: "For opus, vorbis and mp3: from 0 (smallest file) to 1 (best sound); default libsndfile's.")
    var quality: Double?

    @Flag(help: "Bake each lesson's \"loudness\" target into its packed files, and drop the key from the packed lessons.")
    var normalize = false

    @Option(help: "Seed for pool draws when comparing cue sheets before and after.")
    var seed: UInt64 = 1

    @Flag(inversion: .prefixedNo, help: "Draw a progress bar on stderr (default: when stderr is a terminal).")
    var progress: Bool?

    @Option(help: "Convert only this worker's audio files, K of N workers (e.g. 2/8), or auto: K and N from the Slurm array or Kubernetes Indexed Job it runs in; then `pack --finish`.")
    var shard: String?

    @Flag(help: "After every shard has run: check their markers and write the lessons, the timing files and the report.")
    var finish = false

    @Flag(help: "Write a folder the browser build plays from: 32-bit float WAV at each lesson's rate, narrator.wasm and narrator-web.json.")
    var web = false

    @Option(help: "With --web: the folder holding narrator.wasm and narrator.js (default: $NARRATOR_WASM_DIR, else the repository's .build-wasm).")
    var wasm: String?

    func validate() throws {
        guard shard == nil || !finish else { throw ValidationError("--finish runs once after the shards, without --shard") }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let environment = ProcessInfo.processInfo.environment
            let type: AudioFileType
            var build: WebBuild?
            if web {
                try WebBuild.refuseOptions(format: format?.rawValue, quality: quality, shard: shard, finish: finish)
                type = .wav
                build = try WebBuild.find(option: wasm, environment: environment)
            } else {
                guard let format else { throw NarratorError(file: "--format", "give opus, vorbis, mp3 or flac (or --web for a browser folder)") }
                guard wasm == nil else { throw NarratorError(file: "--wasm", "only with --web") }
                do throws(NarratorError) {
                    try format.type.check(format: .s16, quality: quality, path: "x.\(format.type.rawValue)")
                } catch {
                    throw NarratorError(file: "--quality", error.message)
                }
                type = format.type
            }
            let bar = ProgressBar(enabled: progress ?? (isatty(STDERR_FILENO) == 1), label: "packing")
            let part = try shard.map { option throws(NarratorError) in try Shard.resolve(option, environment: environment) }
            let report = try Packer(
                library: library, destination: to, type: type, quality: quality, seed: seed, normalize: normalize || web, shard: part, finish: finish,
                web: build)
                .run { done, total in bar.draw(done, total) }
            bar.finish()
            print(report)
        }
    }
}

/// What `narrator pack` does, step by step.
struct Packer {
    let library: String
    let destination: String
    let type: AudioFileType
    let quality: Double?
    let seed: UInt64
    var normalize = false
    /// Convert only this shard's audio files and write its marker (nil: the whole pack).
    var shard: Shard?
    /// Check every shard's marker, then write what depends on all of them.
    var finish = false
    /// `--web`: the browser build to ship; the audio as float WAV at each lesson's rate.
    var web: WebBuild? = nil

    /// Where the shards' markers are written, under --to (removed by `--finish`).
    static let markerFolder = ".narrator-pack"

    /// A file a lesson names, and as what: where the first lesson that names it does.
    struct Named {
        enum Kind: Equatable {
            case timings(rate: Int)
            case spriteMap
            case audio
            /// A lesson's picture, which must stay inside `folder` (its lesson's, real path).
            case picture(folder: String)
        }
        let lesson: String
        let place: String
        let kind: Kind

        /// The error for `path` that could not be read as `kind`: the lesson and its key,
        /// then the file and why.
        func refusal(_ path: String, _ error: NarratorError) -> NarratorError {
            let what =
                switch kind {
                case .timings: "a timing file"
                case .spriteMap: "a sprite map"
                case .audio: "audio"
                case .picture: "a picture"
                }
            let detail = (error.place.map { "\($0): " } ?? "") + error.message
            return NarratorError(file: lesson, place: place, "'\(path)' is not \(what), so it is not packed (\(detail))")
        }
    }

    /// An audio file to convert (or copy, for a clip that reads its markers).
    struct AudioJob: Sendable {
        let source: String
        let target: String
        let rate: Int?
        let copy: Bool
        /// The loudness gain baked in (`--normalize`), in dB.
        var gainDB: Double = 0
    }

    func run(progress: @escaping @Sendable (Int, Int) -> Void) throws(NarratorError) -> String {
        let (root, lessonPaths) = try Self.lessons(inLibrary: library)
        let lessons = try lessonPaths.map { path throws(NarratorError) in try Lesson.load(path: path) }

        // Every file the lessons name, and the folder that holds them all.
        var audio: [String: AudioJob] = [:]
        var others: [String: Named] = [:]
        var audioOrder: [String] = []
        // Where each audio file is first named, for an error about it.
        var audioNamed: [String: Named] = [:]
        // The files some clip reads cue markers from.
        var markerFiles: Set<String> = []
        // Each locale's clips too (LessonLocales): their files are packed beside the default's.
        var variants: [(lesson: Lesson, tag: String?)] = []
        for lesson in lessons {
            variants.append((lesson, nil))
            for tag in lesson.locales.keys.sorted() { variants.append((try lesson.localized(to: tag), tag)) }
        }
        for (lesson, tag) in variants {
            let original = tag == nil ? nil : lessons.first { $0.path == lesson.path }
            for id in lesson.clips.keys.sorted() {
                let clip = lesson.clips[id]!
                // The key that names it: the locale's when the locale changed the clip.
                let prefix = tag.map { tag in original?.clips[id] == clip ? "clips.\(id)" : "locales.\(tag).clips.\(id)" } ?? "clips.\(id)"
                let file = canonical(clip.file)
                if let timings = clip.timings, others[canonical(timings)] == nil {
                    others[canonical(timings)] = Named(lesson: lesson.path, place: prefix + ".timings", kind: .timings(rate: lesson.sampleRate))
                }
                if let map = clip.spriteMap, others[canonical(map)] == nil {
                    others[canonical(map)] = Named(lesson: lesson.path, place: prefix, kind: .spriteMap)
                }
                if clip.markers != nil { markerFiles.insert(file) }
                if audio[file] == nil {
                    audioOrder.append(file)
                    audioNamed[file] = Named(lesson: lesson.path, place: prefix + ".file", kind: .audio)
                }
                // (--web: every file is decoded, its markers go to the manifest.)
                let copy = web == nil && (clip.markers != nil || (audio[file]?.copy ?? false))
                audio[file] = AudioJob(source: file, target: "", rate: nil, copy: copy)
            }
        }
        // Pictures (`"pictures"`) are shipped with their lessons, read as pictures.
        for lesson in lessons {
            let folder = RealPath.resolve(lesson.directory.path) ?? lesson.directory.path
            for (name, picture) in lesson.pictures.sorted(by: { $0.key < $1.key }) where others[canonical(picture.file)] == nil {
                others[canonical(picture.file)] = Named(lesson: lesson.path, place: "pictures.\(name).file", kind: .picture(folder: folder))
            }
        }
        let everything = lessonPaths.map(canonical) + audioOrder + others.keys.sorted()
        let base = commonFolder(everything)
        let out = URL(fileURLWithPath: destination).standardizedFileURL.path
        // Outside the library (a second pack would take the first's lessons for its own) and
        // outside every folder the lessons' files are in, and the library outside it: compared
        // where the paths really lead (a link to the library, or to a folder holding it, is
        // the library).
        guard let realOut = RealPath.resolve(out), let realRoot = RealPath.resolve(root), let realBase = RealPath.resolve(base) else {
            throw NarratorError(file: destination, "a loop of symbolic links")
        }
        if RealPath.isInside(realOut, realRoot) || RealPath.isInside(realRoot, realOut) || RealPath.isInside(realBase, realOut)
            || realOut == realBase || everything.contains(where: { RealPath.isInside(RealPath.resolve($0) ?? $0, realOut) })
        {
            throw NarratorError(file: destination, "holds the library or its files (\(base)): choose a folder outside it")
        }
        // --web: written beside DIR, which it replaces whole at the end.
        let writeRoot = try web?.stagingFolder(for: out) ?? out
        var complete = false
        defer { if !complete, writeRoot != out { try? FileManager.default.removeItem(atPath: writeRoot) } }
        if web != nil { try WebBuild.checkRates(variants.map(\.lesson), canonical: canonical) }

        // Only what has been read as what its lesson says it is is packed, before anything is
        // written: each timing file parsed as timings (at its lesson's rate), each sprite map as
        // one (their bytes kept, and those are what is written), each audio file copied as it is
        // scanned as audio (the others are decoded when converted), each picture read as one
        // (inside its lesson's folder, at most 2 MiB, SVG, PNG or WebP by its first bytes).
        var read: [String: Data] = [:]
        var imports: [String: (timings: TimingImport, rate: Int)] = [:]
        for (path, named) in others.sorted(by: { $0.key < $1.key }) {
            do throws(NarratorError) {
                if case .picture(let folder) = named.kind {
                    read[path] = try PictureFile.read(path: path, inside: folder).bytes
                    continue
                }
                let limit = named.kind == .spriteMap ? InputFile.documentLimit : InputFile.timingLimit
                let bytes = try InputFile.read(path: path, limit: limit)
                switch named.kind {
                case .timings(let rate):
                    let imported = try WordTimings.read(bytes, path: path, rate: rate)
                    if web != nil { imports[path] = (imported, rate) }
                case .spriteMap: _ = try SpriteMap.parse(bytes, path: path)
                case .audio, .picture: break
                }
                read[path] = bytes
            } catch {
                throw named.refusal(path, error)
            }
        }
        // --web: the timing files become Narrator's JSON (what the browser build reads).
        for (path, imported) in imports.sorted(by: { $0.key < $1.key }) {
            read[path] = try WebBuild.narratorJSON(imported.timings, path: path, rate: imported.rate)
        }
        for file in audioOrder where audio[file]!.copy {
            do throws(NarratorError) {
                _ = try AudioScan(path: file)
            } catch {
                throw audioNamed[file]!.refusal(file, error)
            }
        }
        // (A library whose files have only "/" in common keeps their whole paths.)
        func mirrored(_ path: String) -> String { writeRoot + (base == "/" ? path : String(path.dropFirst(base.count))) }
        // --web: a timing file becomes Narrator's JSON, named so (what the native build reads it as).
        var otherTargets: [String: String] = [:]
        for (path, named) in others {
            if case .timings = named.kind, web != nil, URL(fileURLWithPath: path).pathExtension != "json" {
                otherTargets[path] = URL(fileURLWithPath: mirrored(path)).deletingPathExtension().appendingPathExtension("json").path
            } else {
                otherTargets[path] = mirrored(path)
            }
        }

        // Opus: a file at a rate Opus lacks goes to its lesson's rate.
        var lessonRate: [String: Int] = [:]
        for (lesson, _) in variants {
            for clip in lesson.clips.values where lessonRate[canonical(clip.file)] == nil {
                lessonRate[canonical(clip.file)] = lesson.sampleRate
            }
        }
        var jobs: [AudioJob] = []
        let gains = normalize ? try bakedGains(lessons, copied: Set(audio.values.filter(\.copy).map(\.source))) : [:]
        for file in audioOrder {
            let job = audio[file]!
            if job.copy {
                jobs.append(AudioJob(source: file, target: mirrored(file), rate: nil, copy: true))
                continue
            }
            let target = URL(fileURLWithPath: mirrored(file)).deletingPathExtension().appendingPathExtension(type.rawValue).path
            // --web: at its lesson's rate (the browser's AudioContext runs at it).
            var rate: Int? = web == nil ? nil : lessonRate[file]
            // Read only by the worker that converts it: every shard scanning every file was
            // most of a shard's overhead on a catalog (6 of 8 s for 10,000 clips).
            let converts = !finish && (shard ?? .whole).contains(jobs.count + 1)
            if type == .opus, converts {
                let scan = try AudioScan(path: file)
                if !AudioFileType.opusRates.contains(scan.sampleRate) {
                    let wanted = lessonRate[file]!
                    guard AudioFileType.opusRates.contains(wanted) else {
                        throw NarratorError(
                            file: file, "is \(scan.sampleRate) Hz and its lesson \(wanted) Hz, neither a rate Opus has (8, 12, 16, 24, 48 kHz): pack to vorbis, mp3 or flac")
                    }
                    rate = wanted
                }
            }
            jobs.append(AudioJob(source: file, target: target, rate: rate, copy: false, gainDB: gains[file] ?? 0))
        }
        var targets: [String: String] = [:]
        var sources: [String: String] = [:]
        // (The lessons too: --web's timings renamed .json must not land on one.)
        let lessonTargets = lessonPaths.map { (canonical($0), mirrored(canonical($0))) }
        for (source, target) in jobs.map({ ($0.source, $0.target) }) + otherTargets.sorted(by: { $0.key < $1.key }) + lessonTargets {
            if let other = sources[target] {
                throw NarratorError(file: source, "and \(other) would both become \(target.replacingOccurrences(of: writeRoot, with: out)): rename one")
            }
            sources[target] = source
            targets[source] = target
        }

        // The plan every worker makes alike: what each job converts, and how.
        let header = BatchReport.Header(
            report: "pack", manifestDigest: planDigest(jobs, base: base, out: out), items: jobs.count, shard: shard ?? .whole)
        let markers = out + "/" + Self.markerFolder
        if finish { try checkMarkers(markers, header: header, jobs: jobs) }

        // Folders, then the audio in parallel on every core.
        if writeRoot != out { try WebBuild.createStaging(writeRoot) }
        for path in jobs.map(\.target) + otherTargets.values + lessonTargets.map(\.1) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw NarratorError(file: folder, "cannot create the folder")
            }
        }
        let mine = finish ? [] : jobs.indices.filter { (shard ?? .whole).contains($0 + 1) }
        // --web: the cue markers of the files clips read them from, at the lesson's rate, for
        // the WAV's cue chunk and the manifest (the browser cannot read a cue chunk).
        let webMarkers = web == nil ? [:] : try Self.webMarkers(jobs: jobs, markerFiles: markerFiles)
        let total = mine.count + (shard == nil ? lessons.count : 0)
        let done = Atomic<Int>(0)
        progress(0, total)
        let results = parallelMap(mine.map { jobs[$0] }) { job -> Swift.Result<Transcoder.Result?, NarratorError> in
            defer { progress(done.add(1, ordering: .relaxed).newValue, total) }
            do throws(NarratorError) {
                if job.copy {
                    try AtomicFile.write(try InputFile.read(path: job.source, limit: 1 << 40), to: job.target)
                    // What was copied is audio (read afresh, as the converted files are).
                    _ = try AudioScan(path: job.target)
                    return .success(nil)
                }
                let result = try Transcoder.convert(
                    job.source, to: job.target, quality: quality, rate: job.rate, gain: job.gainDB == 0 ? 1 : Float(Decibels.factor(job.gainDB)),
                    format: web == nil ? .s16 : .f32, markers: webMarkers[job.source] ?? [])
                // Verified by decoding the new file afresh.
                let scan = try AudioScan(path: job.target)
                let expected = Frames.convert(result.sourceFrames, from: result.sourceRate, to: scan.sampleRate)
                guard scan.frames == expected, scan.sampleRate == result.rate else {
                    return .failure(NarratorError(
                        file: job.target, "decodes to \(scan.frames) frames at \(scan.sampleRate) Hz, its source \(job.source) to \(expected)"))
                }
                return .success(result)
            } catch {
                return .failure(error)
            }
        }
        for result in results { if case .failure(let error) = result { throw error } }
        if let shard {
            // This worker's part is done: its marker says which files, written whole or not at all.
            let lines = mine.map { itemLine($0 + 1, jobs[$0], base: base, out: out) }
            do {
                try FileManager.default.createDirectory(atPath: markers, withIntermediateDirectories: true)
            } catch {
                throw NarratorError(file: markers, "cannot create the folder")
            }
            try AtomicFile.write(BatchReport.text(header: header, items: lines), to: markers + "/shard-\(shard.index)-of-\(shard.count).jsonl")
            let copied = mine.filter { jobs[$0].copy }.count
            return "shard \(shard): \(Wording.count(mine.count - copied, "audio file")) of \(jobs.count) converted to \(type.name)"
                + (copied > 0 ? ", \(copied) copied" : "") + " under \(out); `narrator pack --finish` once every shard is done"
        }
        for (path, bytes) in read.sorted(by: { $0.key < $1.key }) {
            try AtomicFile.write(bytes, to: otherTargets[path]!)
        }

        // The lessons, pointing at the new files; then every chain's cue sheet compared, the
        // lessons in parallel (each loads its clips twice: the original and the packed).
        let newPaths = lessonTargets.map(\.1)
        for (path, newPath) in zip(lessonPaths, newPaths) {
            try rewrite(lesson: path, to: newPath, targets: targets, mirrored: mirrored)
        }
        let seed = seed
        // --web: the packed lessons are read back as the browser build reads them.
        let webPack: WebPack? =
            web == nil ? nil : WebPack(root: writeRoot, audio: try Self.webAudio(jobs: jobs, written: Array(zip(mine, results)), markers: webMarkers))
        let checks = parallelMap(Array(zip(lessons, newPaths))) { lesson, newPath -> NarratorError? in
            defer { progress(done.add(1, ordering: .relaxed).newValue, total) }
            do throws(NarratorError) {
                // The default's clips, then each locale's.
                for tag in [nil] + lesson.locales.keys.sorted() {
                    let original = try tag.map { tag throws(NarratorError) in try lesson.localized(to: tag) } ?? lesson
                    if let webPack {
                        try webPack.check(original, packed: String(newPath.dropFirst(writeRoot.count + 1)), tag: tag, seed: seed)
                        continue
                    }
                    let before = NarratorLesson(original)
                    let after = try NarratorLesson(path: newPath, locale: tag)
                    for chain in lesson.chains.keys.sorted() {
                        let old = try before.prepare(.chain(chain, repeats: 1), seed: seed).cueSheet()
                        let new = try after.prepare(.chain(chain, repeats: 1), seed: seed).cueSheet()
                        guard old == new else {
                            let locale = tag.map { " (locale \($0))" } ?? ""
                            return NarratorError(file: newPath, place: "chains.\(chain)", "its cue sheet\(locale) differs from the original's after packing")
                        }
                    }
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure = checks.compactMap({ $0 }).first { throw failure }
        if finish {
            do {
                try FileManager.default.removeItem(atPath: markers)
            } catch {
                throw NarratorError(file: markers, "cannot remove the shards' markers: \(error.localizedDescription)")
            }
        }
        let lines = zip(lessonPaths, lessons).map { path, lesson in
            let files = Set(lesson.clips.values.map { canonical($0.file) })
            return (
                String(path.dropFirst(root.count).drop { $0 == "/" }),
                files.map { size($0) }.reduce(0, +), files.map { size(targets[$0]!) }.reduce(0, +))
        }
        let allBefore = jobs.map { size($0.source) }.reduce(0, +)
        let allAfter = jobs.map { size($0.target) }.reduce(0, +)
        let width = max(6, lines.map(\.0.count).max() ?? 0)
        func row(_ name: String, _ a: String, _ b: String, _ c: String) -> String {
            name.padding(toLength: width, withPad: " ", startingAt: 0) + [a, b, c].map { String(repeating: " ", count: max(1, 12 - $0.count)) + $0 }.joined()
        }
        func percent(_ a: Int, _ b: Int) -> String { a == 0 ? "-" : String(format: "%.1f%%", Double(b) * 100 / Double(a)) }
        var text = [row("lesson", "before", "after", "after/before")]
        for (name, a, b) in lines { text.append(row(name, String(a), String(b), percent(a, b))) }
        text.append(row("total (each file once)", String(allBefore), String(allAfter), percent(allBefore, allAfter)))
        let copied = jobs.filter(\.copy).count
        text.append("")
        if let web, let webPack {
            try AtomicFile.write(try webPack.manifest(lessons: newPaths.map { String($0.dropFirst(writeRoot.count + 1)) }), to: writeRoot + "/" + WebBuild.manifestName)
            try web.copy(into: writeRoot)
            try WebBuild.publish(writeRoot, as: out)
            complete = true
            let leveled = lessons.filter { !$0.loudness.isEmpty }.count
            text.append(
                "\(Wording.count(lessons.count, "lesson")), \(Wording.count(jobs.count, "audio file")) written as 32-bit float WAV at their lessons' rates"
                    + " (the loudness targets of \(Wording.count(leveled, "lesson")) baked in), with narrator.wasm, its modules, the <narrator-player> page (index.html)"
                    + " and \(WebBuild.manifestName) under \(out); every chain's cues read back from it are unchanged")
            return text.joined(separator: "\n")
        }
        complete = true
        text.append(
            "\(Wording.count(lessons.count, "lesson")), \(Wording.count(jobs.count - copied, "audio file")) converted to \(type.name)"
                + (copied > 0 ? ", \(copied) copied (their clips read cue markers)" : "")
                + " under \(out); every file decodes to its source's frames, every chain's cues are unchanged")
        if normalize {
            let leveled = lessons.filter { !$0.loudness.isEmpty }.count
            let files = jobs.filter { $0.gainDB != 0 }.count
            text.append(
                "--normalize: the loudness targets of \(Wording.count(leveled, "lesson")) baked into \(Wording.count(files, "file"))"
                    + (leveled < lessons.count ? "; \(Wording.count(lessons.count - leveled, "lesson")) without a target kept as recorded" : ""))
        }
        return text.joined(separator: "\n")
    }

    /// The plan's identity: every job's source and target (relative to the library's folder
    /// and to --to) and how it is converted, with the options the lessons are checked with. The
    /// shards and `--finish` must agree on it (the same library, --to and options).
    func planDigest(_ jobs: [AudioJob], base: String, out: String) -> String {
        var text = "pack\t\(type.rawValue)\t\(quality.map { String($0) } ?? "-")\t\(normalize)\t\(seed)\n"
        for job in jobs {
            // Not the Opus rate: only the worker converting a file reads it.
            text += "\(Self.inside(job.source, base))\t\(Self.inside(job.target, out))\t\(job.copy)\t\(job.gainDB)\n"
        }
        return BatchReport.digest(Data(text.utf8))
    }

    /// `path` relative to `folder` when it is inside it.
    static func inside(_ path: String, _ folder: String) -> String {
        folder == "/" ? path : path.hasPrefix(folder + "/") ? String(path.dropFirst(folder.count + 1)) : path
    }

    /// A converted file's line in its shard's marker.
    func itemLine(_ ordinal: Int, _ job: AudioJob, base: String, out: String) -> String {
        BatchReport.itemLine(
            ordinal: ordinal,
            fields: "\"source\": \(EventEncoder.quoted(Self.inside(job.source, base))), \"target\": \(EventEncoder.quoted(Self.inside(job.target, out))), \"copy\": \(job.copy)")
    }

    /// `--finish`: the markers of shards 1/N … N/N are all there, each complete, all of this
    /// plan, and every file they name is there; else one error, and nothing is written.
    func checkMarkers(_ folder: String, header: BatchReport.Header, jobs: [AudioJob]) throws(NarratorError) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".jsonl") }.sorted()
        guard !names.isEmpty else {
            throw NarratorError(file: folder, "no shard has finished here (no marker): run `narrator pack … --shard K/N` for every K first")
        }
        var parts: [(path: String, data: Data)] = []
        for name in names { parts.append((folder + "/" + name, try InputFile.read(path: folder + "/" + name, limit: InputFile.documentLimit))) }
        let merged: String
        do throws(NarratorError) {
            merged = try BatchReport.merge(parts)
        } catch where error.file == "merge" {
            // Said of the markers, where they are.
            throw NarratorError(file: folder, error.message.replacingOccurrences(of: "the report of", with: "the marker of") + ": that worker has not finished")
        }
        let whole = BatchReport.Header(report: header.report, manifestDigest: header.manifestDigest, items: header.items, shard: .whole)
        guard merged.hasPrefix(whole.line + "\n") else {
            throw NarratorError(file: folder, "the shards packed another library, or with other options, than this --finish names (their plans differ)")
        }
        for job in jobs where !FileManager.default.fileExists(atPath: job.target) {
            throw NarratorError(file: job.target, "is missing, though its shard's marker says it was converted")
        }
    }

    /// The gain (dB) each audio file gets to bake its lessons' loudness targets in: the gain its
    /// clips get when their lesson loads (the clip bank measures them as they play), in the
    /// lesson's default clips and in every locale's (a translation's recordings are levelled
    /// like the default's: the packed lesson has no target left to level them by). Every clip
    /// of a file must want the same gain (0 for a clip on a bus without a target).
    func bakedGains(_ lessons: [Lesson], copied: Set<String>) throws(NarratorError) -> [String: Double] {
        struct Want { let gain: Double; let lesson: String; let clip: String }
        var variants: [Lesson] = []
        for lesson in lessons {
            variants.append(lesson)
            guard !lesson.loudness.isEmpty else { continue }
            for tag in lesson.locales.keys.sorted() { variants.append(try lesson.localized(to: tag)) }
        }
        let lessons = variants
        let banks = parallelMap(lessons) { lesson -> Swift.Result<ClipBank?, NarratorError> in
            guard !lesson.loudness.isEmpty else { return .success(nil) }
            return Swift.Result { () throws(NarratorError) in
                try ClipBank.prepare(lesson: lesson, clipIDs: lesson.clips.keys.sorted(), decoder: SndFileDecoder())
            }
        }
        var wants: [String: Want] = [:]
        for (lesson, result) in zip(lessons, banks) {
            let bank = try result.get()
            for id in lesson.clips.keys.sorted() {
                let file = canonical(lesson.clips[id]!.file)
                let gain = bank?.clips[id]?.loudnessGain ?? 0
                guard let first = wants[file] else {
                    wants[file] = Want(gain: gain, lesson: lesson.path, clip: id)
                    continue
                }
                guard first.gain == gain else {
                    let place = lesson.resolution.map { "\(lesson.path) (locale \($0.requested))" } ?? lesson.path
                    throw NarratorError(
                        file: file,
                        "its clips would need different loudness gains to be baked in: \(first.clip) in \(first.lesson) "
                            + "\(String(format: "%+.2f dB", first.gain)), \(id) in \(place) \(String(format: "%+.2f dB", gain)): "
                            + "pack without --normalize (a lesson levels its clips as it loads)")
                }
            }
        }
        for (file, want) in wants where want.gain != 0 && copied.contains(file) {
            throw NarratorError(
                file: file,
                "a clip reads its cue markers, so pack copies the file as it is and cannot bake in its loudness gain (\(String(format: "%+.2f dB", want.gain))): pack without --normalize")
        }
        return wants.mapValues(\.gain)
    }

    /// The library's folder (where its path really leads: a link to a library is that library)
    /// and its lessons, sorted; a path that is not a folder, or a folder with no lesson, is an
    /// error naming it.
    static func lessons(inLibrary library: String) throws(NarratorError) -> (root: String, paths: [String]) {
        let root = RealPath.resolve(library) ?? URL(fileURLWithPath: library).standardizedFileURL.path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isFolder), isFolder.boolValue else {
            throw NarratorError(file: library, "not a folder")
        }
        let paths = try findLessons(root)
        guard !paths.isEmpty else { throw NarratorError(file: library, "holds no lesson (JSON with \"sampleRate\" and \"chains\")") }
        return (root, paths)
    }

    /// Every .json under `root` whose top level is an object with "sampleRate" and "chains".
    static func findLessons(_ root: String) throws(NarratorError) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { throw NarratorError(file: root, "cannot be read") }
        var found: [String] = []
        while let name = walker.nextObject() as? String {
            guard name.lowercased().hasSuffix(".json") else { continue }
            let path = root + "/" + name
            guard let data = try? InputFile.read(path: path, limit: InputFile.documentLimit),
                case .object(let top)? = try? JSONValue.parse(data, file: path),
                top["sampleRate"] != nil, top["chains"] != nil
            else { continue }
            found.append(path)
        }
        return found.sorted()
    }

    /// Writes the lesson at `path` to `newPath` with its file names pointing at the packed
    /// files (relative to the new lesson, as the library is laid out the same way).
    func rewrite(lesson path: String, to newPath: String, targets: [String: String], mirrored: (String) -> String) throws(NarratorError) {
        let data = try InputFile.read(path: path, limit: InputFile.documentLimit)
        guard var top = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw NarratorError(file: path, "cannot be rewritten (not a JSON object)")
        }
        // Baked in: the packed files are at their targets already.
        if normalize { top["loudness"] = nil }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        let newFolder = URL(fileURLWithPath: newPath).deletingLastPathComponent().path
        func resolved(_ name: String) -> String {
            canonical(name.hasPrefix("/") ? name : folder.appendingPathComponent(name).path)
        }
        // (Timing files have targets too: --web renames them .json.)
        func pointing(_ name: String) -> String {
            let source = resolved(name)
            return relative(targets[source] ?? mirrored(source), from: newFolder)
        }
        func repointed(_ clips: [String: Any]) -> [String: Any] {
            var clips = clips
            for (id, value) in clips {
                guard var clip = value as? [String: Any] else { continue }
                if let file = clip["file"] as? String { clip["file"] = pointing(file) }
                if let timings = clip["timings"] as? String { clip["timings"] = pointing(timings) }
                clips[id] = clip
            }
            return clips
        }
        if let clips = top["clips"] as? [String: Any] { top["clips"] = repointed(clips) }
        if var pictures = top["pictures"] as? [String: Any] {
            for (name, value) in pictures {
                guard var picture = value as? [String: Any], let file = picture["file"] as? String else { continue }
                picture["file"] = pointing(file)
                pictures[name] = picture
            }
            top["pictures"] = pictures
        }
        if var locales = top["locales"] as? [String: Any] {
            for (tag, value) in locales {
                guard var locale = value as? [String: Any], let clips = locale["clips"] as? [String: Any] else { continue }
                locale["clips"] = repointed(clips)
                locales[tag] = locale
            }
            top["locales"] = locales
        }
        if var sprites = top["sprites"] as? [String: Any] {
            for (prefix, value) in sprites {
                guard var sprite = value as? [String: Any], let map = sprite["map"] as? String else { continue }
                let audioFile: String
                if let file = sprite["file"] as? String {
                    audioFile = resolved(file)
                } else {
                    audioFile = canonical(try SpriteMap.load(path: resolved(map)).audioFile())
                }
                sprite["map"] = pointing(map)
                sprite["file"] = relative(targets[audioFile] ?? mirrored(audioFile), from: newFolder)
                sprites[prefix] = sprite
            }
            top["sprites"] = sprites
        }
        guard let output = try? JSONSerialization.data(withJSONObject: top, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            throw NarratorError(file: newPath, "cannot be written as JSON")
        }
        try AtomicFile.write(output + Data("\n".utf8), to: newPath)
    }
}

private func canonical(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }

private func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }

/// The deepest folder holding every path.
private func commonFolder(_ paths: [String]) -> String {
    var common = URL(fileURLWithPath: paths[0]).deletingLastPathComponent().pathComponents
    for path in paths.dropFirst() {
        let parts = URL(fileURLWithPath: path).deletingLastPathComponent().pathComponents
        var n = 0
        while n < common.count, n < parts.count, common[n] == parts[n] { n += 1 }
        common = Array(common.prefix(n))
    }
    let joined = common.dropFirst().joined(separator: "/")
    return "/" + joined
}

/// `path` relative to the folder `from` (both absolute).
private func relative(_ path: String, from folder: String) -> String {
    let a = URL(fileURLWithPath: path).pathComponents
    let b = URL(fileURLWithPath: folder).pathComponents
    var n = 0
    while n < a.count, n < b.count, a[n] == b[n] { n += 1 }
    return (Array(repeating: "..", count: b.count - n) + a[n...]).joined(separator: "/")
}
