/// Renders a schedule into interleaved float samples, block after block. The same code
/// serves offline rendering and live playback: after `init`, `render` never allocates.
public final class Mixer {
    public let schedule: Schedule
    public var channels: Int { schedule.channels }
    /// The next frame `render` will produce.
    public private(set) var position = 0
    private var nextVoice = 0
    /// Indices of voices that started and have not ended, at most `voices.count`.
    private let active: UnsafeMutableBufferPointer<Int>
    private var activeCount = 0

    public init(schedule: Schedule) {
        self.schedule = schedule
        active = .allocate(capacity: max(schedule.voices.count, 1))
    }

    deinit { active.deallocate() }

    /// True once every frame of the schedule has been rendered.
    public var finished: Bool { position >= schedule.frames }

    /// Fills `output` (interleaved, `frameCount × channels` samples) with the next
    /// `frameCount` frames; frames past the schedule's end are silence.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) {
        precondition(output.count >= frameCount * channels)
        let blockStart = position
        let blockEnd = position + frameCount
        output.update(repeating: 0)
        let voices = schedule.voices
        while nextVoice < voices.count, voices[nextVoice].startFrame < blockEnd {
            active[activeCount] = nextVoice
            activeCount += 1
            nextVoice += 1
        }
        var slot = 0
        while slot < activeCount {
            let voice = voices[active[slot]]
            let from = max(voice.startFrame, blockStart)
            let to = min(voice.endFrame, blockEnd)
            if from < to {
                mix(voice, frames: from..<to, blockStart: blockStart, into: output)
            }
            if voice.endFrame <= blockEnd {
                activeCount -= 1
                active[slot] = active[activeCount]
            } else {
                slot += 1
            }
        }
        position = blockEnd
    }

    private func mix(
        _ voice: Voice, frames: Range<Int>, blockStart: Int, into output: UnsafeMutableBufferPointer<Float>
    ) {
        let outChannels = channels
        let inChannels = voice.audio.channels
        let count = frames.count
        let sourceFrame = voice.audio.offset + (frames.lowerBound - voice.startFrame)
        let outBase = (frames.lowerBound - blockStart) * outChannels
        voice.audio.buffer.samples.withUnsafeBufferPointer { samples in
            let source = samples.baseAddress! + sourceFrame * inChannels
            let target = output.baseAddress! + outBase
            if inChannels == outChannels {
                for i in 0..<(count * outChannels) { target[i] += source[i] }
            } else if inChannels == 1 && outChannels == 2 {
                for f in 0..<count {
                    target[2 * f] += source[f]
                    target[2 * f + 1] += source[f]
                }
            } else if inChannels == 1 {
                // Mono plays on every output channel.
                for f in 0..<count {
                    let sample = source[f]
                    for c in 0..<outChannels { target[f * outChannels + c] += sample }
                }
            } else if outChannels == 1 {
                // Many channels into one: their average.
                let scale = 1 / Float(inChannels)
                for f in 0..<count {
                    var sum: Float = 0
                    for c in 0..<inChannels { sum += source[f * inChannels + c] }
                    target[f] += sum * scale
                }
            } else {
                // Channel c plays on output c; extra source channels are dropped.
                let shared = min(inChannels, outChannels)
                for f in 0..<count {
                    for c in 0..<shared { target[f * outChannels + c] += source[f * inChannels + c] }
                }
            }
        }
    }
}
