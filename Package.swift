// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Narrator",
    // The Synchronization module (Atomic, Mutex) sets the floor on Apple platforms; Linux has
    // no floor. NarratorCore, NarratorLive and NarratorKit name no Linux-only call: imports go
    // through canImport(Glibc/Musl/Darwin), and the outputs of Linux (ALSA, PulseAudio) are a
    // separate target an app on another platform leaves out, bringing its own AudioOutput.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "NarratorCore", targets: ["NarratorCore"]),
        .library(name: "NarratorEngine", targets: ["NarratorEngine"]),
        .library(name: "NarratorAudioFile", targets: ["NarratorAudioFile"]),
        .library(name: "NarratorLive", targets: ["NarratorLive"]),
        .library(name: "NarratorOutputs", targets: ["NarratorOutputs"]),
        .library(name: "NarratorKit", targets: ["NarratorKit"]),
        .executable(name: "narrator", targets: ["narrator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.20.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
    ],
    targets: [
        // C libraries of the field, through pkg-config.
        .systemLibrary(
            name: "CSndFile", path: "Sources/CSndFile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Sources/NarratorOutputs/ALSA/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        // libpulse, eSpeak NG and librsvg are loaded with dlopen (below): no pkgConfig, whose
        // libraries SwiftPM would link.
        .systemLibrary(
            name: "CPulse", path: "Sources/NarratorOutputs/Pulse/CPulse",
            providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(
            name: "CSoxr", path: "Sources/CSoxr", pkgConfig: "soxr",
            providers: [.apt(["libsoxr-dev"])]),
        // Sonic (Apache-2.0), the speech time stretcher: libsonic-dev ships no .pc file, so
        // the module map names the library itself.
        .systemLibrary(name: "CSonic", path: "Sources/CSonic", providers: [.apt(["libsonic-dev"])]),
        .systemLibrary(
            name: "CEspeakNG", path: "Sources/CEspeakNG",
            providers: [.apt(["libespeak-ng-dev"])]),
        // libebur128 (MIT): EBU R 128 loudness, loudness range and true peak (docs/loudness.md).
        // Spectra for pauses under a music bed (align); BSD-3-Clause. No pkgConfig: its .pc
        // carries -D flags SwiftPM refuses; the shim defines the one that matters (float).
        .systemLibrary(name: "CKissFFT", path: "Sources/CKissFFT", providers: [.apt(["libkissfft-dev"])]),
        .systemLibrary(
            name: "CEbur128", path: "Sources/CEbur128", pkgConfig: "libebur128",
            providers: [.apt(["libebur128-dev"])]),
        // SQLite (public domain): the daemon's touch log (docs/touches.md says why not GRDB).
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // librsvg, libespeak-ng and libpulse are bound with dlopen by the command that needs
        // them: each loader target holds the stubs of the functions called
        // (scripts/make-lazy-stubs.py) and its `open` function. They take no header through
        // pkg-config, since SwiftPM passes a pkg-config module's `--libs` to every link, and the
        // process would map those libraries (some 50 with what they pull in) at each start
        // (docs/benchmarks.md, Process start): eSpeak NG's and libpulse's headers are in
        // /usr/include (module maps above, without pkgConfig); librsvg's need GLib's and cairo's
        // include folders, so CRsvgLoader declares the part it uses itself (rsvg_api.h, checked
        // against the system's headers by LinkedLibrariesTests).
        .target(name: "CLazyLibrary"),
        .target(name: "CRsvgLoader", dependencies: ["CLazyLibrary"]),
        .target(name: "CEspeakNGLoader", dependencies: ["CEspeakNG", "CLazyLibrary"]),
        .target(name: "CPulseLoader", dependencies: ["CPulse", "CLazyLibrary"], path: "Sources/NarratorOutputs/Pulse/CPulseLoader"),

        // Model, timings, scheduler, mixer: pure Swift, no C module.
        // The Foundation-free core that also builds with Embedded Swift for WebAssembly
        // (scripts/build-wasm.sh): the lesson parser, scheduler, activity machine and mixer.
        // The engine links Sonic for speed (TimeStretcher): natively libsonic, in narrator.wasm
        // Debian's sonic.c compiled for wasm32 (scripts/build-wasm.sh).
        .target(name: "NarratorEngine", dependencies: ["CSonic"]),
        .target(name: "NarratorCore", dependencies: ["NarratorEngine", "CKissFFT"]),
        // Clip decoding, resampling, time stretching (pitch kept), loudness and file output.
        .target(name: "NarratorAudioFile", dependencies: ["NarratorCore", "CSndFile", "CSoxr", "CSonic", "CEbur128"]),
        // Live playback: the engine (plan, mixer, audio clock, cue delivery when heard), the
        // `AudioOutput` protocol every backend fits, and the virtual output tests advance.
        // No C module: an app on another platform brings its own output.
        .target(name: "NarratorLive", dependencies: ["NarratorCore", "NarratorAudioFile"]),
        // The Linux outputs, each in its folder with its C module and its error mapping.
        .target(
            name: "NarratorOutputs", dependencies: ["NarratorLive", "NarratorCore", "NarratorAudioFile", "CALSA", "CPulse", "CPulseLoader"],
            exclude: ["ALSA/CALSA", "Pulse/CPulse", "Pulse/CPulseLoader"]),
        // The public Swift API: load a lesson, prepare a program, render it or play it and
        // receive its events as an AsyncSequence. The CLI goes through it.
        .target(name: "NarratorKit", dependencies: ["NarratorCore", "NarratorAudioFile", "NarratorLive"]),
        // Scratch narration: libespeak-ng speech with its word events as timings.
        .target(name: "NarratorSynth", dependencies: ["NarratorCore", "NarratorAudioFile", "CEspeakNG", "CEspeakNGLoader"]),
        // Library checks for authors: lessons, clips and timings before they ship.
        .target(name: "NarratorValidate", dependencies: ["NarratorCore", "NarratorAudioFile"]),
        // Plots: a schedule's mixed waveform with its word and cue tiers as SVG (Praat, Audacity),
        // and as PNG through librsvg.
        .target(name: "NarratorPlot", dependencies: ["NarratorCore", "CRsvgLoader"]),
        // The touch log: every touch the daemon hears, a row of an SQLite file, and the report
        // of `narrator touches` (docs/touches.md).
        .target(name: "NarratorTouches", dependencies: ["NarratorCore", "NarratorLive", "CSQLite"]),
        // The daemon: one JSON-lines protocol over a Unix socket (SwiftNIO) and WebSocket
        // (Hummingbird), and the browser read-along page.
        .target(
            name: "NarratorService",
            dependencies: [
                "NarratorKit", "NarratorLive", "NarratorOutputs", "NarratorTouches",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ],
            resources: [.copy("Page")]),
        .executableTarget(
            name: "narrator",
            dependencies: [
                "NarratorCore", "NarratorAudioFile", "NarratorLive", "NarratorOutputs", "NarratorKit", "NarratorService",
                "NarratorSynth",
                "NarratorValidate",
                "NarratorPlot",
                "NarratorTouches",
                "CQuietMPG123",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // A release build on Linux links the Swift runtime and Foundation into the binary,
            // as `make release` (--static-swift-stdlib) does: a plain `swift build -c release`
            // then starts in about 10 ms, not 50 (loading and relocating libswiftCore,
            // libFoundation and ICU at each start; docs/benchmarks.md, Process start). Unsafe
            // flags bar a product from use by other packages, so they are on this executable
            // only: NarratorKit and the other library products carry none.
            // The compile flag makes this module's objects name the static runtime's own
            // libraries (Foundation's ICU, CoreFoundation, libxml2...) for the link.
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))]),
        // The executable's own mpg123_new, which makes libsndfile's libmpg123 handles quiet
        // (Sources/CQuietMPG123/quiet_mpg123.c says why only the executable has it).
        .target(name: "CQuietMPG123", linkerSettings: [.linkedLibrary("dl")]),

        // Helpers shared by the test targets: fixture paths, running the CLI, reading WAV data
        // without the code under test.
        .target(name: "NarratorTestSupport", dependencies: ["NarratorCore", "CThreadPlacement"]),
        // Linux thread placement (CPU affinity, SCHED_IDLE) for AwakeCPUs.
        .target(name: "CThreadPlacement"),
        // The Swift Testing traits the timing tests share (only test targets link it).
        .target(name: "NarratorTestTraits", dependencies: ["NarratorTestSupport"]),
        .testTarget(name: "NarratorCoreTests", dependencies: ["NarratorCore", "NarratorTestSupport", "NarratorTestTraits", "narrator-fuzz", "CAllocationCounter"]),
        .testTarget(
            name: "NarratorAudioFileTests",
            dependencies: ["NarratorAudioFile", "NarratorCore", "NarratorTestSupport", "CSndFile", "CAllocationCounter"]),
        // Live playback benchmark (scripts/bench-live.sh): prints figures, asserts nothing.
        .executableTarget(name: "narrator-bench-live", dependencies: ["NarratorTestSupport"]),
        // Daemon benchmark (scripts/bench-daemon.sh): 50 subscribers, figures only.
        .executableTarget(name: "narrator-bench-daemon", dependencies: ["NarratorCore", "NarratorTestSupport"]),
        // The parsers' fuzz targets (make fuzz, docs/fuzzing.md): built with libFuzzer by
        // scripts/fuzz.sh in its own scratch path; the ordinary build is a replay tool that the
        // fuzz regression test runs on each saved crash input.
        .executableTarget(name: "narrator-fuzz", dependencies: ["NarratorCore", "NarratorAudioFile", "NarratorService", "CLibFuzzer"]),
        // libFuzzer's driver entry point (declaration only; the fuzz build links the runtime).
        .systemLibrary(name: "CLibFuzzer", path: "Sources/CLibFuzzer"),
        // Counts heap allocations per thread; linked only into the tests.
        .target(name: "CAllocationCounter"),
        .testTarget(
            name: "NarratorLiveTests",
            dependencies: [
                "NarratorLive", "NarratorAudioFile", "NarratorCore", "NarratorTestSupport", "NarratorTestTraits",
                "CAllocationCounter",
            ]),
        .testTarget(name: "NarratorKitTests", dependencies: ["NarratorKit", "NarratorTestSupport"]),
        .testTarget(
            name: "NarratorCLITests",
            dependencies: [
                "narrator", "NarratorAudioFile", "NarratorCore", "NarratorKit", "NarratorOutputs", "NarratorTestSupport", "NarratorTouches",
                "NarratorTestTraits", "NarratorService", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
    ]
)
