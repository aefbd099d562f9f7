/// A timed event of a schedule: what the app should show at the moment `frame` is heard.
public struct Cue: Sendable, Equatable {
    public var frame: Int
    public var kind: Kind

    public enum Kind: Sendable, Equatable {
        /// `pool` is set when the clip was drawn from a pool.
        case clipStart(clip: String, pool: String?)
        case clipEnd(clip: String, pool: String?)
        /// `index` is the word's position in its timing file; `endFrame` is exclusive.
        case word(clip: String, index: Int, text: String, endFrame: Int)
        /// A sentence of a clip's words (`SentenceTiming`): `index` is its position among its
        /// timing file's sentences, `text` its words', `endFrame` (exclusive) its last word's
        /// end. It comes right before its first word's cue, at that word's frame.
        case sentence(clip: String, index: Int, text: String, endFrame: Int)
        case pulse(target: String)
        case chainEnd(chain: String)
        /// What an activity or an announcer did (a tap, an idle prompt, a request's end …).
        case activity(type: TraceKind, fields: [String: Field])
    }

    /// A field of an `activity` cue.
    public enum Field: Sendable, Equatable {
        case int(Int)
        case string(String)
        case bool(Bool)
    }

    public init(frame: Int, kind: Kind) {
        self.frame = frame
        self.kind = kind
    }

    /// `cues` sorted by frame, ties in their given order. Generation is nearly in order already
    /// (a clip's pulses follow its words, music ends follow the chain), so an ordered list is
    /// returned as it is (one pass), and otherwise sorted stably.
    static func ordered(_ cues: [Cue]) -> [Cue] {
        var inOrder = true
        for k in cues.indices.dropFirst() where cues[k].frame < cues[k - 1].frame {
            inOrder = false
            break
        }
        if inOrder { return cues }
        return stablySorted(cues) { $0.frame < $1.frame }
    }

    /// The same cue `frames` later (a word's or a sentence's end too).
    public func shifted(by frames: Int) -> Cue {
        var cue = self
        cue.frame += frames
        switch kind {
        case .word(let clip, let index, let text, let endFrame):
            cue.kind = .word(clip: clip, index: index, text: text, endFrame: endFrame + frames)
        case .sentence(let clip, let index, let text, let endFrame):
            cue.kind = .sentence(clip: clip, index: index, text: text, endFrame: endFrame + frames)
        default: break
        }
        return cue
    }

    /// The cue sheet's name for the kind.
    public var type: String {
        switch kind {
        case .clipStart: "clipStart"
        case .clipEnd: "clipEnd"
        case .word: "word"
        case .sentence: "sentence"
        case .pulse: "pulse"
        case .chainEnd: "chainEnd"
        case .activity(let type, _): type.rawValue
        }
    }
}

/// A clip placed on the timeline.
public struct Voice: Sendable {
    public let audio: ClipAudio
    public let startFrame: Int
    public var bus: Lesson.Bus = .voice
    /// How a music bed loops and fades; nil for a clip played once as it is.
    public var shape: VoiceShape? = nil
    public var endFrame: Int { startFrame + (shape?.frames ?? audio.frames) }
}

/// A music bed (`MusicBed`) on the timeline: its clip (`Voice.audio`) played from its start,
/// looped sample-exactly (after the clip's frame `loop.upperBound − 1` comes `loop.lowerBound`),
/// faded in over its first frames and out over its last. A class, so that a voice stays small.
public final class VoiceShape: Sendable {
    /// How long the voice lasts on the timeline, fades included.
    public let frames: Int
    /// Frames of the clip; nil: the clip plays once (`frames` is at most its length).
    public let loop: Range<Int>?
    public let fadeInFrames: Int
    /// The fade-out: its last `fadeOutFrames` frames.
    public let fadeOutFrames: Int

    public init(frames: Int, loop: Range<Int>?, fadeInFrames: Int, fadeOutFrames: Int) {
        self.frames = frames
        self.loop = loop
        self.fadeInFrames = fadeInFrames
        self.fadeOutFrames = fadeOutFrames
    }
}

/// What a chain turns into: audio placed at exact frames, and cues sorted by frame (ties in
/// chain order).
public struct Schedule: Sendable {
    public let sampleRate: Int
    public let channels: Int
    /// Length of the whole schedule in frames.
    public let frames: Int
    /// Sorted by start frame.
    public let voices: [Voice]
    /// Whether any voice streams its file (read in order while it plays): such a plan cannot
    /// move its timeline back (no seek, no live speed).
    public var streamsFiles: Bool {
        voices.contains { voice in if case .stream = voice.audio.source { true } else { false } }
    }
    public let cues: [Cue]
    /// How `music` voices are lowered under `voice` voices.
    public var ducking: Lesson.Ducking? = nil
}

