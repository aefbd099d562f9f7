import Foundation
import Glibc
import NarratorCore
import NarratorLive
import Synchronization

/// For people at a terminal: one status line, redrawn in place ten times a second and on each
/// event: the clock as heard, the last answer's result and the last event, the chain's words
/// with the one being heard in red, and what is being typed as an answer.
///
/// It writes with write(2) on stdout, never through stdio: stdio's locks are shared with the
/// reader of stdin (a flush of every stream waits for the lock a blocked read holds), and the
/// line is cut to the terminal's width, read at each redraw (a resize shows within 100 ms), so
/// that it never wraps and every redraw replaces the last one (the cursor waits at the line's
/// start, hidden, so that a terminal that rewraps on a resize leaves nothing behind).
final class ReadAlong: Sendable {
    private let rate: Int
    /// The length of what plays (frames), when it is known before it plays: a chain, an
    /// activity with scripted taps. An activity answered live has none.
    private let total: Int?
    private let state = Mutex(State())
    private let ticking = Atomic<Bool>(true)

    /// An activity answered live: the line asks for an answer while nothing is typed.
    private let answering: Bool

    private struct State: Sendable {
        /// The clip whose words the line shows, and its words by their index in the clip's
        /// timings: a word heard again after a seek takes its own place, not a new one.
        var clip: String?
        var words: [Int: String] = [:]
        /// The index of the word being heard.
        var current: Int?
        var note = ""
        /// The last answer's result, shown until the next step begins.
        var answer = ""
        var typed = ""
        /// The audio clock as the events give it: `frame` is heard at `time` (monotonic ns);
        /// nil until playback starts.
        var anchor: (frame: Int, time: Int64)?
        /// Timeline frames per frame heard since the anchor (`speedChanged`).
        var speed = 1.0
        /// Set when playback has ended: the clock shows this frame and stops.
        var stoppedAt: Int?
        /// Set while paused: the clock shows this frame and waits.
        var pausedAt: Int?
        var finished = false
    }

    static let pausedNote = "paused (space resumes)"
    /// What the line says while an activity waits for a typed answer and nothing is typed.
    static let answerPrompt = "› type an answer, Enter"

    /// Redraws per second while playing, so that the clock runs between events.
    static let redrawsPerSecond = 10

    /// `speed`: the playback's speed from its first frame (`--speed`): no event says it.
    init(schedule: Schedule, total: Int?, speed: Double = 1, answering: Bool = false) {
        rate = schedule.sampleRate
        self.total = total
        self.answering = answering
        state.withLock { $0.speed = speed }
    }

    /// Redraws on a timer from playback's start to `finish()`.
    private func startTicking() {
        let thread = Thread { [self] in
            while ticking.load(ordering: .acquiring) {
                usleep(useconds_t(1_000_000 / Self.redrawsPerSecond))
                state.withLock { draw($0) }
            }
        }
        thread.name = "narrator-view"
        thread.start()
    }

