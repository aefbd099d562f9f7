// narrator.wasm's exports: the engine (Sources/NarratorEngine) compiled with Embedded Swift,
// with what the page hands it (files, decoded audio) and what it gives back (samples, the
// cue sheet, an error line). Built only by scripts/build-wasm.sh; never by SwiftPM.
//
// The page owns every buffer it passes (narrator_alloc/narrator_free); a result stays valid
// until the next call that makes one.

/// What the page handed over, and the last result.
final class Host {
    var files: [String: [UInt8]] = [:]
    var audio: [String: AudioBuffer] = [:]
    /// Cue markers of the audio files that have them, in frames at the lesson's rate.
    var markers: [String: [AudioMarker]] = [:]
    var samples: [Float] = []
    var channels = 0
    var text: [UInt8] = []
    /// The live playback's mixer (`narrator_play_*`), when one is open.
    var mixer: Mixer?
    var schedule: Schedule?
    /// Its gains (buses and master), kept across the plans of a live activity.
    var gains = MixGains()
    /// A live activity's planner and the taps so far.
    var planner: ActivityPlanner?
    var taps: [Tap] = []
    /// The playback speed (kept across playbacks, as the gains): 1 is the mix as it is; any
    /// other goes through `stage` (Sonic, pitch kept), which is made at the first such speed.
    var speed: Double = 1
    var stage: SpeedStage?
    /// Output frames handed out since the playback opened (through the stretcher, at speed).
    var rendered = 0
    /// Whether the open playback goes through `stage`.
    var stretching: Bool { speed != 1 && stage != nil }
}

nonisolated(unsafe) let host = Host()

/// The engine's files are the page's.
struct HostFiles: LessonFiles {
    func read(path: String, limit: Int) throws(NarratorError) -> [UInt8] {
        guard let bytes = host.files[path] else { throw NarratorError(file: path, "no such file") }
        guard bytes.count <= limit else { throw NarratorError(file: path, "over \(limit) bytes, more than a file of its kind may hold") }
        return bytes
    }

    func exists(path: String) -> Bool { host.files[path] != nil || host.audio[path] != nil }
}

/// Clips are the audio the page decoded (at the lesson's rate); timing files are Narrator's
/// JSON (`narrator pack --web` converts the other formats).
struct HostDecoder: AudioDecoder {
    func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer {
        guard let buffer = host.audio[path] else { throw NarratorError(file: path, "no such file") }
        return buffer
    }

    func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker] { host.markers[path] ?? [] }

    func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double? {
        throw NarratorError(
            file: "(the browser build)",
            "measures no loudness: pack the library with `narrator pack --normalize`, which bakes each lesson's \"loudness\" target into its files")
    }

    func wordTimings(path: String, sampleRate: Int) throws(NarratorError) -> TimingImport {
        try WordTimings.readJSON(try HostFiles().read(path: path, limit: 256 << 20), path: path, rate: sampleRate)
    }
}

func string(_ pointer: UnsafePointer<UInt8>, _ count: Int32) -> String {
    String(decoding: UnsafeBufferPointer(start: pointer, count: Int(max(count, 0))), as: UTF8.self)
}

@_cdecl("narrator_alloc")
public func narratorAlloc(_ bytes: Int32) -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer.allocate(byteCount: Int(max(bytes, 1)), alignment: 16)
}

@_cdecl("narrator_free")
public func narratorFree(_ pointer: UnsafeMutableRawPointer) { pointer.deallocate() }

/// Hands over a file (a lesson, a timing file, a sprite map) by the path lessons name it by.
@_cdecl("narrator_add_file")
public func narratorAddFile(_ path: UnsafePointer<UInt8>, _ pathLength: Int32, _ bytes: UnsafePointer<UInt8>, _ length: Int32) {
    host.files[string(path, pathLength)] = Array(UnsafeBufferPointer(start: bytes, count: Int(max(length, 0))))
}

/// Hands over a clip's audio file, decoded at the lesson's rate: `frames` × `channels`
/// interleaved floats. 0, or 1 for a channel count or length out of range.
@_cdecl("narrator_add_audio")
public func narratorAddAudio(_ path: UnsafePointer<UInt8>, _ pathLength: Int32, _ channels: Int32, _ samples: UnsafePointer<Float>, _ frames: Int32) -> Int32 {
    guard (1...32).contains(channels), frames >= 0 else { return 1 }
    let count = Int(channels) * Int(frames)
    host.audio[string(path, pathLength)] = AudioBuffer(channels: Int(channels), samples: Array(UnsafeBufferPointer(start: samples, count: count)))
    return 0
}

