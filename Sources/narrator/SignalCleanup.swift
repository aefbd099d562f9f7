import Foundation
import NarratorCore

/// The executable's signal handling for commands that write files: SIGINT, SIGTERM and SIGHUP
/// remove every partial output file (`PartialFiles`, listed by `AtomicFile`) and exit with
/// 128 + the signal's number (130, 143, 129), the shell's convention. Libraries install no
/// handlers; this is the process's choice.
enum SignalCleanup {
    static let signals = [SIGINT, SIGTERM, SIGHUP]

    static func install() {
        // The registry is set up before any handler can read it.
        PartialFiles.prepare()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            // Async-signal-safe: atomic loads, unlink(2), _exit(2).
            PartialFiles.removeAll()
            _exit(128 + number)
        }
        sigemptyset(&action.sa_mask)
        // A parent may have blocked these (blocked signals survive exec): unblock them too.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in signals {
            sigaddset(&action.sa_mask, number)
            sigaddset(&unblock, number)
        }
        for number in signals { sigaction(number, &action, nil) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }
}