    func show(_ event: PlaybackEvent) {
        state.withLock { state in
            guard !state.finished else { return }
            switch event {
            case .start(let info):
                if state.anchor == nil {
                    startTicking()
                    // The cursor waits at the start of the status line, hidden (shown again
                    // at the end, or at exit).
                    atexit { Terminal.write(Terminal.showCursor) }
                    Terminal.write(Terminal.hideCursor)
                }
                state.anchor = (0, info.firstFrameHeardTime)
                let delay = info.measuredDelayFrames * 1000 / max(1, info.output.sampleRate)
                Terminal.write("\r\u{1B}[2K" + Terminal.fit("playing on \(info.output.device) (\(info.output.sampleRate) Hz, delay \(delay) ms)") + "\n")
            case .cue(let cue, let time, _):
                state.anchor = (cue.frame, time)
                switch cue.kind {
                case .clipStart(let clip, _):
                    state.clip = clip
                    state.words = [:]
                    state.current = nil
                    state.note = clip
                case .word(let clip, let index, let text, _):
                    if clip != state.clip {
                        // Reached by a seek into another clip: its words, under its name.
                        state.clip = clip
                        state.words = [:]
                        state.note = clip
                    }
                    state.words[index] = text
                    state.current = index
                case .sentence:
                    // The line shows the clip's words; the sentence cue changes nothing yet.
                    break
                case .pulse(let target):
                    state.note = "● pulse \(target)"
                case .clipEnd:
                    state.current = nil
                case .chainEnd(let chain):
                    state.note = "end of \(chain)"
                case .activity(let type, let fields):
                    switch (type, fields["target"]) {
                    case (.pulse, .string(let target)?): state.note = "● pulse \(target)"
                    case (.tap, _):
                        if case .string(let answer)? = fields["answer"], case .string(let result)? = fields["result"] {
                            state.answer = "tap \(answer): \(result)"
                        }
                    case (.stepStart, _):
                        state.answer = ""
                        state.note = type.rawValue
                    default: state.note = type.rawValue
                    }
                    if type == .activityEnd { state.stoppedAt = cue.frame }
                }
            case .underrun(let count, _):
                state.note = "underrun \(count)"
            case .lateSwitch:
                return
            case .paused(let frame, _):
                state.note = Self.pausedNote
                state.pausedAt = frame
            case .resumed(let frame, let time):
                // Only the pause's own note goes: a speed changed while paused is heard with
                // the resume, its note just before it.
                if state.note == Self.pausedNote { state.note = "" }
                state.pausedAt = nil
                state.anchor = (frame, time)
            case .seeked(_, let frame, let time):
                // While paused it moves and stays paused.
                if state.pausedAt != nil { state.pausedAt = frame } else { state.anchor = (frame, time) }
            case .speedChanged(let speed, let frame, let time):
                state.speed = speed
                if state.pausedAt == nil { state.anchor = (frame, time) }
                state.note = String(format: "speed %g×", speed)
            case .streamProblem(let problem, _):
                state.note = problem.description
            case .canceled(let frame, _):
                state.note = "canceled"
                state.stoppedAt = frame
            case .error(let error, let frame, _):
                state.note = error.description
                state.stoppedAt = frame
            }
            draw(state)
        }
    }

    /// A note of the view's own (what a key did), shown until the next event's.
    func say(_ note: String) {
        state.withLock { state in
            guard !state.finished else { return }
            state.note = note
            draw(state)
        }
    }

    /// What is being typed as an answer (not yet sent).
    func typing(_ text: String) {
        state.withLock { state in
            guard !state.finished, state.typed != text else { return }
            state.typed = text
            draw(state)
        }
    }

    /// Playback has ended: the last line stays, and the cursor goes below it.
    func finish(at frame: Int? = nil) {
        ticking.store(false, ordering: .releasing)
        state.withLock { state in
            guard !state.finished else { return }
            state.typed = ""
            if state.stoppedAt == nil { state.stoppedAt = frame ?? state.anchor.map { _ in heardFrame(state) } }
            draw(state)
            state.finished = true
            Terminal.write("\n" + Terminal.showCursor)
        }
    }

    /// The frame being heard now, from the last anchor the events gave.
    private func heardFrame(_ state: State) -> Int {
        if let stopped = state.stoppedAt ?? state.pausedAt { return stopped }
        guard let anchor = state.anchor else { return 0 }
        let elapsed = MonotonicClock.now() - anchor.time
        guard elapsed > 0 else { return anchor.frame }
        // Frames past the anchor: at most a day's worth, so the product cannot overflow.
        let seconds = min(elapsed, 86_400_000_000_000)
        let frame = anchor.frame + Int(Double(Int(seconds / 1000) * rate / 1_000_000) * state.speed)
        return total.map { min($0, frame) } ?? frame
    }

    private func draw(_ state: State) {
        guard !state.finished, state.anchor != nil else { return }
        let width = Terminal.width() ?? 80
        // From the start of the line, erase to the end of the screen, draw, and go back to the
        // start: a terminal that rewraps its lines when made narrower (tmux, VTE, iTerm2)
        // keeps the cursor on the first row of the old line, so the erase takes all of it.
        Terminal.write("\r\u{1B}[J" + Self.line(state, heard: heardFrame(state), rate: rate, total: total, width: width, answering: answering) + "\r")
    }