/// Hands over the cue markers of an audio file (`{"markers": [{"label", "frame"}]}`, frames at
/// the lesson's rate, in the file's order): what natively libsndfile reads from a WAV's `cue `
/// and `labl` chunks. 0, or 1 with the error line as the result's text.
@_cdecl("narrator_add_markers")
public func narratorAddMarkers(_ path: UnsafePointer<UInt8>, _ pathLength: Int32, _ json: UnsafePointer<UInt8>, _ length: Int32) -> Int32 {
    let file = string(path, pathLength)
    do throws(NarratorError) {
        let root = JSONCursor(
            try JSONValue.parse(Array(UnsafeBufferPointer(start: json, count: Int(max(length, 0)))), file: file), file: file)
        var markers: [AudioMarker] = []
        for item in try root.object(allowing: ["markers"]).required("markers", in: root).array() {
            let fields = try item.object(allowing: ["label", "frame"])
            markers.append(
                AudioMarker(
                    label: try fields.required("label", in: item).string(),
                    frame: try fields.required("frame", in: item).integer(in: 0...Frames.maxSession)))
        }
        host.markers[file] = markers
        return 0
    } catch {
        host.text = Array(error.description.utf8)
        return 1
    }
}

/// Forgets every file and clip handed over, and the last result.
@_cdecl("narrator_clear")
public func narratorClear() {
    host.files = [:]
    host.audio = [:]
    host.markers = [:]
    host.samples = []
    host.text = []
    narratorPlayClose()
}

/// The lesson at `lessonPath` (handed over), laid out: chain `id` (kind 0) or activity `id`
/// run with the scripted `taps` (kind 1: `SECONDS:ANSWER,…` as `--taps` takes them), or
/// answered live (kind 2, `narrator_play_tap`), from `state` (the intro's, as `--state`; empty
/// for none), pools
/// drawn with `seed`. The cue sheet is the result's text; 1 and an error line if it fails.
func layOut(
    _ lessonPath: String, kind: Int32, id: String, taps: String, state: String, seed: UInt64
) throws(NarratorError) -> (schedule: Schedule, planner: ActivityPlanner?) {
    let lesson = try Lesson.parse(
        try HostFiles().read(path: lessonPath, limit: JSONValue.documentLimit), path: lessonPath,
        folder: Paths.folder(of: lessonPath), files: HostFiles())
    if kind == 0 { return (try lesson.schedule(chain: id, seed: seed, decoder: HostDecoder()), nil) }
    // Kind 2: an activity answered live (`narrator_play_tap`), as `narrator play` without --taps.
    let live = kind == 2
    let scripted = live ? [] : try TapScript.parse(taps, rate: lesson.sampleRate)
    let planner = try ActivityPlanner(
        lesson: lesson, activity: id, live: live, taps: scripted, state: state.isEmpty ? nil : state, seed: seed, decoder: HostDecoder())
    return (try planner.plan(taps: scripted), live ? planner : nil)
}

/// `layOut` of the arguments an export takes; nil with the error line as the result's text.
func layOut(
    _ lessonPath: UnsafePointer<UInt8>, _ lessonPathLength: Int32, _ kind: Int32, _ id: UnsafePointer<UInt8>, _ idLength: Int32,
    _ taps: UnsafePointer<UInt8>, _ tapsLength: Int32, _ state: UnsafePointer<UInt8>, _ stateLength: Int32, _ seed: UInt64
) -> (schedule: Schedule, planner: ActivityPlanner?)? {
    do throws(NarratorError) {
        return try layOut(
            string(lessonPath, lessonPathLength), kind: kind, id: string(id, idLength), taps: string(taps, tapsLength),
            state: string(state, stateLength), seed: seed)
    } catch {
        host.text = Array(error.description.utf8)
        return nil
    }
}

