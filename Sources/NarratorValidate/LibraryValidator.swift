import Dispatch
import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// Checks the lessons, clips and timings of a library before it ships: every lesson under the
/// paths given, every audio file they use (read once, in parallel), every clip as the player
/// would prepare it.
public struct LibraryValidator: Sendable {
    /// Below this peak (−60 dBFS) a clip counts as silent.
    public static let silentPeak: Float = 0.001

    /// Where the report's paths are relative to.
    public let base: String
    /// How far, in LU, a clip's integrated loudness may be from the median of its lesson's
    /// clips on the same bus before it is a warning.
    public let loudnessTolerance: Double
    /// The locale whose clips are checked besides the default's; nil: every locale a lesson has.
    public let locale: String?

    /// The tolerance unless one is given: 3 LU, about what a listener notices between
    /// consecutive clips.
    public static let defaultLoudnessTolerance = 3.0
    /// The tolerances accepted.
    public static let loudnessTolerances: ClosedRange<Double> = 0.1...40
    /// True peak over this, in dBTP, is a warning (EBU R 128's maximum for production).
    public static let maxTruePeak = -1.0

    public init(
        base: String = FileManager.default.currentDirectoryPath, loudnessTolerance: Double = defaultLoudnessTolerance, locale: String? = nil
    ) {
        self.base = base
        self.loudnessTolerance = loudnessTolerance
        self.locale = locale
    }

    /// What a run found, and what it looked at.
    public struct Report: Sendable, Encodable {
        public struct LessonSummary: Sendable, Encodable {
            public let path: String
            public let clips: Int
            public let files: Int
            public let errors: Int
            public let warnings: Int
        }
        public let findings: [Finding]
        public let lessons: [LessonSummary]
        public let audioFiles: Int
        /// The batch's items (`validate --shard`): 1, what the paths themselves gave (a path
        /// that does not exist, JSON that does not parse); then each lesson; then each audio
        /// file found in the folders. Those of the shard validated, each with its findings.
        public let items: [Item]
        /// How many items the whole batch has, and a digest of their names (the parts of one
        /// batch must name the same files).
        public let itemCount: Int
        public let itemDigest: String

        /// One item of the batch, with what was found about it.
        public struct Item: Sendable {
            public enum Kind: String, Sendable { case paths, lesson, audio }
            public let ordinal: Int
            public let kind: Kind
            /// The lesson's or the audio file's path, as the findings name it; "" for `paths`.
            public let path: String
            public let findings: [Finding]
            /// A lesson's, when it loaded.
            public let summary: LessonSummary?
        }
        public var errors: Int { findings.filter { $0.severity == .error }.count }
        public var warnings: Int { findings.filter { $0.severity == .warning }.count }

