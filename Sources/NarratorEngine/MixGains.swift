import Synchronization

/// The gains of live playback's buses (voice, sfx, music) and its master, and their mutes: set
/// from any thread, followed by the mixer frame by frame with a short linear ramp (no zipper
/// noise). One instance serves every plan a playback switches to, and can serve playback after
/// playback (the daemon keeps a client's volumes across chains). Ducking applies on top.
public final class MixGains: Sendable {
    public enum Target: String, Sendable, CaseIterable {
        case voice, sfx, music, master
    }

    /// The largest gain accepted (+12 dB); 0 is silence.
    public static let maximum: Float = 4

    private let voice = Atomic<UInt32>(Float(1).bitPattern)
    private let sfx = Atomic<UInt32>(Float(1).bitPattern)
    private let music = Atomic<UInt32>(Float(1).bitPattern)
    private let master = Atomic<UInt32>(Float(1).bitPattern)
    /// Bit i: target i (in `Target.allCases` order) is muted.
    private let mutes = Atomic<UInt8>(0)
    /// Changes made so far: live playback takes back what its output holds when it moves, so
    /// that a change is heard within a period.
    private let changeCount = Atomic<Int>(0)

    public var changes: Int { changeCount.load(ordering: .acquiring) }

    public init() {}

    private static func bit(_ target: Target) -> UInt8 {
        switch target {
        case .voice: 1
        case .sfx: 2
        case .music: 4
        case .master: 8
        }
    }

    /// Sets a gain (a factor: 1 leaves the level alone), clamped to 0…`maximum`; a value that
    /// is not a number is ignored.
    public func set(_ target: Target, gain: Float) {
        guard !gain.isNaN else { return }
        let bits = min(max(gain, 0), Self.maximum).bitPattern
        switch target {
        case .voice: voice.store(bits, ordering: .relaxed)
        case .sfx: sfx.store(bits, ordering: .relaxed)
        case .music: music.store(bits, ordering: .relaxed)
        case .master: master.store(bits, ordering: .relaxed)
        }
        changeCount.add(1, ordering: .releasing)
    }

    public func gain(_ target: Target) -> Float {
        let bits =
            switch target {
            case .voice: voice.load(ordering: .relaxed)
            case .sfx: sfx.load(ordering: .relaxed)
            case .music: music.load(ordering: .relaxed)
            case .master: master.load(ordering: .relaxed)
            }
        return Float(bitPattern: bits)
    }

    public func set(_ target: Target, muted: Bool) {
        if muted {
            mutes.bitwiseOr(Self.bit(target), ordering: .relaxed)
        } else {
            mutes.bitwiseAnd(~Self.bit(target), ordering: .relaxed)
        }
        changeCount.add(1, ordering: .releasing)
    }

    public func isMuted(_ target: Target) -> Bool { mutes.load(ordering: .relaxed) & Self.bit(target) != 0 }

    /// What the mixer ramps towards: the gain, or 0 when muted.
    @inline(__always)
    func effective(_ target: Target) -> Float { isMuted(target) ? 0 : gain(target) }
}
