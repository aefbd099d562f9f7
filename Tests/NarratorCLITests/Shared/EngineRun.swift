import Foundation
import NarratorLive
import Synchronization

/// A `PlaybackEngine` started on a real output, its events collected: what the live tests that
/// drive the engine directly (seeks, take-backs) share.
final class EngineRun: Sendable {
    let engine: PlaybackEngine
    private final class State: Sendable {
        let events = Mutex<[PlaybackEvent]>([])
        let outcome = Mutex<PlaybackOutcome?>(nil)
    }
    private let state = State()
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `engine` at once.
    init(_ engine: PlaybackEngine) {
        self.engine = engine
        engine.start(
            onEvents: { [state, started] batch in
                state.events.withLock { $0 += batch }
                if batch.contains(where: { if case .start = $0 { true } else { false } }) { started.signal() }
            },
            onFinished: { [state, finished] result in
                state.outcome.withLock { $0 = result }
                finished.signal()
            })
    }

    /// Whether `start` came within `seconds`.
    func waitForStart(seconds: Double) -> Bool { started.wait(timeout: .now() + seconds) == .success }
    /// Whether the playback ended within `seconds`.
    func waitForEnd(seconds: Double) -> Bool { finished.wait(timeout: .now() + seconds) == .success }
    var events: [PlaybackEvent] { state.events.withLock { $0 } }
    var outcome: PlaybackOutcome? { state.outcome.withLock { $0 } }
}
