/// Renders a schedule into interleaved float samples, block after block. The same code
/// serves offline rendering and live playback: after `init`, `render` never allocates, locks
/// or touches a file. Voices held in memory are read through plain pointers; streamed voices
/// are taken from their lane's ring, which someone else fills (`StreamFeeder`).
public final class Mixer {
    public let schedule: Schedule
    public let channels: Int
    /// The next frame `render` will produce.
    public private(set) var position = 0
    /// Samples a streamed voice needed that its ring did not yet hold (played as silence).
    public private(set) var streamShortfall = 0
    /// The frames of the schedule's cues, in order: what live playback walks while it renders
    /// (a plain buffer, read without touching the cues' strings).
    public var cueFrames: UnsafeBufferPointer<Int> { UnsafeBufferPointer(rebasing: cueFrameStorage[0..<cueCount]) }
    private let cueFrameStorage: UnsafeMutableBufferPointer<Int>
    private let cueCount: Int

    /// A voice reduced to what the real-time loop needs.
    private struct Slot {
        let start: Int
        let end: Int
        let channels: Int
        /// The voice's first frame in memory, or nil for a streamed voice.
        let samples: UnsafePointer<Float>?
        /// The voice's ring and lane, for a streamed voice.
        let ring: Unmanaged<SampleRing>?
        let lane: Int
        let bus: Lesson.Bus
        /// A music bed's index in `shapes`, −1 for a plain voice (in the padding after `bus`:
        /// a slot stays 56 bytes).
        var shape: Int32 = -1
    }

    /// A music bed's shape (`VoiceShape`) in frames of its clip (`loopStart..<loopEnd`, empty
    /// for no loop; `clipFrames`) and of the timeline (the fades: `fadeInEnd`, `fadeOutStart`).
    private struct Shape {
        let clipFrames: Int
        let loopStart: Int
        let loopEnd: Int
        let fadeInEnd: Int
        let fadeOutStart: Int
    }

    private let shapes: UnsafeMutableBufferPointer<Shape>

    private let slots: UnsafeMutableBufferPointer<Slot>
    private var nextSlot = 0
    /// Indices of slots that started and have not ended.
    private let active: UnsafeMutableBufferPointer<Int>
    private var activeCount = 0
    /// Kept alive for the slots' pointers.
    private let lanes: StreamLanes?
    /// Per lane: samples owed by a ring that ran short, dropped as soon as they arrive so the
    /// voice stays on its timeline.
    private let owed: UnsafeMutableBufferPointer<Int>
    /// Per lane: the timeline frame its ring's next sample is for (past what is owed); the
    /// refill asked of its feeder and not yet acknowledged (0: none); whether, after a refill,
    /// its ring is still filling (`streamsReady`).
    private let laneFrame: UnsafeMutableBufferPointer<Int>
    private let laneWaiting: UnsafeMutableBufferPointer<Int>
    private let laneFilling: UnsafeMutableBufferPointer<Bool>

    /// Ducking: music is mixed into `musicBlock`, `voiced` marks the block's frames that a
    /// voice-bus clip covers, and `duck` (in units of 1 / (attack × release), so that both ramps
    /// step by whole numbers) says how far down the music is.
    private let ducking: Lesson.Ducking?
    private let maxBlockFrames: Int
    private let musicBlock: UnsafeMutableBufferPointer<Float>
    private let voiced: UnsafeMutableBufferPointer<Bool>
    private var duck = 0

    /// Live gains (nil offline: every bus at 1, the sums exactly as sox makes them). While a
    /// gain is not 1 or moves, each bus is mixed into its own block (`voiceBlock`, `sfxBlock`,
    /// `musicBlock`) and the blocks are summed under their gains, which follow their targets
    /// by at most `1 / rampFrames` a frame.
    public let gains: MixGains?
    private let voiceBlock: UnsafeMutableBufferPointer<Float>
    private let sfxBlock: UnsafeMutableBufferPointer<Float>
    /// The gains as they stand: voice, sfx, music, master.
    private var current: (Float, Float, Float, Float) = (1, 1, 1, 1)
    private let rampStep: Float
    /// A shaped voice's frames while they fade, before their gains (allocated when one is).
    private let fadeBlock: UnsafeMutableBufferPointer<Float>