    /// The status line for a terminal `width` columns wide: it uses at most `width - 1` (a
    /// character in the last column leaves some terminals waiting to wrap). What must stay
    /// visible goes first: the clock, then what is being typed, then the last event, then as
    /// many of the words around the current one as fit.
    private static func line(_ state: State, heard: Int, rate: Int, total: Int?, width: Int, answering: Bool) -> String {
        let room = max(1, width - 1)
        let seconds = Double(heard) / Double(rate)
        let clock = total.map { String(format: "[%6.1f / %.1f s] ", seconds, Double($0) / Double(rate)) }
            ?? String(format: "[%6.1f s] ", seconds)
        var out = Terminal.fit(clock, room)
        var left = room - Terminal.columns(out)
        var input = ""
        if !state.typed.isEmpty, left > 4 {
            input = "  › " + Terminal.fitTail(Terminal.printable(state.typed), left - 4)
            left -= Terminal.columns(input)
        }
        let note = Terminal.fit(Terminal.printable(state.answer.isEmpty ? state.note : state.answer + " · " + state.note), left)
        out += note
        left -= Terminal.columns(note)
        if answering, state.typed.isEmpty, state.stoppedAt == nil, left >= Terminal.columns(Self.answerPrompt) + 2 {
            // Waiting for an answer, nothing typed yet: say so (after the last event, before
            // the words, where the typed answer will show).
            out += "  " + Self.answerPrompt
            left -= Terminal.columns(Self.answerPrompt) + 2
        }
        if !state.words.isEmpty, left > 3 {
            let indices = state.words.keys.sorted()
            out += "  " + words(indices.map { Terminal.printable(state.words[$0]!) }, current: state.current.flatMap { indices.firstIndex(of: $0) }, room: left - 2)
        }
        return out + input
    }

    /// The words that fit in `room` columns: all, or a run around the current word (the last
    /// when none is), "…" where some are left out; the current one in bold red.
    private static func words(_ words: [String], current: Int?, room: Int) -> String {
        let widths = words.map(Terminal.columns)
        func cost(_ range: ClosedRange<Int>) -> Int {
            widths[range].reduce(0, +) + range.count - 1 + (range.lowerBound > 0 ? 2 : 0) + (range.upperBound < words.count - 1 ? 2 : 0)
        }
        let focus = min(current ?? words.count - 1, words.count - 1)
        var range = focus...focus
        if cost(range) > room {
            return Terminal.fit(words[focus], room).highlighted(focus == current)
        }
        var grew = true
        while grew {
            grew = false
            if range.upperBound + 1 < words.count, cost(range.lowerBound...range.upperBound + 1) <= room {
                range = range.lowerBound...range.upperBound + 1
                grew = true
            }
            if range.lowerBound > 0, cost(range.lowerBound - 1...range.upperBound) <= room {
                range = range.lowerBound - 1...range.upperBound
                grew = true
            }
        }
        let shown = range.map { words[$0].highlighted($0 == current) }.joined(separator: " ")
        return (range.lowerBound > 0 ? "… " : "") + shown + (range.upperBound < words.count - 1 ? " …" : "")
    }
}

extension String {
    fileprivate func highlighted(_ on: Bool) -> String { on ? "\u{1B}[1;31m\(self)\u{1B}[0m" : self }
}

/// The terminal on stdout: its width, the columns text takes, and writes that bypass stdio.
enum Terminal {
    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"

    /// Columns of the terminal on stdout, read now (TIOCGWINSZ); nil when it is not one.
    static func width() -> Int? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// All of `text` on stdout with write(2), whatever part each call takes.
    static func write(_ text: String) { Output.write(text, to: STDOUT_FILENO) }

    /// `text` without what would move the cursor or change the terminal: control characters
    /// (a lesson's text could hold an escape sequence) become "?".
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }

    /// Columns a character takes: 2 for wide (East Asian wide and full-width, emoji shown as
    /// pictures), 0 for a mark or a format character on its own, else 1.
    static func columns(_ character: Character) -> Int {
        for scalar in character.unicodeScalars {
            if scalar.properties.isEmojiPresentation { return 2 }
            switch scalar.value {
            case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
                0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x20000...0x3FFFD:
                return 2
            default: break
            }
        }
        switch character.unicodeScalars.first?.properties.generalCategory {
        case .nonspacingMark?, .enclosingMark?, .format?: return 0
        default: return 1
        }
    }

    /// Columns `text` takes, ANSI colour sequences (ESC [ … m) excluded.
    static func columns(_ text: String) -> Int {
        var total = 0
        var escape = false
        for character in text {
            if escape {
                if character == "m" { escape = false }
            } else if character == "\u{1B}" {
                escape = true
            } else {
                total += columns(character)
            }
        }
        return total
    }

    /// `text` (plain) cut to `room` columns, ending in "…" when cut.
    static func fit(_ text: String, _ room: Int = Terminal.width().map { $0 - 1 } ?? 79) -> String {
        guard room > 0 else { return "" }
        guard columns(text) > room else { return text }
        var out = ""
        var used = 0
        for character in text {
            let width = columns(character)
            if used + width > room - 1 { break }
            out.append(character)
            used += width
        }
        return out + "…"
    }

    /// The end of `text` (plain) in `room` columns, starting with "…" when cut.
    static func fitTail(_ text: String, _ room: Int) -> String {
        guard room > 0 else { return "" }
        guard columns(text) > room else { return text }
        var out: [Character] = []
        var used = 0
        for character in text.reversed() {
            let width = columns(character)
            if used + width > room - 1 { break }
            out.append(character)
            used += width
        }
        return "…" + String(out.reversed())
    }
}