extension Schedule {
    /// The first frame where `a` and `b` sound different: where a voice of one starts that the
    /// other lacks, or where a shared voice ends in one and not the other. `frames` of the
    /// shorter when they agree throughout.
    public static func firstDifference(_ a: Schedule, _ b: Schedule) -> Int {
        func key(_ voice: Voice) -> String {
            let source: String
            switch voice.audio.source {
            case .memory(let buffer): source = "\(ObjectIdentifier(buffer).hashValue)"
            case .stream(let file): source = file.path
            }
            return "\(voice.startFrame) \(source) \(voice.audio.offset) \(voice.bus)"
        }
        // Where a voice stops sounding as it would at full length: its end, or where a bed's
        // fade-out begins (the same bed ending elsewhere differs from its fade-out on).
        func fadeStart(_ voice: Voice) -> Int { voice.endFrame - (voice.shape?.fadeOutFrames ?? 0) }
        var ends = NameTable<Voice>()
        for voice in a.voices { ends[key(voice)] = voice }
        var first = min(a.frames, b.frames)
        var seen: Set<String> = []
        for voice in b.voices {
            let k = key(voice)
            seen.insert(k)
            if let other = ends[k] {
                if other.endFrame != voice.endFrame || fadeStart(other) != fadeStart(voice) {
                    first = min(first, min(fadeStart(other), fadeStart(voice)))
                }
            } else {
                first = min(first, voice.startFrame)
            }
        }
        for voice in a.voices where !seen.contains(key(voice)) { first = min(first, voice.startFrame) }
        return first
    }
}

/// Pool draws for one session: seeded, and never repeating any of a pool's last `noRepeat`
/// picks across every chain the session plays.
///
/// A draw picks uniformly among the pool's clips (in pool order) that are not among its last
/// `noRepeat` picks. That choice is kept in a Fenwick tree of the clips still allowed, so a
/// draw costs O(log n) however large the pool and its `noRepeat`: a million draws from a pool
/// of a million clips stay linear.
public struct PoolDraws: Sendable {
    private var generator: SeededGenerator
    private var pools = NameTable<PoolState>()

    public init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    public mutating func draw(from pool: Lesson.Pool) -> String {
        let k = pools.position(of: pool.id) { PoolState(count: pool.clips.count) }
        let pick = Int.random(in: 0..<(pool.clips.count - pools.values[k].recent.count), using: &generator)
        let position = pools.values[k].allowed(pick)
        pools.values[k].forbid(position)
        pools.values[k].recent.append(position)
        if pools.values[k].recent.count > pool.noRepeat { pools.values[k].allow(pools.values[k].recent.removeFirst()) }
        return pool.clips[position]
    }

    /// One pool's clips still allowed (a Fenwick tree of 0/1 by position) and its recent picks.
    private struct PoolState: Sendable {
        /// 1-based: `tree[k]` sums the allowed flags of positions (k − lowbit(k), k].
        var tree: [Int]
        var recent = Ring()

        init(count: Int) {
            tree = [Int](repeating: 0, count: count + 1)
            for k in stride(from: 1, through: count, by: 1) {
                tree[k] += 1
                let parent = k + (k & -k)
                if parent <= count { tree[parent] += tree[k] }
            }
        }

        mutating func add(_ position: Int, _ delta: Int) {
            var k = position + 1
            while k < tree.count {
                tree[k] += delta
                k += k & -k
            }
        }

        mutating func forbid(_ position: Int) { add(position, -1) }
        mutating func allow(_ position: Int) { add(position, 1) }

        /// The position of the `index`-th allowed clip (from 0), in pool order.
        func allowed(_ index: Int) -> Int {
            var position = 0
            var remaining = index + 1
            var step = 1
            while step * 2 < tree.count { step *= 2 }
            while step > 0 {
                if position + step < tree.count, tree[position + step] < remaining {
                    position += step
                    remaining -= tree[position]
                }
                step /= 2
            }
            return position
        }
    }

    /// A first-in first-out queue of positions with O(1) removal at the front.
    private struct Ring: Sendable {
        private var items: [Int] = []
        private var head = 0
        var count: Int { items.count - head }

        mutating func append(_ item: Int) { items.append(item) }

        mutating func removeFirst() -> Int {
            let item = items[head]
            head += 1
            // Drop the consumed front once it is half the storage: amortised O(1).
            if head > 32, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }
    }
}