    /// `maxBlockFrames` bounds `render`'s `frameCount` when the schedule ducks music or
    /// `gains` are given. The gains start where they stand, with no ramp.
    public init(schedule: Schedule, lanes: StreamLanes? = nil, maxBlockFrames: Int = 8192, gains: MixGains? = nil) {
        self.schedule = schedule
        self.channels = schedule.channels
        self.lanes = lanes
        ducking = schedule.ducking
        self.maxBlockFrames = maxBlockFrames
        self.gains = gains
        let scratch = schedule.ducking == nil && gains == nil ? 1 : maxBlockFrames
        musicBlock = .allocate(capacity: scratch * schedule.channels)
        voiced = .allocate(capacity: scratch)
        let busScratch = gains == nil ? 1 : maxBlockFrames
        voiceBlock = .allocate(capacity: busScratch * schedule.channels)
        sfxBlock = .allocate(capacity: busScratch * schedule.channels)
        let shaped = schedule.voices.count { $0.shape != nil }
        fadeBlock = .allocate(capacity: (shaped > 0 ? maxBlockFrames : 1) * schedule.channels)
        shapes = .allocate(capacity: max(shaped, 1))
        var shapeCount = 0
        // 10 ms from silence to full level.
        rampStep = 1 / Float(max(1, schedule.sampleRate / 100))
        slots = .allocate(capacity: max(schedule.voices.count, 1))
        active = .allocate(capacity: max(schedule.voices.count, 1))
        owed = .allocate(capacity: max(lanes?.rings.count ?? 0, 1))
        owed.initialize(repeating: 0)
        let laneCount = max(lanes?.rings.count ?? 0, 1)
        laneFrame = .allocate(capacity: laneCount)
        laneFrame.initialize(repeating: 0)
        laneWaiting = .allocate(capacity: laneCount)
        laneWaiting.initialize(repeating: 0)
        laneFilling = .allocate(capacity: laneCount)
        laneFilling.initialize(repeating: false)
        cueCount = schedule.cues.count
        cueFrameStorage = .allocate(capacity: max(cueCount, 1))
        for (index, cue) in schedule.cues.enumerated() { cueFrameStorage[index] = cue.frame }
        for (index, voice) in schedule.voices.enumerated() {
            let audio = voice.audio
            let samples: UnsafePointer<Float>?
            var ring: Unmanaged<SampleRing>?
            var lane = -1
            switch audio.source {
            case .memory(let buffer):
                samples = buffer.storage.baseAddress! + audio.offset * audio.channels
            case .stream:
                guard let lanes, lanes.laneOfVoice.indices.contains(index), lanes.laneOfVoice[index] >= 0 else {
                    preconditionFailure("a streamed voice needs the schedule's StreamLanes")
                }
                samples = nil
                lane = lanes.laneOfVoice[index]
                ring = Unmanaged.passUnretained(lanes.rings[lane])
            }
            var slot = Slot(start: voice.startFrame, end: voice.endFrame, channels: audio.channels, samples: samples, ring: ring, lane: lane, bus: voice.bus)
            if let shape = voice.shape {
                precondition(samples != nil, "a music bed plays from memory")
                precondition((shape.loop?.upperBound ?? shape.frames) <= audio.frames, "a bed's loop lies within its clip")
                (shapes.baseAddress! + shapeCount).initialize(
                    to: Shape(
                        clipFrames: audio.frames, loopStart: shape.loop?.lowerBound ?? 0, loopEnd: shape.loop?.upperBound ?? 0,
                        fadeInEnd: voice.startFrame + shape.fadeInFrames, fadeOutStart: voice.endFrame - shape.fadeOutFrames))
                slot.shape = Int32(shapeCount)
                shapeCount += 1
            }
            (slots.baseAddress! + index).initialize(to: slot)
        }
        settleGains()
    }

    deinit {
        cueFrameStorage.deallocate()
        slots.deallocate()
        active.deallocate()
        owed.deallocate()
        laneFrame.deallocate()
        laneWaiting.deallocate()
        laneFilling.deallocate()
        musicBlock.deallocate()
        voiced.deallocate()
        voiceBlock.deallocate()
        sfxBlock.deallocate()
        fadeBlock.deallocate()
        shapes.deallocate()
    }