        enum CodingKeys: String, CodingKey { case findings, lessons, audioFiles, errors, warnings }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(findings, forKey: .findings)
            try container.encode(lessons, forKey: .lessons)
            try container.encode(audioFiles, forKey: .audioFiles)
            try container.encode(errors, forKey: .errors)
            try container.encode(warnings, forKey: .warnings)
        }
    }

    /// Validates `paths` (lesson files, or folders searched for lessons and audio files).
    /// `progress` is called with (done, total) units of work, from any thread.
    /// `shard`: only the items of that worker are checked (every lesson is still read, to know
    /// which audio files are used); `Report.items` holds them.
    public func validate(paths: [String], shard: Shard = .whole, progress: @Sendable (Int, Int) -> Void = { _, _ in }) -> Report {
        var findings: [Finding] = []
        var found = collect(paths, into: &findings)
        if !shard.contains(1) { findings = [] }
        // A file named twice (a lesson given and under a folder given) is one item.
        var seen: Set<String> = []
        found.lessons = found.lessons.filter { seen.insert(canonical($0)).inserted }
        found.audio = found.audio.filter { seen.insert(canonical($0)).inserted }
        // The items: 1, the paths; 2…, the lessons; then the audio files found.
        var ordinals: [String: Int] = [:]
        for (offset, path) in found.lessons.enumerated() { ordinals[canonical(path)] = offset + 2 }
        let firstAudio = found.lessons.count + 2
        func isMine(lesson path: String) -> Bool { shard.contains(ordinals[canonical(path)] ?? 0) }

        // Lessons, parsed in parallel (every one: what the others use decides which audio
        // files are unused).
        let parsed = parallelMap(found.lessons) { path -> Result<Lesson, NarratorError> in
            Result { () throws(NarratorError) in try Lesson.load(path: path) }
        }
        var allLessons: [Lesson] = []
        var lessons: [Lesson] = []
        for (path, result) in zip(found.lessons, parsed) {
            switch result {
            case .success(let lesson):
                allLessons.append(lesson)
                if isMine(lesson: path) { lessons.append(lesson) }
            case .failure(let error):
                guard isMine(lesson: path) else { continue }
                let check: Finding.Check = FileManager.default.fileExists(atPath: error.file) ? .lesson : .missing
                findings.append(Finding(.error, check, lesson: display(path), file: display(error.file), place: error.place, error.message))
            }
        }

        // Each locale's own clips, as they load, beside the default's (LessonLocales).
        let localized = lessons.map(localizedClips)

        // Every audio file once, in parallel: the lessons' and those found in folders.
        var audioPaths: [String] = []
        var seenAudio: Set<String> = []
        let localizedFiles = localized.flatMap { $0.map { $0.0.clips[$0.1]!.file }.sorted() }
        let audioItems = found.audio.enumerated().filter { shard.contains(firstAudio + $0.offset) }.map(\.element)
        for path in lessons.flatMap({ $0.clips.values.map(\.file).sorted() }) + localizedFiles + audioItems {
            let key = canonical(path)
            if seenAudio.insert(key).inserted { audioPaths.append(key) }
        }
        let clipWork = lessons.flatMap { lesson in lesson.clips.keys.sorted().map { (lesson, $0) } } + localized.flatMap { $0 }
        let total = found.lessons.count + audioPaths.count + clipWork.count
        let done = Atomic<Int>(found.lessons.count)
        progress(found.lessons.count, total)
        @Sendable func tick() { progress(done.add(1, ordering: .relaxed).newValue, total) }

        let scanned = parallelMap(audioPaths) { path -> Result<AudioScan, NarratorError> in
            defer { tick() }
            return Result { () throws(NarratorError) in try AudioScan(path: path) }
        }
        var scans: [String: AudioScan] = [:]
        var unreadable: [String: NarratorError] = [:]
        for (path, result) in zip(audioPaths, scanned) {
            switch result {
            case .success(let scan): scans[path] = scan
            case .failure(let error): unreadable[path] = error
            }
        }

        // Every clip as the player would prepare it, in parallel.
        let allScans = scans, failures = unreadable
        var outputs: [String: Int] = [:]
        for lesson in lessons { outputs[lesson.path] = outputChannels(of: lesson, scans: scans) }
        let outputChannels = outputs
        let clipResults = parallelMap(clipWork) { work -> ClipResult in
            defer { tick() }
            return check(
                clip: work.1, of: work.0, scans: allScans, unreadable: failures, outputChannels: outputChannels[work.0.path] ?? 1)
        }
        findings += clipResults.flatMap(\.findings)
        findings += loudnessOutliers(clipResults.compactMap(\.level), lessons: lessons)

        // Per lesson: references, rates and channels, clips nothing plays.
        var used: Set<String> = []
        var maps: Set<String> = []
        for (lesson, own) in zip(lessons, localized) {
            findings += check(lesson: lesson, scans: scans, localized: own.map { $0.0.clips[$0.1]! })
            findings += untranslated(lesson)
        }
        for lesson in allLessons {
            for override in lesson.locales.values.flatMap(\.values) {
                if let file = override.file { used.insert(canonical(file)) }
            }
            for spec in lesson.clips.values {
                used.insert(canonical(spec.file))
                if let map = spec.spriteMap, maps.insert(map).inserted {
                    // Every alternative a sprite map lists (the browsers' formats too) is in use.
                    for source in (try? SpriteMap.load(path: map))?.sources ?? [] { used.insert(canonical(source)) }
                }
            }
        }
        // What a lesson that did not load uses is unknown: no file is called unused then.
        let allLoaded = allLessons.count == found.lessons.count
        for path in audioItems where !used.contains(canonical(path)) {
            if let error = unreadable[canonical(path)] {
                findings.append(Finding(.error, .unreadable, lesson: nil, file: display(path), error.message))
            }
            if allLoaded {
                findings.append(Finding(.warning, .unreferenced, lesson: nil, file: display(path), "no lesson uses this audio file"))
            }
        }

        findings = unique(findings)
        let summaries = lessons.map { lesson in
            let name = display(lesson.path)
            let mine = findings.filter { $0.lesson == name }
            return Report.LessonSummary(
                path: name, clips: lesson.clips.count, files: Set(lesson.clips.values.map { canonical($0.file) }).count,
                errors: mine.filter { $0.severity == .error }.count, warnings: mine.filter { $0.severity == .warning }.count)
        }
        // Each finding to its item: a lesson's to it, an audio file's to it, the rest to 1.
        var byLesson: [String: [Finding]] = [:]
        var byFile: [String: [Finding]] = [:]
        var general: [Finding] = []
        let audioNames = Set(audioItems.map(display))
        for finding in findings {
            if let lesson = finding.lesson {
                byLesson[lesson, default: []].append(finding)
            } else if audioNames.contains(finding.file) {
                byFile[finding.file, default: []].append(finding)
            } else {
                general.append(finding)
            }
        }
        let summaryOf = Dictionary(summaries.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        var items: [Report.Item] = []
        if shard.contains(1) { items.append(Report.Item(ordinal: 1, kind: .paths, path: "", findings: general, summary: nil)) }
        for (offset, path) in found.lessons.enumerated() where shard.contains(offset + 2) {
            let name = display(path)
            items.append(Report.Item(ordinal: offset + 2, kind: .lesson, path: name, findings: byLesson[name] ?? [], summary: summaryOf[name]))
        }
        for (offset, path) in found.audio.enumerated() where shard.contains(firstAudio + offset) {
            let name = display(path)
            items.append(Report.Item(ordinal: firstAudio + offset, kind: .audio, path: name, findings: byFile[name] ?? [], summary: nil))
        }
        let names = (found.lessons.map { "lesson " + display($0) } + found.audio.map { "audio " + display($0) }).joined(separator: "\n")
        return Report(
            findings: findings, lessons: summaries, audioFiles: audioPaths.count, items: items, itemCount: firstAudio - 1 + found.audio.count,
            itemDigest: BatchReport.digest(Data(names.utf8)))
    }

    // MARK: - Finding the files

    private struct Found {
        var lessons: [String] = []
        var audio: [String] = []
    }

    /// Lesson files and audio files under `paths`. A JSON file is a lesson when it is an object
    /// with `sampleRate` and `chains`; other JSON (timings, sprite maps) is left to the lessons
    /// that name it, unless it does not parse at all.
    private func collect(_ paths: [String], into findings: inout [Finding]) -> Found {
        var found = Found()
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                findings.append(Finding(.error, .missing, lesson: nil, file: display(path), FileProblem.describe(path: path)))
                continue
            }
            guard isDirectory.boolValue else {
                if AudioMarker.isAudioFile(path) {
                    found.audio.append(path)
                } else {
                    found.lessons.append(path)
                }
                continue
            }
            let root = URL(fileURLWithPath: path)
            guard let walker = FileManager.default.enumerator(
                at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
            else { continue }
            var files: [String] = []
            for case let url as URL in walker {
                if url.lastPathComponent.hasPrefix(".build") { walker.skipDescendants() }
                if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { files.append(url.path) }
            }
            for file in files.sorted() {
                if AudioMarker.isAudioFile(file) {
                    found.audio.append(file)
                } else if URL(fileURLWithPath: file).pathExtension.lowercased() == "json" {
                    switch lessonShape(file) {
                    case .lesson: found.lessons.append(file)
                    case .other: break
                    case .broken(let error):
                        findings.append(Finding(.error, .unreadable, lesson: nil, file: display(file), place: error.place, error.message))
                    }
                }
            }
        }
        return found
    }

    private enum Shape {
        case lesson, other
        case broken(NarratorError)
    }

    private func lessonShape(_ path: String) -> Shape {
        do {
            // Any .json under the folders: a large timing file is not a lesson, and is read
            // as one only to find out.
            let data = try InputFile.read(path: path, limit: InputFile.timingLimit)
            guard case .object(let members) = try JSONValue.parse(data, file: path) else { return .other }
            return members["sampleRate"] != nil && members["chains"] != nil ? .lesson : .other
        } catch {
            return .broken(error)
        }
    }

    // MARK: - Checks

    /// What the check of one clip found, and its loudness for the lesson-wide comparison.
    private struct ClipResult: Sendable {
        var findings: [Finding]
        var level: ClipLevel? = nil
    }

    /// A clip's integrated loudness, for comparing it with the other clips of its lesson and bus.
    private struct ClipLevel: Sendable {
        let lesson: String
        let id: String
        /// The clip's key path: `clips.ID`, or `locales.TAG.clips.ID`.
        let key: String
        let file: String
        let bus: Lesson.Bus
        let integrated: Double
    }

    /// A clip: its audio readable, prepared as the player would (region, timings, markers),
    /// its words against its transcript, its level and its loudness.
    private func check(
        clip id: String, of lesson: Lesson, scans: [String: AudioScan], unreadable: [String: NarratorError], outputChannels: Int
    ) -> ClipResult {
        var level: ClipLevel?
        let findings = check(clip: id, of: lesson, scans: scans, unreadable: unreadable, outputChannels: outputChannels, level: &level)
        return ClipResult(findings: findings, level: level)
    }

    /// The channels a lesson plays on: its own, or the widest of its audio files.
    private func outputChannels(of lesson: Lesson, scans: [String: AudioScan]) -> Int {
        lesson.channels ?? Set(lesson.clips.values.map { canonical($0.file) }).compactMap { scans[$0]?.channels }.max() ?? 1
    }

    private func check(
        clip id: String, of lesson: Lesson, scans: [String: AudioScan], unreadable: [String: NarratorError], outputChannels: Int,
        level: inout ClipLevel?
    ) -> [Finding] {
        let name = display(lesson.path)
        let spec = lesson.clips[id]!
        let file = canonical(spec.file)
        guard let scan = scans[file] else {
            let error = unreadable[file]
            let missing = !FileManager.default.fileExists(atPath: file)
            return [Finding(
                .error, missing ? .missing : .unreadable, lesson: name, file: display(spec.file), place: missing ? nil : error?.place,
                "\(error?.message ?? "unreadable") (\(spec.key))")]
        }
        if let timings = spec.timings, !FileManager.default.fileExists(atPath: timings) {
            return [Finding(.error, .missing, lesson: name, file: display(timings), "\(FileProblem.describe(path: timings)) (\(spec.key).timings)")]
        }

        var findings: [Finding] = []
        let prepared: PreparedClip
        do {
            let bank = try ClipBank.prepare(lesson: lesson, clipIDs: [id], decoder: ScannedDecoder(scans: scans))
            prepared = bank.clips[id]!
        } catch {
            let check: Finding.Check = error.file == lesson.path ? .lesson : .timings
            return [Finding(.error, check, lesson: name, file: display(error.file), place: error.place, error.message)]
        }

        // A music bed's loop against the clip as it plays, as simulate, render, play and the
        // daemon check it.
        for (music, place) in lesson.musicItemClips.contains(id) ? lesson.beds : [] where music.clip == id {
            do {
                _ = try MusicBed.loopFrames(of: music, clipFrames: prepared.audio.frames, rate: lesson.sampleRate, file: lesson.path, place: place)
            } catch {
                findings.append(Finding(.error, .lesson, lesson: name, file: display(error.file), place: error.place, error.message))
            }
        }

        // A transcript is checked against words the clip has (from timings or markers).
        if let transcript = spec.transcript, spec.timings != nil || spec.markers == .words {
            if let mismatch = Self.compare(words: prepared.words.map(\.text), transcript: transcript) {
                let source = spec.timings ?? spec.file
                findings.append(Finding(.error, .transcript, lesson: name, file: display(source), place: spec.key, mismatch))
            }
        }

        // The region the clip bank prepared, in the file's own frames.
        let first = Frames.convert(prepared.audio.offset, from: lesson.sampleRate, to: scan.sampleRate)
        let last = Frames.convert(prepared.audio.offset + prepared.audio.frames, from: lesson.sampleRate, to: scan.sampleRate)
        let range = first..<max(first, min(last, scan.frames))

        findings += alignment(of: prepared.words, clip: id, spec: spec, lesson: lesson, scan: scan, region: range)

        // Level, over the clip's region.
        let (peak, clips) = scan.level(of: range)
        let region = spec.start != nil || spec.end != nil ? " (its region)" : ""
        if !range.isEmpty, peak < Self.silentPeak {
            let level = peak > 0 ? String(format: "%.1f dBFS", 20 * log10(Double(peak))) : "digital silence"
            findings.append(Finding(.warning, .silent, lesson: name, file: display(spec.file), place: spec.key, "silent\(region): peak \(level)"))
        }
        if clips > 0 {
            findings.append(Finding(
                .warning, .clipped, lesson: name, file: display(spec.file), place: spec.key,
                "clipped\(region): \(Wording.count(clips, "run")) of \(AudioScan.clipRun)+ samples at full scale"))
        }

        // Loudness (EBU R 128) over the same region, as it plays on the lesson's channels: its
        // true peak (with the lesson's loudness gain, if its bus has a target), and its
        // integrated loudness for the comparison with the lesson's other clips.
        guard !range.isEmpty else { return findings }
        let loudness: Loudness
        do {
            loudness = try Loudness.measure(path: spec.file, region: range, measures: .truePeak, outputChannels: outputChannels)
        } catch {
            findings.append(Finding(
                .warning, .loudness, lesson: name, file: display(spec.file), place: spec.key, "cannot measure loudness: \(error.message)"))
            return findings
        }
        let bus = lesson.loudnessBus(of: id)
        let target = lesson.loudness[bus]
        let gain = target.map { loudness.gain(toReach: $0) } ?? 0
        if let peak = loudness.truePeak, peak + gain > Self.maxTruePeak {
            let played = String(format: "%+.1f dBTP", peak + gain)
            let how = gain == 0
                ? ""
                : " with the lesson's loudness gain of \(Loudness.decibels(gain)) dB (\(String(format: "%.1f", peak)) dBTP as recorded)"
            findings.append(Finding(
                .warning, .truePeak, lesson: name, file: display(spec.file), place: spec.key,
                "true peak \(played)\(region)\(how), over \(String(format: "%.0f", Self.maxTruePeak)) dBTP: it may clip once encoded or resampled"))
        }
        if let integrated = loudness.integrated {
            level = ClipLevel(lesson: lesson.path, id: id, key: spec.key, file: spec.file, bus: bus, integrated: integrated)
        }
        return findings
    }

    /// The clip's words (in lesson frames from the region's start) against the sound of the
    /// region (`AlignmentCheck`, at the file's own rate).
    private func alignment(
        of words: [WordTiming], clip id: String, spec: Lesson.ClipSpec, lesson: Lesson, scan: AudioScan, region: Range<Int>
    ) -> [Finding] {
        guard !words.isEmpty, !region.isEmpty, region.count <= Self.maxAlignmentSeconds * scan.sampleRate else { return [] }
        let name = display(lesson.path)
        let source = display(spec.timings ?? spec.file)
        let audio: (samples: [Float], channels: Int)
        do {
            audio = try AudioScan.samples(path: spec.file, region: region, maxFrames: region.count)
        } catch {
            return [Finding(.warning, .alignment, lesson: name, file: display(spec.file), place: spec.key, "cannot read its sound: \(error.message)")]
        }
        let inFile = words.map { word in
            WordTiming(
                index: word.index, text: word.text, startFrame: Frames.convert(word.startFrame, from: lesson.sampleRate, to: scan.sampleRate),
                endFrame: Frames.convert(word.endFrame, from: lesson.sampleRate, to: scan.sampleRate))
        }
        let issues = audio.samples.withUnsafeBufferPointer { samples in
            AlignmentCheck.check(inFile, samples: samples, channels: audio.channels, rate: scan.sampleRate)
        }
        return issues.map { issue in
            Finding(
                .warning, .alignment, lesson: name, file: source,
                place: "\(spec.key) word \(issue.word.index) '\(issue.word.text)'", issue.message)
        }
    }

    /// Clips longer than this (10 minutes: 230 MB of 48 kHz stereo samples, one clip a core)
    /// are not read for the alignment check.
    public static let maxAlignmentSeconds = 600

    /// Clips whose integrated loudness is more than `loudnessTolerance` from the median of
    /// their lesson's clips on the same bus. A bus with a loudness target is left out: its
    /// clips are brought to the target when they load.
    private func loudnessOutliers(_ levels: [ClipLevel], lessons: [Lesson]) -> [Finding] {
        var findings: [Finding] = []
        let targets = Dictionary(lessons.map { ($0.path, $0.loudness) }, uniquingKeysWith: { a, _ in a })
        let groups = Dictionary(grouping: levels) { "\($0.lesson)\u{0}\($0.bus.rawValue)" }
        for key in groups.keys.sorted() {
            let group = groups[key]!.sorted { $0.id < $1.id }
            guard let first = group.first, targets[first.lesson]?[first.bus] == nil else { continue }
            let sorted = group.map(\.integrated).sorted()
            let middle = sorted.count / 2
            let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
            for clip in group where abs(clip.integrated - median) > loudnessTolerance {
                let distance = clip.integrated - median
                findings.append(Finding(
                    .warning, .loudness, lesson: display(clip.lesson), file: display(clip.file), place: clip.key,
                    String(
                        format: "integrated loudness %.1f LUFS, %.1f LU %@ the median of the lesson's %d %@ clips (%.1f LUFS; tolerance %@ LU)",
                        clip.integrated, abs(distance), distance > 0 ? "above" : "below", group.count, clip.bus.rawValue, median,
                        JSONCursor.describe(loudnessTolerance))))
            }
        }
        return findings
    }

    /// A lesson as a whole: its chains' and activities' references, the rate and channels of
    /// its audio, and its clips that nothing plays.
    private func check(lesson: Lesson, scans: [String: AudioScan], localized: [Lesson.ClipSpec]) -> [Finding] {
        let name = display(lesson.path)
        var findings: [Finding] = []
        var referenced: Set<String> = []
        for chain in lesson.chains.keys.sorted() {
            do { referenced.formUnion(try lesson.clipIDs(reachableFrom: chain)) } catch {
                findings.append(Finding(.error, .lesson, lesson: name, file: name, place: error.place, error.message))
            }
        }
        // A music bed (the lesson's, an activity's) plays its clip.
        for (music, _) in lesson.beds { referenced.insert(music.clip) }
        do { _ = try lesson.bed(for: nil) } catch {
            findings.append(Finding(.error, .lesson, lesson: name, file: name, place: error.place, error.message))
        }
        for activity in lesson.activities.keys.sorted() {
            do { _ = try lesson.activity(activity) } catch {
                findings.append(Finding(.error, .lesson, lesson: name, file: name, place: error.place, error.message))
            }
        }
        for (id, spec) in lesson.clips.sorted(by: { $0.key < $1.key }) where !referenced.contains(id) && spec.spriteMap == nil {
            findings.append(Finding(.warning, .unreferenced, lesson: name, file: name, place: "clips.\(id)", "no chain plays this clip"))
        }
        findings += pictures(of: lesson, name: name)

        // One finding per file and lesson, however many clips cut it into regions.
        let files = Set((Array(lesson.clips.values) + localized).map { canonical($0.file) }).sorted()
        let outputChannels = outputChannels(of: lesson, scans: scans)
        for file in files {
            guard let scan = scans[file] else { continue }
            if scan.sampleRate != lesson.sampleRate {
                findings.append(Finding(
                    .warning, .sampleRate, lesson: name, file: display(file),
                    "\(scan.sampleRate) Hz in a \(lesson.sampleRate) Hz lesson: resampled each time it loads"))
            }
            if scan.lacksGaplessInfo {
                findings.append(Finding(
                    .warning, .gapless, lesson: name, file: display(file),
                    "an MP3 without gapless information (no Xing/LAME header): it plays its encoder's delay and padding, silence before and after the sound (re-encode with a LAME header, or use FLAC or Ogg)"))
            }
            if scan.channels != 1, scan.channels != outputChannels {
                let effect = outputChannels == 1
                    ? "averaged into one"
                    : scan.channels > outputChannels
                        ? "channels \(outputChannels + 1)–\(scan.channels) dropped"
                        : "outputs \(scan.channels + 1)–\(outputChannels) silent"
                findings.append(Finding(
                    .warning, .channels, lesson: name, file: display(file),
                    "\(scan.channels) channels in a \(outputChannels)-channel lesson: \(effect)"))
            }
        }
        return findings
    }

    /// A lesson's pictures: each file read as the daemon serves it (`PictureFile`: inside the
    /// lesson's folder where its path really leads, at most 2 MiB, SVG, PNG or WebP by its
    /// first bytes), and each name one the lesson uses.
    private func pictures(of lesson: Lesson, name: String) -> [Finding] {
        guard !lesson.pictures.isEmpty else { return [] }
        var findings: [Finding] = []
        let folder = RealPath.resolve(lesson.directory.path) ?? lesson.directory.path
        let used = lesson.pictureNames
        for (key, picture) in lesson.pictures.sorted(by: { $0.key < $1.key }) {
            if !used.contains(key) {
                findings.append(Finding(
                    .warning, .picture, lesson: name, file: name, place: picture.key,
                    "no choice, answer, tap sound or pulse target is named '\(key)': nothing shows this picture"))
            }
            switch PictureFile.load(path: picture.file, inside: folder) {
            case .success: break
            case .failure(let refusal):
                let missing = refusal.problem == .unusable && FileProblem.check(path: picture.file) == "no such file"
                findings.append(Finding(
                    .error, missing ? .missing : .picture, lesson: name, file: name, place: picture.key + ".file",
                    "'\(picture.written)': \(refusal.error.message)"))
            }
        }
        return findings
    }

    /// The locales checked for `lesson`: --locale, or every one it has.
    private func locales(of lesson: Lesson) -> [String] {
        locale.map { [$0] } ?? lesson.locales.keys.sorted()
    }

    /// The clips each locale of `lesson` changes, as that locale loads them: once each (a
    /// clip `es-MX` takes from `es` is checked as `es`'s).
    private func localizedClips(_ lesson: Lesson) -> [(Lesson, String)] {
        var work: [(Lesson, String)] = []
        var seen: Set<String> = []
        for tag in locales(of: lesson) {
            guard let localized = try? lesson.localized(to: tag) else { continue }
            for id in lesson.clips.keys.sorted() {
                guard let spec = localized.clips[id], spec != lesson.clips[id], seen.insert(spec.key).inserted else { continue }
                work.append((localized, id))
            }
        }
        return work
    }

    /// Per locale, the voice clips that still play the default's recording, timings or
    /// transcript: allowed (they fall back), but what a translation has left to do.
    private func untranslated(_ lesson: Lesson) -> [Finding] {
        let name = display(lesson.path)
        let fallback = lesson.locale.map { "the default (\($0))" } ?? "the default"
        var findings: [Finding] = []
        for tag in locales(of: lesson) {
            let chain = lesson.localeChain(for: tag)
            let missing = lesson.untranslated(in: tag)
            let place = chain.last.map { "locales.\($0)" }
            let via = chain.count > 1 ? " (through \(chain.reversed().joined(separator: ", ")))" : ""
            if !missing.files.isEmpty {
                findings.append(Finding(
                    .warning, .locale, lesson: name, file: name, place: place,
                    "'\(tag)'\(via) has no recording of \(Wording.count(missing.files.count, "voice clip")), which play \(fallback)'s: \(Lesson.list(missing.files))"))
            }
            if !missing.timings.isEmpty {
                findings.append(Finding(
                    .warning, .locale, lesson: name, file: name, place: place,
                    "'\(tag)'\(via) has no word timings for \(Wording.count(missing.timings.count, "clip")) it recorded (the default's have words): \(Lesson.list(missing.timings))"))
            }
            if !missing.transcripts.isEmpty {
                findings.append(Finding(
                    .warning, .locale, lesson: name, file: name, place: place,
                    "'\(tag)'\(via) has no transcript for \(Wording.count(missing.transcripts.count, "clip")) it recorded (the default's have one): \(Lesson.list(missing.transcripts))"))
            }
        }
        return findings
    }

    /// Nil when the words say what the transcript says (case, punctuation and curly quotes
    /// aside); else where they first differ.
    public static func compare(words: [String], transcript: String) -> String? {
        let said = words.flatMap(Wording.spokenWords)
        let written = Wording.spokenWords(transcript)
        guard said != written else { return nil }
        let index = zip(said, written).prefix(while: { $0 == $1 }).count
        if index == said.count {
            return "the timings end after \(Wording.count(said.count, "word")); the transcript goes on with '\(written[index])'"
        }
        if index == written.count {
            return "the timings have \(Wording.count(said.count - written.count, "word")) more than the transcript, from '\(said[index])' (word \(index))"
        }
        return "word \(index) of the transcript is '\(written[index])', the timings say '\(said[index])'"
    }

    // MARK: - Helpers

    private func canonical(_ path: String) -> String { canonicalPath(path) }

    /// Relative to `base` when under it.
    func display(_ path: String) -> String {
        let full = canonical(path)
        let prefix = base.hasSuffix("/") ? base : base + "/"
        return full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : full
    }

    private func unique(_ findings: [Finding]) -> [Finding] {
        var seen: Set<String> = []
        return findings.filter { seen.insert("\($0.lesson ?? "")|\($0.line)").inserted }
    }
}

/// Prepares clips from scans instead of samples: every file "streams" at its scanned length,
/// so the clip bank checks regions, timings and markers without decoding or resampling.
private struct ScannedDecoder: AudioDecoder {
    let scans: [String: AudioScan]

    func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer {
        throw NarratorError(file: path, "not decoded while validating")
    }

    func streamedFile(path: String, sampleRate: Int) throws(NarratorError) -> StreamedFile? {
        guard let scan = scans[canonicalPath(path)] else {
            throw NarratorError(file: path, "not scanned")
        }
        return StreamedFile(
            path: path, channels: scan.channels, frames: Frames.convert(scan.frames, from: scan.sampleRate, to: sampleRate))
    }

    /// Nothing is leveled while validating: loudness is measured by the validator itself.
    func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double? { nil }

    func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker] {
        guard let scan = scans[canonicalPath(path)] else { return [] }
        return try scan.markers.get().map { $0.converted(from: scan.sampleRate, to: sampleRate) }
    }
}

/// The same file however it was reached (`a/../b.wav` and `b.wav`).
func canonicalPath(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.path
}