/// Lays chains out on the timeline, back to back with no gap.
public enum Scheduler {
    /// Schedules `chainID` played `repeats` times back to back.
    public static func schedule(
        chain chainID: String, repeats: Int = 1, bank: ClipBank, draws: inout PoolDraws
    ) throws(NarratorError) -> Schedule {
        let lesson = bank.lesson
        let items = try lesson.chain(chainID)
        let reachable = try lesson.clipIDs(reachableFrom: chainID)
        let channels = lesson.channels ?? reachable.compactMap { bank.clips[$0]?.audio.channels }.max() ?? 1

        var voices: [Voice] = []
        var cues: [Cue] = []
        var frame = 0
        voices.reserveCapacity(items.count)
        cues.reserveCapacity(2 * items.count + 1)

        // Music started under the chain: (voice index, clip) to cut at the chain's end.
        var music: [(index: Int, clip: String)] = []
        var usedMusic = false

        func play(_ clipID: String, pool: String?) throws(NarratorError) {
            guard let clip = bank.clips[clipID] else {
                throw NarratorError(file: lesson.path, place: "clips.\(clipID)", "clip was not prepared")
            }
            let bus = lesson.clips[clipID]?.bus ?? .voice
            if bus == .music { usedMusic = true }
            voices.append(Voice(audio: clip.audio, startFrame: frame, bus: bus))
            cues.append(Cue(frame: frame, kind: .clipStart(clip: clipID, pool: pool)))
            // Each sentence's cue right before its first word's (the sentences are in order).
            var sentence = 0
            for word in clip.words {
                while sentence < clip.sentences.count, clip.sentences[sentence].words.lowerBound <= word.index {
                    let found = clip.sentences[sentence]
                    cues.append(
                        Cue(
                            frame: frame + found.startFrame,
                            kind: .sentence(clip: clipID, index: found.index, text: found.text, endFrame: frame + found.endFrame)))
                    sentence += 1
                }
                cues.append(
                    Cue(
                        frame: frame + word.startFrame,
                        kind: .word(clip: clipID, index: word.index, text: word.text, endFrame: frame + word.endFrame)))
            }
            for pulse in clip.pulses {
                cues.append(Cue(frame: frame + pulse.frame, kind: .pulse(target: pulse.label)))
            }
            frame += clip.audio.frames
            cues.append(Cue(frame: frame, kind: .clipEnd(clip: clipID, pool: pool)))
        }

        // A session longer than this (over 16 days at 48 kHz) is a mistake, not a lesson.
        // Checked after every item, so that no frame count can overflow on the way.
        let maxFrames = Frames.maxSession
        func tooLong() -> NarratorError {
            NarratorError(
                file: lesson.path, place: "chains.\(chainID)",
                "the session would last over \(maxFrames / lesson.sampleRate / 3600) hours; play fewer repeats or a shorter chain")
        }
        for _ in 0..<max(repeats, 0) {
            for item in items {
                if frame > maxFrames { throw tooLong() }
                switch item {
                case .clip(let id):
                    try play(id, pool: nil)
                case .pool(let id):
                    guard let pool = lesson.pools[id] else {
                        throw NarratorError(file: lesson.path, place: "pools.\(id)", "unknown pool \(lesson.known("pools", lesson.pools.keys))")
                    }
                    try play(draws.draw(from: pool), pool: id)
                case .silence(let frames):
                    frame += frames
                case .pulse(let targets):
                    for target in targets { cues.append(Cue(frame: frame, kind: .pulse(target: target))) }
                case .music(let id):
                    guard let clip = bank.clips[id] else {
                        throw NarratorError(file: lesson.path, place: "clips.\(id)", "clip was not prepared")
                    }
                    music.append((voices.count, id))
                    voices.append(Voice(audio: clip.audio, startFrame: frame, bus: .music))
                    cues.append(Cue(frame: frame, kind: .clipStart(clip: id, pool: nil)))
                }
            }
            // Music plays until its clip ends or the chain (this pass of it) does.
            for (index, clip) in music {
                let voice = voices[index]
                let end = min(voice.endFrame, frame)
                voices[index] = Voice(
                    audio: ClipAudio(source: voice.audio.source, offset: voice.audio.offset, frames: end - voice.startFrame),
                    startFrame: voice.startFrame, bus: .music)
                cues.append(Cue(frame: end, kind: .clipEnd(clip: clip, pool: nil)))
            }
            usedMusic = usedMusic || !music.isEmpty
            music = []
            cues.append(Cue(frame: frame, kind: .chainEnd(chain: chainID)))
        }
        if frame > maxFrames { throw tooLong() }

        return Schedule(
            sampleRate: lesson.sampleRate, channels: channels, frames: frame, voices: voices, cues: Cue.ordered(cues),
            ducking: usedMusic ? lesson.ducking : nil)
    }
}