    /// Moves to `frame` of the schedule: the voices playing there resume mid-way, and the music's
    /// ducking stands where the offline render has it at that frame (`duckLevel(before:)`), so
    /// that after any jump the output is the render from that frame. For a plan that replaces
    /// another at that frame (live activities), `continuing` hands over the old plan's ducking
    /// instead: the music goes on as it was heard. No allocation. Streamed voices follow at
    /// the next `streamsReady` or `render`: their rings step back over their history, skip
    /// ahead, or are refilled from `frame` by their feeder.
    public func seek(to frame: Int, continuing previous: Mixer? = nil) {
        position = frame
        activeCount = 0
        nextSlot = 0
        let voiceCount = schedule.voices.count
        while nextSlot < voiceCount, slots[nextSlot].start < frame {
            if slots[nextSlot].end > frame {
                active[activeCount] = nextSlot
                activeCount += 1
            }
            nextSlot += 1
        }
        if let previous {
            duck = previous.duck
            current = previous.current
        } else {
            duck = duckLevel(before: frame)
        }
    }

    /// The music's ducking as the render from frame 0 leaves it before `frame`: the envelope
    /// run over the voice bus's intervals (merged where they overlap) rather than frame by
    /// frame, since within a run of voiced or unvoiced frames it moves in a straight line to its
    /// bound. O(voices), no allocation.
    func duckLevel(before frame: Int) -> Int {
        guard let ducking else { return 0 }
        var state = DuckRun(full: ducking.attackFrames * ducking.releaseFrames, attack: ducking.attackFrames, release: ducking.releaseFrames, frame: frame)
        var runStart = 0
        var runEnd = -1
        for index in 0..<schedule.voices.count {
            let slot = slots[index]
            guard slot.start < frame else { break }
            guard slot.bus == .voice, slot.end > slot.start else { continue }
            if runEnd >= 0 && slot.start <= runEnd {
                runEnd = max(runEnd, slot.end)
            } else {
                if runEnd >= 0 { state.voiced(runStart, runEnd) }
                runStart = slot.start
                runEnd = slot.end
            }
        }
        if runEnd >= 0 { state.voiced(runStart, runEnd) }
        state.run(frame - state.position, up: false)
        return state.duck
    }

    /// The envelope's walk for `duckLevel` (a struct, not closures over local variables: those
    /// would be boxed on the heap, and a seek runs on the real-time thread).
    private struct DuckRun {
        let full: Int
        let attack: Int
        let release: Int
        let frame: Int
        var duck = 0
        var position = 0

        init(full: Int, attack: Int, release: Int, frame: Int) {
            self.full = full
            self.attack = attack
            self.release = release
            self.frame = frame
        }

        /// `count` frames a step a frame (up for voiced, down for not), clamped to 0...full.
        mutating func run(_ count: Int, up: Bool) {
            guard count > 0 else { return }
            let (moved, overflow) = count.multipliedReportingOverflow(by: up ? release : attack)
            duck = up ? (overflow ? full : min(full, duck + min(moved, full))) : (overflow ? 0 : max(0, duck - min(moved, full)))
        }

        mutating func voiced(_ start: Int, _ end: Int) {
            let from = max(start, position)
            let to = min(end, frame)
            guard from < to else { return }
            run(from - position, up: false)
            run(to - from, up: true)
            position = to
        }
    }

    /// Where the ramps stand: the gains on their way to their targets, and the music's ducking.
    /// Live playback takes a frame back (a rewind) by putting the levels back where they were
    /// at a block's start and rendering again up to that frame (`render(into:frameCount:towards:)`
    /// with the targets of then): the ramps go on from the level they had there.
    public struct Levels: Sendable {
        var gains: (Float, Float, Float, Float)
        var duck: Int
        /// The targets the block was rendered towards (nil: no live gains).
        public var targets: (Float, Float, Float, Float)?
    }

    /// The levels now, with the targets the next block will be rendered towards.
    public var levels: Levels {
        Levels(gains: current, duck: duck, targets: gains.map { ($0.effective(.voice), $0.effective(.sfx), $0.effective(.music), $0.effective(.master)) })
    }

    /// Puts the ramps back where `levels` had them.
    public func restore(_ levels: Levels) {
        current = levels.gains
        duck = levels.duck
    }

    /// Puts the gains where their targets are, without a ramp (before the first block).
    public func settleGains() {
        guard let gains else { return }
        current = (gains.effective(.voice), gains.effective(.sfx), gains.effective(.music), gains.effective(.master))
    }

    // MARK: Streamed voices after a move