/// Renders what `layOut` gives, whole: the samples are the result's (`narrator_result_*`),
/// the same floats `narrator render --format f32` writes. 0, or 1 with the error line.
@_cdecl("narrator_render")
public func narratorRender(
    _ lessonPath: UnsafePointer<UInt8>, _ lessonPathLength: Int32, _ kind: Int32, _ id: UnsafePointer<UInt8>, _ idLength: Int32,
    _ taps: UnsafePointer<UInt8>, _ tapsLength: Int32, _ state: UnsafePointer<UInt8>, _ stateLength: Int32, _ seed: UInt64,
    _ speed: Double
) -> Int32 {
    host.samples = []
    guard narratorSpeedCheck(speed) == 0 else { return 1 }
    guard speed == 1 || kind == 0 else {
        host.text = Array("render: a speed goes with a chain (as `narrator render --speed` with --chain)".utf8)
        return 1
    }
    guard let schedule = layOut(lessonPath, lessonPathLength, kind, id, idLength, taps, tapsLength, state, stateLength, seed)?.schedule else {
        return 1
    }
    let channels = schedule.channels
    var samples = [Float](repeating: 0, count: schedule.frames * channels)
    let mixer = Mixer(schedule: schedule)
    samples.withUnsafeMutableBufferPointer { all in
        while !mixer.finished {
            let start = mixer.position
            let frames = min(blockFrames, schedule.frames - start)
            mixer.render(into: UnsafeMutableBufferPointer(rebasing: all[(start * channels)..<((start + frames) * channels)]), frameCount: frames)
        }
    }
    if speed != 1 {
        // Stretched as `narrator render --speed` does (SoundFileWriter): the mix fed in the same
        // blocks, the output cut or padded to its exact length, the cues where the map puts them.
        do throws(NarratorError) {
            let stream = try StretchedStream(
                frames: schedule.frames, rate: schedule.sampleRate, channels: channels, speed: speed, blockFrames: blockFrames)
            var stretched: [Float] = []
            stretched.reserveCapacity(stream.total * channels)
            func keep(_ block: UnsafeBufferPointer<Float>, _ frames: Int) throws(NarratorError) { stretched.append(contentsOf: block) }
            try samples.withUnsafeBufferPointer { (all) throws(NarratorError) in
                var start = 0
                while start < schedule.frames {
                    let frames = min(blockFrames, schedule.frames - start)
                    try stream.feed(UnsafeBufferPointer(rebasing: all[(start * channels)..<((start + frames) * channels)]), write: keep)
                    start += frames
                }
            }
            try stream.finish(write: keep)
            samples = stretched
        } catch {
            host.text = Array(error.description.utf8)
            return 1
        }
    }
    host.samples = samples
    host.channels = channels
    host.text = Array((speed == 1 ? CueSheet.json(schedule) : CueSheet.json(schedule) { TimeStretcher.outputFrame(forInput: $0, speed: speed) }).utf8)
    return 0
}

/// The block the offline render mixes at, as `OfflineRenderer` natively.
let blockFrames = 4096

/// The most frames one `narrator_play_render` mixes: an AudioWorklet asks for 128.
let maxPlayFrames = 8192

/// The open playback's output block, allocated once at `narrator_play_open`.
nonisolated(unsafe) var playBlock = UnsafeMutableBufferPointer<Float>(start: nil, count: 0)

/// Opens a playback of what `layOut` gives, mixed block by block on the caller's clock (the
/// AudioWorklet's): 0 with the cue sheet as the result's text, or 1 with the error line. Any
/// playback open before is closed.
@_cdecl("narrator_play_open")
public func narratorPlayOpen(
    _ lessonPath: UnsafePointer<UInt8>, _ lessonPathLength: Int32, _ kind: Int32, _ id: UnsafePointer<UInt8>, _ idLength: Int32,
    _ taps: UnsafePointer<UInt8>, _ tapsLength: Int32, _ state: UnsafePointer<UInt8>, _ stateLength: Int32, _ seed: UInt64
) -> Int32 {
    narratorPlayClose()
    guard let (schedule, planner) = layOut(lessonPath, lessonPathLength, kind, id, idLength, taps, tapsLength, state, stateLength, seed) else {
        return 1
    }
    host.planner = planner
    host.schedule = schedule
    host.taps = []
    host.mixer = Mixer(schedule: schedule, maxBlockFrames: maxPlayFrames, gains: host.gains)
    host.channels = schedule.channels
    host.rendered = 0
    if host.speed != 1 {
        guard prepareStage(channels: schedule.channels, rate: schedule.sampleRate) else { return 1 }
        host.stage!.restart(speed: host.speed)
    }
    playBlock = .allocate(capacity: maxPlayFrames * schedule.channels)
    playBlock.initialize(repeating: 0)
    host.text = Array(CueSheet.json(schedule).utf8)
    return 0
}

