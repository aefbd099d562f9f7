import ArgumentParser
import Foundation
import NarratorCore
import NarratorKit
import NarratorPlot

struct Plot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plot",
        abstract: "Draw a chain's waveform with its word boundaries and cues, as SVG or PNG.",
        discussion: """
            The picture authors know from Praat and Audacity: the mixed audio as a waveform (the \
            lowest and highest sample of each pixel column, RMS lighter inside), and under it, on \
            the same time axis in seconds, a 'clips' tier (an interval per clip played), a \
            'words' tier (each word's boundaries and text) and a 'cues' tier (pulses, chain ends, \
            an activity's events). x = left + frame × width / frames, exactly. The SVG's \
            elements carry each cue's frame and fields as data-* attributes. PNG is the same \
            SVG drawn by librsvg. The file appears only once complete.

            Example:
              narrator plot Timings/lessons/sample.json --chain correct --seed 7 \\
                --output correct.png
            """)

    @OptionGroup var chainOptions: ChainOptions

    @Option(name: .shortAndLong, help: "The picture to write: .svg or .png.")
    var output: String

    @Option(help: "Width in pixels (\(PlotOptions.widths.lowerBound)…\(PlotOptions.widths.upperBound)).")
    var width = PlotOptions.defaultWidth

    @Option(help: "Height in pixels (\(PlotOptions.heights.lowerBound)…\(PlotOptions.heights.upperBound)).")
    var height = PlotOptions.defaultHeight

    func validate() throws {
        guard PlotOptions.widths.contains(width) else {
            throw ValidationError("--width must be between \(PlotOptions.widths.lowerBound) and \(PlotOptions.widths.upperBound), got \(width)")
        }
        guard PlotOptions.heights.contains(height) else {
            throw ValidationError("--height must be between \(PlotOptions.heights.lowerBound) and \(PlotOptions.heights.upperBound), got \(height)")
        }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            _ = try PlotFile.format(of: output)
            let seed = chainOptions.seed ?? UInt64.random(in: .min ... .max)
            let prepared = try chainOptions.prepare(seed: seed)
            let schedule = prepared.schedule
            let what =
                if let chain = chainOptions.chain {
                    "chain \(chain)" + (chainOptions.repeat > 1 ? " ×\(chainOptions.repeat)" : "")
                } else if let activity = chainOptions.activity {
                    "activity \(activity)"
                } else {
                    "requests"
                }
            let seconds = Frames.describe(schedule.frames, rate: schedule.sampleRate)
            // The seed matters only where a pool was drawn from.
            let drawn = schedule.cues.contains { if case .clipStart(_, let pool?) = $0.kind { pool.isEmpty == false } else { false } }
            let title =
                "\(URL(fileURLWithPath: chainOptions.lesson).lastPathComponent): \(what)\(drawn ? ", seed \(seed)" : "") · "
                + "\(schedule.sampleRate) Hz, \(schedule.channels) ch · \(seconds)"
            let layout = try PlotLayout(schedule: schedule, options: PlotOptions(width: width, height: height, title: title))
            var envelope = WaveformEnvelope(totalFrames: schedule.frames, columns: layout.plotWidth, channels: schedule.channels)
            try prepared.render { samples, frames in envelope.add(samples, frames: frames) }
            try PlotFile.write(svg: WaveformPlot.svg(layout: layout, envelope: envelope), width: width, height: height, to: output)
            let words = schedule.cues.filter { if case .word = $0.kind { true } else { false } }.count
            print(
                "\(output): \(width) × \(height) px, \(seconds) (\(schedule.frames) frames at \(schedule.sampleRate) Hz), "
                    + "\(Wording.count(words, "word")), \(Wording.count(schedule.cues.count - words, "other cue"))")
        }
    }
}