/// Answers typed at the terminal for an activity answered live: each line is a tap (an answer,
/// a sound's name, replay or close), heard the moment Enter is pressed.
///
/// Read with read(2) on fd 0 on a thread of its own (no stdio: its lock would be held while
/// the read blocks). When stdin and stdout are both the terminal and the view is shown, the
/// terminal is put in non-canonical mode without echo while playing, so that typing does not
/// write into the status line: the view shows what is typed itself, Backspace and Ctrl-U edit
/// it, Enter sends it, and Ctrl-C still cancels (signals stay on; Ctrl-\ is turned off, so
/// that no core dump leaves the terminal raw). The settings are put back by `restore()`, at
/// exit, and around Ctrl-Z (suspended, the shell gets its own terminal back; continued, the
/// view takes it again).
final class LiveAnswers: Sendable {
    private let sources: [SignalSource]

    /// Signal sources, held to keep them alive.
    private struct SignalSource: @unchecked Sendable {
        let source: any DispatchSourceSignal
    }

    /// The settings found when playback began, to put back; nil when they were not changed.
    private static let saved = Mutex<termios?>(nil)

    /// Starts reading answers; `tap` gets each line, `view` (if shown) what is being typed.
    /// `pauseOrResume` gets a space typed while nothing else is (no answer starts with one).
    static func start(
        view: ReadAlong?, pauseOrResume: (@Sendable () -> Void)? = nil, tap: @escaping @Sendable (String) -> Void
    ) -> LiveAnswers {
        var editor = LineEditor()
        return reading(view: view) { byte, raw in
            if byte == UInt8(ascii: " "), editor.isEmpty, let pauseOrResume {
                pauseOrResume()
                return true
            }
            switch editor.take(byte) {
            case .typing(let text): if raw { view?.typing(text) }
            case .line(let line):
                if raw { view?.typing("") }
                if !line.isEmpty { tap(line) }
            case .end: return false
            case .nothing: break
            }
            return true
        }
    }

    /// Starts reading control keys, for a chain played on the terminal with the view shown
    /// (otherwise nothing is read): `key` gets each.
    static func startKeys(view: ReadAlong?, key: @escaping @Sendable (ControlKeys.Key) -> Void) -> LiveAnswers? {
        guard view != nil, isatty(STDIN_FILENO) != 0 else { return nil }
        var keys = ControlKeys()
        return reading(view: view) { byte, _ in
            if let pressed = keys.take(byte) { key(pressed) }
            return true
        }
    }