/// Mixes the open playback's next `frames` (at most 8192; silence past its end) into its
/// block, and returns the block (`frames` × channels interleaved floats), nil when none is
/// open. Real-time code: it allocates nothing.
@_cdecl("narrator_play_render")
public func narratorPlayRender(_ frames: Int32) -> UnsafeMutablePointer<Float>? {
    guard let mixer = host.mixer, let schedule = host.schedule, frames > 0, Int(frames) <= maxPlayFrames else { return nil }
    let channels = schedule.channels
    let wanted = Int(frames)
    if host.stretching, let stage = host.stage {
        // Through the stretcher, as the live engine's OutputFeed: the mix fed a block at a time
        // (past the schedule's end the mixer mixes silence) until the output frames wanted wait;
        // the first frame fed after a restart begins the map's line at the output frame it fills.
        let stretcher = stage.stretcher
        var done = 0
        while done < wanted {
            let count = min(stage.feedFrames, wanted - done)
            while stretcher.availableFrames < count {
                if stage.origin == nil { stage.origin = (host.rendered + done, mixer.position) }
                mixer.render(into: stage.input, frameCount: stage.feedFrames)
                stretcher.feed(UnsafeBufferPointer(stage.input))
            }
            done += stretcher.take(into: UnsafeMutableBufferPointer(rebasing: playBlock[(done * channels)..<((done + count) * channels)]))
        }
    } else {
        let playing = max(0, min(wanted, schedule.frames - mixer.position))
        if playing > 0 { mixer.render(into: UnsafeMutableBufferPointer(rebasing: playBlock[0..<(playing * channels)]), frameCount: playing) }
        if playing < wanted { UnsafeMutableBufferPointer(rebasing: playBlock[(playing * channels)..<(wanted * channels)]).update(repeating: 0) }
    }
    host.rendered += wanted
    return playBlock.baseAddress
}

/// Makes the speed stage for `channels` at `rate` if there is none that fits (allocates, and
/// runs silence through Sonic to grow its buffers: done when a speed is asked for, never while
/// mixing). False with the error line as the result's text.
func prepareStage(channels: Int, rate: Int) -> Bool {
    if let stage = host.stage, stage.stretcher.channels == channels, stage.stretcher.rate == rate { return true }
    do throws(NarratorError) {
        host.stage = try SpeedStage(rate: rate, channels: channels)
        return true
    } catch {
        host.text = Array(error.description.utf8)
        return false
    }
}

/// The timeline frame heard at the open playback's next output frame (the mixer's position at
/// speed 1; behind it, by what the stretcher holds, at another speed).
func heardTimeline() -> Int {
    guard let mixer = host.mixer else { return 0 }
    guard host.stretching, let stage = host.stage else { return mixer.position }
    return stage.timeline(atOutput: host.rendered, orStartingAt: mixer.position)
}

/// Sets the speed of the open playback (and of those opened after it): 0.5 to 2, pitch kept.
/// Heard from the next output frame: what the stretcher holds is dropped and the mix goes back
/// to the frame heard there, where a new line of the map begins (the live engine's restart;
/// the worklet fades out before and in after, as natively). 0, or 1 with the error line (a
/// speed out of range: `TimeStretcher.check`'s line).
@_cdecl("narrator_play_speed")
public func narratorPlaySpeed(_ speed: Double) -> Int32 {
    guard narratorSpeedCheck(speed) == 0 else { return 1 }
    let heard = heardTimeline()
    if let schedule = host.schedule, speed != 1 {
        guard prepareStage(channels: schedule.channels, rate: schedule.sampleRate) else { return 1 }
    }
    host.speed = Double(Float(speed))
    if let mixer = host.mixer {
        if heard != mixer.position { mixer.seek(to: heard) }
        if host.stretching { host.stage!.restart(speed: host.speed) }
    }
    return 0
}

/// 0 for a speed the stretcher takes (0.5 to 2); 1 with `TimeStretcher.check`'s error line.
@_cdecl("narrator_speed_check")
public func narratorSpeedCheck(_ speed: Double) -> Int32 {
    do throws(NarratorError) {
        try TimeStretcher.check(speed)
        return 0
    } catch {
        host.text = Array(error.description.utf8)
        return 1
    }
}

/// Output frames the open playback has handed out since it opened.
@_cdecl("narrator_play_rendered")
public func narratorPlayRendered() -> Int32 { Int32(host.rendered) }

/// The output frame (counted as `narrator_play_rendered`) at which timeline frame `frame` of
/// the open playback is heard, by the map the stretcher runs on now (SpeedStage.outputFrame);
/// at speed 1, as many frames after the next one as `frame` is after the mixer's position.
@_cdecl("narrator_play_output_frame")
public func narratorPlayOutputFrame(_ frame: Int32) -> Int32 {
    guard let mixer = host.mixer else { return -1 }
    guard host.stretching, let stage = host.stage else { return Int32(host.rendered + Int(frame) - mixer.position) }
    return Int32(stage.outputFrame(ofTimeline: Int(frame), orStartingAt: host.rendered, mixer.position))
}

