import Foundation

/// Why live playback could not start or had to stop. Each names the device and says what to do.
public enum PlaybackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device could not be opened (no sound card, a misspelt name, a sound server that
    /// does not answer): `code` is the errno's name (ENOENT, ENODEV, ECONNREFUSED…).
    /// `listedBy` (here and below) is the command that lists the output's devices.
    case noDevice(device: String, code: String, reason: String, listedBy: String = "aplay -L")
    /// Another program holds the device.
    case busy(device: String, listedBy: String = "aplay -L")
    /// The device refused every configuration Narrator can play.
    case unsupported(device: String, reason: String, listedBy: String = "aplay -L")
    /// The device went away while playing (EIO when a sound server dies, ENODEV when a card
    /// is unplugged, ENOTTY), or stopped taking audio for over a second.
    case deviceLost(device: String, code: String, reason: String)
    /// The device's timing reports never agreed (ALSA's `null` device plays as fast as it is
    /// fed): cues cannot be placed on it.
    case noClock(device: String)
    /// Nothing here can make a sound: no sound card (no /dev/snd) and no sound server (a
    /// build server, a container, CI). The message says how to play anyway.
    case noSoundHere(device: String)

    /// A short machine-readable name: what the `error` event's `code` holds.
    public var code: String {
        switch self {
        case .noDevice(_, let code, _, _): code
        case .busy: "EBUSY"
        case .unsupported: "EINVAL"
        case .deviceLost(_, let code, _): code
        case .noClock: "ETIME"
        case .noSoundHere: "ENODEV"
        }
    }

    public var device: String {
        switch self {
        case .noDevice(let device, _, _, _), .busy(let device, _), .unsupported(let device, _, _), .deviceLost(let device, _, _),
            .noClock(let device), .noSoundHere(let device):
            device
        }
    }

    /// What went wrong and what to do, without the device's name.
    public var message: String {
        func choose(_ lister: String = "aplay -L") -> String { "choose another with --device (\(lister) lists them)" }
        switch self {
        case .noDevice(_, _, let reason, let lister):
            return "cannot open it (\(reason)); \(choose(lister))"
        case .busy(_, let lister):
            return "busy: another program is using it; close that program or \(choose(lister))"
        case .unsupported(_, let reason, let lister):
            return "cannot play this lesson (\(reason)); \(choose(lister))"
        case .deviceLost(_, let code, let reason):
            return "lost while playing (\(code): \(reason))"
        case .noClock:
            return "its timing reports never settled, so cues cannot be placed on it (it plays faster or slower than real time); \(choose())"
        case .noSoundHere:
            return "this machine has no sound card (no /dev/snd) and no sound server: play into a file in real time with --output file --device heard.wav (the cues come as it is heard), or start a sound server"
        }
    }

    public var description: String { "audio device '\(device)': \(message)" }

    /// The device failed while playing, for a failure that is not an underrun or a suspend
    /// (or one that recovery could not undo).
    static func lost(_ failure: DeviceFailure, device: String) -> PlaybackError {
        .deviceLost(device: device, code: failure.name, reason: failure.reason)
    }
}