    /// Reads stdin byte by byte on a thread of its own, in raw mode when the view is shown on
    /// the terminal; `take` gets each byte and whether the terminal is raw, and says whether
    /// to go on.
    private static func reading(view: ReadAlong?, take: @escaping (UInt8, Bool) -> Bool) -> LiveAnswers {
        let raw = view != nil && isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0 && enterRawMode()
        var sources: [SignalSource] = []
        if raw {
            atexit { LiveAnswers.putBack() }
            signal(SIGTSTP, SIG_IGN)
            let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
            stop.setEventHandler {
                LiveAnswers.putBack(keep: true)
                kill(getpid(), SIGSTOP)
            }
            let resume = DispatchSource.makeSignalSource(signal: SIGCONT, queue: .global())
            resume.setEventHandler {
                if saved.withLock({ $0 != nil }) { _ = LiveAnswers.enterRawMode() }
            }
            stop.resume()
            resume.resume()
            sources = [SignalSource(source: stop), SignalSource(source: resume)]
        }
        nonisolated(unsafe) let take = take
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(STDIN_FILENO, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1, take(byte, raw) else { break }
            }
        }
        thread.name = "narrator-input"
        thread.start()
        return LiveAnswers(sources: sources)
    }

    private init(sources: [SignalSource]) { self.sources = sources }

    /// Puts the terminal's settings back (idempotent).
    func restore() {
        for held in sources { held.source.cancel() }
        if !sources.isEmpty { signal(SIGTSTP, SIG_DFL) }
        Self.putBack()
    }

    /// Non-canonical input, no echo, signals on but for Ctrl-\; the settings before are kept.
    private static func enterRawMode() -> Bool {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else { return false }
        saved.withLock { if $0 == nil { $0 = settings } }
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO | ECHONL | IEXTEN)
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
            cc[Int(VQUIT)] = 0  // _POSIX_VDISABLE on Linux
        }
        return tcsetattr(STDIN_FILENO, TCSANOW, &settings) == 0
    }

    /// Puts back the saved settings; `keep`: they stay saved (to enter raw mode again).
    private static func putBack(keep: Bool = false) {
        saved.withLock { saved in
            guard var settings = saved else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            if !keep { saved = nil }
        }
    }
}

/// Bytes typed, made into lines: printable text is kept (up to 256 bytes), Backspace removes
/// the last character, Ctrl-U the whole line, Enter (CR or LF) ends it, Ctrl-D on an empty line
/// ends the input; escape sequences (arrow keys) and other control bytes are dropped.
struct LineEditor {
    enum Result: Equatable {
        case typing(String)
        case line(String)
        case end
        case nothing
    }

    private var bytes: [UInt8] = []
    /// 0: text; 1: after ESC; 2: inside ESC [ … (until a final byte 0x40–0x7E).
    private var escape = 0

    /// Nothing typed, and not inside an escape sequence.
    var isEmpty: Bool { bytes.isEmpty && escape == 0 }

    mutating func take(_ byte: UInt8) -> Result {
        switch escape {
        case 1:
            escape = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O") ? 2 : 0
            return .nothing
        case 2:
            if (0x40...0x7E).contains(byte) { escape = 0 }
            return .nothing
        default: break
        }
        switch byte {
        case 0x0A, 0x0D:
            let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            bytes = []
            return .line(line)
        case 0x7F, 0x08:
            guard !bytes.isEmpty else { return .nothing }
            var text = String(decoding: bytes, as: UTF8.self)
            text.removeLast()
            bytes = Array(text.utf8)
        case 0x15:
            bytes = []
        case 0x04:
            if bytes.isEmpty { return .end }
            return .nothing
        case 0x1B:
            escape = 1
            return .nothing
        case 0x00..<0x20:
            return .nothing
        default:
            guard bytes.count < 256 else { return .nothing }
            bytes.append(byte)
        }
        return .typing(String(decoding: bytes, as: UTF8.self))
    }
}

/// The keys that control a chain played on the terminal: space pauses and resumes, ← and →
/// go to the previous and next word, [ and ] to the previous and next sentence, m mutes and
/// unmutes the music, − and + ask for a slower or faster speed.
struct ControlKeys {
    enum Key: Equatable, Sendable {
        case pauseOrResume, previousWord, nextWord, previousSentence, nextSentence, muteMusic, slower, faster
    }

    /// 0: plain; 1: after ESC; 2: inside ESC [ or ESC O.
    private var escape = 0

    mutating func take(_ byte: UInt8) -> Key? {
        switch escape {
        case 1:
            escape = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O") ? 2 : 0
            return nil
        case 2:
            guard (0x40...0x7E).contains(byte) else { return nil }
            escape = 0
            switch byte {
            case UInt8(ascii: "C"): return .nextWord
            case UInt8(ascii: "D"): return .previousWord
            default: return nil
            }
        default:
            switch byte {
            case 0x1B:
                escape = 1
                return nil
            case UInt8(ascii: " "): return .pauseOrResume
            case UInt8(ascii: "["): return .previousSentence
            case UInt8(ascii: "]"): return .nextSentence
            case UInt8(ascii: "m"): return .muteMusic
            case UInt8(ascii: "-"): return .slower
            case UInt8(ascii: "+"), UInt8(ascii: "="): return .faster
            default: return nil
            }
        }
    }
}