    /// Whether the next `render` takes every streamed voice's samples from its ring, from the
    /// mixer's position: each lane's ring is first brought there (stepping back over the
    /// history it keeps, skipping ahead over what it holds, or else asking its feeder to
    /// refill from the position). After a refill, false until the feeder has acknowledged it
    /// and the ring holds a quarter of its capacity (or the rest of the lane). Live playback
    /// renders silence, the timeline waiting, while this is false, so that what follows is
    /// the render from that frame. Real time: no allocation, lock or wait.
    public func streamsReady() -> Bool {
        guard let lanes else { return true }
        var ready = true
        for lane in 0..<lanes.rings.count {
            let ring = lanes.rings[lane]
            reconcile(lane, ring)
            if laneWaiting[lane] != 0 {
                ready = false
            } else if laneFilling[lane] {
                let wanted = min(ring.capacity / 4, laneSamples(lane, from: position, to: Int.max))
                if ring.availableCount >= wanted { laneFilling[lane] = false } else { ready = false }
            }
        }
        return ready
    }

    /// Whether a lane is waiting for its feeder (refilling after a move).
    public var streamsRefilling: Bool {
        guard let lanes else { return false }
        for lane in 0..<lanes.rings.count where laneWaiting[lane] != 0 || laneFilling[lane] { return true }
        return false
    }

    /// Brings `lane`'s ring to the mixer's position (see `streamsReady`).
    private func reconcile(_ lane: Int, _ ring: SampleRing) {
        if laneWaiting[lane] != 0 {
            if laneFrame[lane] != position {
                refill(lane, ring)
            } else if ring.takeRefill(laneWaiting[lane]) {
                laneWaiting[lane] = 0
                laneFilling[lane] = true
            }
            return
        }
        let at = laneFrame[lane]
        guard at != position else { return }
        if owed[lane] == 0 {
            if position < at {
                if ring.unread(laneSamples(lane, from: position, to: at)) {
                    laneFrame[lane] = position
                    return
                }
            } else {
                let ahead = laneSamples(lane, from: at, to: position)
                if ahead <= ring.availableCount {
                    _ = ring.discard(ahead)
                    laneFrame[lane] = position
                    return
                }
            }
        }
        refill(lane, ring)
    }

    private func refill(_ lane: Int, _ ring: SampleRing) {
        laneWaiting[lane] = ring.requestRefill(from: position)
        laneFrame[lane] = position
        laneFilling[lane] = false
        owed[lane] = 0
        _ = ring.takeRefill(laneWaiting[lane])
    }

    /// The samples `lane`'s ring carries for timeline frames `from..<to`.
    private func laneSamples(_ lane: Int, from: Int, to: Int) -> Int {
        var total = 0
        for index in 0..<schedule.voices.count {
            let slot = slots[index]
            guard slot.lane == lane else { continue }
            if slot.start >= to { break }
            let overlap = min(slot.end, to) - max(slot.start, from)
            if overlap > 0 { total += overlap * slot.channels }
        }
        return total
    }

    /// True once every frame of the schedule has been rendered.
    public var finished: Bool { position >= schedule.frames }

    /// Whether every gain of `gains` is 1. (Written out: a generic tuple `!=` asks the runtime
    /// for the tuple's metadata, which allocates the first time, on the audio thread.)
    @inline(__always)
    private static func allUnity(_ gains: (Float, Float, Float, Float)) -> Bool {
        gains.0 == 1 && gains.1 == 1 && gains.2 == 1 && gains.3 == 1
    }

