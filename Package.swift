// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Narrator",
    products: [
        .library(name: "NarratorCore", targets: ["NarratorCore"]),
        .library(name: "NarratorAudioFile", targets: ["NarratorAudioFile"]),
        .library(name: "NarratorLive", targets: ["NarratorLive"]),
        .library(name: "NarratorKit", targets: ["NarratorKit"]),
        .executable(name: "narrator", targets: ["narrator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // C libraries of the field, through pkg-config.
        .systemLibrary(
            name: "CSndFile", path: "Sources/CSndFile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(
            name: "CSoxr", path: "Sources/CSoxr", pkgConfig: "soxr",
            providers: [.apt(["libsoxr-dev"])]),

        // Model, timings, scheduler, mixer: pure Swift, no C module.
        .target(name: "NarratorCore"),
        // Clip decoding, resampling and file output.
        .target(name: "NarratorAudioFile", dependencies: ["NarratorCore", "CSndFile", "CSoxr"]),
        // Live playback: ALSA output, the audio clock, cue delivery when heard.
        .target(name: "NarratorLive", dependencies: ["NarratorCore", "NarratorAudioFile", "CALSA"]),
        // The public Swift API: load a lesson, prepare a program, render it or play it and
        // receive its events as an AsyncSequence. The CLI goes through it.
        .target(name: "NarratorKit", dependencies: ["NarratorCore", "NarratorAudioFile", "NarratorLive"]),
        .executableTarget(
            name: "narrator",
            dependencies: [
                "NarratorCore", "NarratorAudioFile", "NarratorLive", "NarratorKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // Helpers shared by the test targets: fixture paths, running the CLI, reading WAV data
        // without the code under test.
        .target(name: "NarratorTestSupport", dependencies: ["NarratorCore"]),
        .testTarget(name: "NarratorCoreTests", dependencies: ["NarratorCore", "NarratorTestSupport"]),
        .testTarget(
            name: "NarratorAudioFileTests",
            dependencies: ["NarratorAudioFile", "NarratorCore", "NarratorTestSupport", "CSndFile"]),
        // Live playback benchmark (scripts/bench-live.sh): prints figures, asserts nothing.
        .executableTarget(name: "narrator-bench-live", dependencies: ["NarratorTestSupport"]),
        // Counts heap allocations per thread; linked only into the tests.
        .target(name: "CAllocationCounter"),
        .testTarget(
            name: "NarratorLiveTests",
            dependencies: [
                "NarratorLive", "NarratorAudioFile", "NarratorCore", "NarratorTestSupport", "CAllocationCounter",
            ]),
        .testTarget(name: "NarratorKitTests", dependencies: ["NarratorKit", "NarratorTestSupport"]),
        .testTarget(
            name: "NarratorCLITests",
            dependencies: ["narrator", "NarratorAudioFile", "NarratorCore", "NarratorTestSupport"]),
    ]
)
