import NarratorLive

/// The outputs Narrator plays on under Linux, chosen by `--output`.
public enum OutputKind: String, CaseIterable, Sendable {
    /// ALSA: a sound card (hw, plughw), dmix, or any ALSA plugin, including the one that
    /// plays through PulseAudio or PipeWire.
    case alsa
}

/// Opens the output of a kind on a device.
public enum Outputs {
    /// The default: ALSA's `default` device, which on a desktop goes to its sound server.
    public static let defaultKind = OutputKind.alsa

    /// The device an output plays on when none is named.
    public static func defaultDevice(of kind: OutputKind) -> String {
        switch kind {
        case .alsa: "default"
        }
    }

    /// Opens `device` (the kind's default when nil) for `rate` Hz and `channels` channels with
    /// about `latencyMs` of buffer.
    public static func open(
        _ kind: OutputKind, device: String? = nil, rate: Int, channels: Int, latencyMs: Int
    ) throws(PlaybackError) -> any AudioOutput {
        let device = device ?? defaultDevice(of: kind)
        switch kind {
        case .alsa:
            return try AlsaOutput(device: device, rate: rate, channels: channels, latencyMs: latencyMs)
        }
    }
}