    /// Fills `output` (interleaved, `frameCount × channels` samples) with the next
    /// `frameCount` frames; frames past the schedule's end are silence.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) {
        // `if let`, not `Optional.map`: a generic call over the tuple asks the runtime for its
        // metadata, which allocates the first time, on the audio thread.
        if let gains {
            render(into: output, frameCount: frameCount, towards: (gains.effective(.voice), gains.effective(.sfx), gains.effective(.music), gains.effective(.master)))
        } else {
            render(into: output, frameCount: frameCount, towards: nil)
        }
    }

    /// `render`, with the gains stepping towards `targets` (a block rendered again after a
    /// rewind goes towards the targets of when it was first rendered).
    /// `streams: false` renders the streamed voices as silence without touching their rings
    /// (live playback renders a block again only for its levels, `restoreLevels`).
    public func render(
        into output: UnsafeMutableBufferPointer<Float>, frameCount: Int, towards targets: (Float, Float, Float, Float)?,
        streams: Bool = true
    ) {
        precondition(output.count >= frameCount * channels)
        if streams, let lanes {
            for lane in 0..<lanes.rings.count { reconcile(lane, lanes.rings[lane]) }
        }
        let blockStart = position
        let blockEnd = position + frameCount
        let target = output.baseAddress!
        target.update(repeating: 0, count: frameCount * channels)
        // Each bus apart, when a gain is not 1 or is on its way somewhere.
        // (`if let`, not `targets.map`: see `render(into:frameCount:)`.)
        var separate = false
        if let targets { separate = !Self.allUnity(targets) || !Self.allUnity(current) }
        if ducking != nil || separate {
            precondition(frameCount <= maxBlockFrames, "block larger than the mixer's maxBlockFrames")
            musicBlock.baseAddress!.update(repeating: 0, count: frameCount * channels)
            voiced.baseAddress!.update(repeating: false, count: frameCount)
        }
        if separate {
            voiceBlock.baseAddress!.update(repeating: 0, count: frameCount * channels)
            sfxBlock.baseAddress!.update(repeating: 0, count: frameCount * channels)
        }
        let voiceCount = schedule.voices.count
        while nextSlot < voiceCount, slots[nextSlot].start < blockEnd {
            active[activeCount] = nextSlot
            activeCount += 1
            nextSlot += 1
        }
        var index = 0
        while index < activeCount {
            let slot = slots[active[index]]
            let from = max(slot.start, blockStart)
            let to = min(slot.end, blockEnd)
            if from < to {
                let block: UnsafeMutablePointer<Float> =
                    switch slot.bus {
                    case .voice: separate ? voiceBlock.baseAddress! : target
                    case .sfx: separate ? sfxBlock.baseAddress! : target
                    case .music: separate || ducking != nil ? musicBlock.baseAddress! : target
                    }
                let out = block + (from - blockStart) * channels
                if ducking != nil && slot.bus == .voice {
                    for f in (from - blockStart)..<(to - blockStart) { voiced[f] = true }
                }
                if slot.shape >= 0 {
                    mixShaped(slot, shapes[Int(slot.shape)], from: from, to: to, into: out)
                } else if let samples = slot.samples {
                    mix(samples + (from - slot.start) * slot.channels, channels: slot.channels, frames: to - from, into: out)
                } else if let ring = slot.ring, streams, laneWaiting[slot.lane] == 0 {
                    // (A lane waiting for its refill plays silence.)
                    mixStream(ring.takeUnretainedValue(), lane: slot.lane, channels: slot.channels, frames: to - from, into: out)
                }
            }
            if slot.end <= blockEnd {
                // Keep the rest in start order, so voices are summed in the same order whatever
                // the block size (offline and live give the same floats when voices overlap).
                activeCount -= 1
                for later in index..<activeCount { active[later] = active[later + 1] }
            } else {
                index += 1
            }
        }
        if separate, let targets {
            applyGains(towards: targets, frames: frameCount, into: target)
        } else if let ducking {
            applyDucking(ducking, frames: frameCount, into: target)
        }
        position = blockEnd
        if streams, let lanes {
            for lane in 0..<lanes.rings.count where laneWaiting[lane] == 0 { laneFrame[lane] = blockEnd }
        }
    }

    /// Sums the buses' blocks under their gains (music under its ducking too), each gain
    /// stepping towards its target by at most `rampStep` a frame, then applies the master's.
    private func applyGains(towards targets: (Float, Float, Float, Float), frames: Int, into target: UnsafeMutablePointer<Float>) {
        @inline(__always) func step(_ value: inout Float, _ goal: Float) {
            if value < goal { value = min(goal, value + rampStep) } else if value > goal { value = max(goal, value - rampStep) }
        }
        let full = ducking.map { $0.attackFrames * $0.releaseFrames } ?? 1
        let duckScale = ducking.map { ($0.gain - 1) / Float(full) } ?? 0
        for f in 0..<frames {
            step(&current.0, targets.0)
            step(&current.1, targets.1)
            step(&current.2, targets.2)
            step(&current.3, targets.3)
            var musicGain = current.2
            if let ducking {
                duck = voiced[f] ? min(full, duck + ducking.releaseFrames) : max(0, duck - ducking.attackFrames)
                musicGain *= 1 + Float(duck) * duckScale
            }
            for c in 0..<channels {
                let i = f * channels + c
                target[i] = (voiceBlock[i] * current.0 + sfxBlock[i] * current.1 + musicBlock[i] * musicGain) * current.3
            }
        }
    }

    /// Adds the block's music under the envelope: frame by frame, a frame a voice covers moves
    /// the music one attack step down, any other frame one release step back up.
    private func applyDucking(_ ducking: Lesson.Ducking, frames: Int, into target: UnsafeMutablePointer<Float>) {
        let full = ducking.attackFrames * ducking.releaseFrames
        let scale = (ducking.gain - 1) / Float(full)
        for f in 0..<frames {
            duck = voiced[f] ? min(full, duck + ducking.releaseFrames) : max(0, duck - ducking.attackFrames)
            let gain = 1 + Float(duck) * scale
            for c in 0..<channels { target[f * channels + c] += musicBlock[f * channels + c] * gain }
        }
    }

    /// Adds a music bed's frames `from..<to` of the timeline: its clip read from where the
    /// loop puts that frame (a run at a time, up to the loop's end), under its fades. Each
    /// frame's value depends on its timeline frame only: the same whatever the block size.
    private func mixShaped(_ slot: Slot, _ shape: Shape, from: Int, to: Int, into out: UnsafeMutablePointer<Float>) {
        let samples = slot.samples!
        var frame = from
        while frame < to {
            var offset = frame - slot.start
            var run = to - frame
            if shape.loopEnd > shape.loopStart {
                if offset >= shape.loopEnd { offset = shape.loopStart + (offset - shape.loopStart) % (shape.loopEnd - shape.loopStart) }
                run = min(run, shape.loopEnd - offset)
            } else {
                guard offset < shape.clipFrames else { return }
                run = min(run, shape.clipFrames - offset)
            }
            let faded = frame < shape.fadeInEnd || frame + run > shape.fadeOutStart
            if faded { run = min(run, maxBlockFrames) }
            let source = samples + offset * slot.channels
            let target = out + (frame - from) * channels
            if !faded {
                mix(source, channels: slot.channels, frames: run, into: target)
            } else {
                // Mixed apart, then added under each frame's gain: linear from 0 over the
                // fade-in, down to 1 / fadeOut frames on the last frame of the fade-out.
                let scratch = fadeBlock.baseAddress!
                scratch.update(repeating: 0, count: run * channels)
                mix(source, channels: slot.channels, frames: run, into: scratch)
                for k in 0..<run {
                    let at = frame + k
                    var gain: Float = 1
                    if at < shape.fadeInEnd { gain = Float(at - slot.start) / Float(shape.fadeInEnd - slot.start) }
                    if at >= shape.fadeOutStart { gain *= Float(slot.end - at) / Float(slot.end - shape.fadeOutStart) }
                    for c in 0..<channels { target[k * channels + c] += scratch[k * channels + c] * gain }
                }
            }
            frame += run
        }
    }

    private func mixStream(_ ring: SampleRing, lane: Int, channels inChannels: Int, frames: Int, into out: UnsafeMutablePointer<Float>) {
        if owed[lane] > 0 { owed[lane] -= ring.discard(owed[lane]) }
        let wanted = frames * inChannels
        let available = owed[lane] > 0 ? 0 : min(wanted, ring.availableCount) / inChannels * inChannels
        ring.consume(available) { piece, count, offset in
            mix(piece, channels: inChannels, frames: count / inChannels, into: out + offset / inChannels * channels)
        }
        if available < wanted {
            owed[lane] += wanted - available
            streamShortfall += wanted - available
        }
    }

    /// Adds `frames` frames of `source` (interleaved, `inChannels`) into `target`.
    /// Mono plays on every output channel; many channels into one give their average;
    /// otherwise channel c plays on output c and extra source channels are dropped.
    @inline(__always)
    private func mix(_ source: UnsafePointer<Float>, channels inChannels: Int, frames count: Int, into target: UnsafeMutablePointer<Float>) {
        let outChannels = channels
        if inChannels == outChannels {
            for i in 0..<(count * outChannels) { target[i] += source[i] }
        } else if inChannels == 1 && outChannels == 2 {
            for f in 0..<count {
                target[2 * f] += source[f]
                target[2 * f + 1] += source[f]
            }
        } else if inChannels == 1 {
            for f in 0..<count {
                let sample = source[f]
                for c in 0..<outChannels { target[f * outChannels + c] += sample }
            }
        } else if outChannels == 1 {
            let scale = 1 / Float(inChannels)
            for f in 0..<count {
                var sum: Float = 0
                for c in 0..<inChannels { sum += source[f * inChannels + c] }
                target[f] += sum * scale
            }
        } else {
            let shared = min(inChannels, outChannels)
            for f in 0..<count {
                for c in 0..<shared { target[f * outChannels + c] += source[f * inChannels + c] }
            }
        }
    }
}