/// The timeline frame the open playback's next output frame plays (the next frame to mix, at
/// speed 1); −1 when none is open.
@_cdecl("narrator_play_position")
public func narratorPlayPosition() -> Int32 { host.mixer == nil ? -1 : Int32(heardTimeline()) }

/// The open playback's length in frames; −1 when none is open.
@_cdecl("narrator_play_frames")
public func narratorPlayFrames() -> Int32 { host.schedule.map { Int32($0.frames) } ?? -1 }

/// Moves the open playback to `frame` (clamped to its length): the output from there is the
/// render from that frame, ducking included. 0, or 1 when none is open.
@_cdecl("narrator_play_seek")
public func narratorPlaySeek(_ frame: Int32) -> Int32 {
    guard let mixer = host.mixer, let schedule = host.schedule else { return 1 }
    mixer.seek(to: min(max(Int(frame), 0), schedule.frames))
    if host.stretching { host.stage!.restart(speed: host.speed) }
    return 0
}

/// Sets a gain of the open playback and those after it: target 0 voice, 1 sfx, 2 music,
/// 3 master; `gain` a factor from 0 to MixGains.maximum. Heard from the next block, ramped
/// as natively. 0, or 1 for a target or gain out of range.
@_cdecl("narrator_play_gain")
public func narratorPlayGain(_ target: Int32, _ gain: Float) -> Int32 {
    let targets: [MixGains.Target] = [.voice, .sfx, .music, .master]
    guard targets.indices.contains(Int(target)), gain >= 0, gain <= MixGains.maximum else { return 1 }
    host.gains.set(targets[Int(target)], gain: gain)
    return 0
}

/// A tap on a live activity (opened with kind 2): `answer` (a choice, or `replay`, `close`)
/// takes effect at the next frame to mix, where the plan with this tap takes over from the
/// plan without it (the same up to that frame), its ducking continuing. 0 with the new cue
/// sheet as the result's text; 1 with the error line, or when no live activity is open.
@_cdecl("narrator_play_tap")
public func narratorPlayTap(_ answer: UnsafePointer<UInt8>, _ answerLength: Int32) -> Int32 {
    guard let planner = host.planner, let old = host.mixer else {
        host.text = Array("no live activity is open".utf8)
        return 1
    }
    // At speed, the tap is at the frame heard next, and what the stretcher holds is dropped.
    let frame = heardTimeline()
    var taps = host.taps
    taps.append(Tap(frame: frame, answer: string(answer, answerLength)))
    let schedule: Schedule
    do throws(NarratorError) {
        schedule = try planner.plan(taps: taps)
    } catch {
        host.text = Array(error.description.utf8)
        return 1
    }
    let next = Mixer(schedule: schedule, maxBlockFrames: maxPlayFrames, gains: host.gains)
    if host.stretching { host.stage!.restart(speed: host.speed) }
    next.seek(to: frame, continuing: old)
    host.taps = taps
    host.schedule = schedule
    host.mixer = next
    host.text = Array(CueSheet.json(schedule).utf8)
    return 0
}

/// Closes the open playback, if any.
@_cdecl("narrator_play_close")
public func narratorPlayClose() {
    host.mixer = nil
    host.schedule = nil
    host.planner = nil
    host.taps = []
    if playBlock.baseAddress != nil { playBlock.deallocate() }
    playBlock = UnsafeMutableBufferPointer(start: nil, count: 0)
}

@_cdecl("narrator_result_text")
public func narratorResultText() -> UnsafePointer<UInt8>? { host.text.withUnsafeBufferPointer { $0.baseAddress } }

@_cdecl("narrator_result_text_length")
public func narratorResultTextLength() -> Int32 { Int32(host.text.count) }

@_cdecl("narrator_result_samples")
public func narratorResultSamples() -> UnsafePointer<Float>? { host.samples.withUnsafeBufferPointer { $0.baseAddress } }

@_cdecl("narrator_result_frames")
public func narratorResultFrames() -> Int32 { host.channels == 0 ? 0 : Int32(host.samples.count / host.channels) }

@_cdecl("narrator_result_channels")
public func narratorResultChannels() -> Int32 { Int32(host.channels) }
