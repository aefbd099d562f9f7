import Foundation
import NarratorCore

/// Size and title of a plot.
public struct PlotOptions: Sendable {
    /// The picture's size in pixels (SVG user units).
    public var width: Int
    public var height: Int
    /// The line at the top (the lesson, what plays, the seed).
    public var title: String

    public static let defaultWidth = 1200
    public static let defaultHeight = 520
    public static let widths = 400...10_000
    public static let heights = 240...4_000

    public init(width: Int = PlotOptions.defaultWidth, height: Int = PlotOptions.defaultHeight, title: String = "") {
        self.width = width
        self.height = height
        self.title = title
    }
}

/// The colours of a plot, shared with the tests that look for them in the PNG.
public enum PlotStyle {
    /// Audacity's waveform blue: the min/max envelope; its RMS is drawn lighter inside it.
    public static let waveform = "#3232c8"
    public static let waveformRMS = "#6464dc"
    /// Word boundaries (the words tier, and dotted through the waveform).
    public static let wordBoundary = "#d01c1c"
    /// Clip boundaries (the clips tier).
    public static let clipBoundary = "#505050"
    /// Point cues: pulses, chain ends, and everything an activity or announcer records.
    public static let pulse = "#9c27b0"
    public static let chainEnd = "#111111"
    public static let activity = "#e07000"

    static let font = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
    /// Average advance of a character, in ems, for fitting labels (DejaVu Sans is wide).
    static let charWidth = 0.62
}

/// Where everything goes in a plot of a schedule: Praat's and Audacity's layout, a waveform
/// above tiers that share its time axis.
///
/// The horizontal position is a pure function of the frame:
///
///     x(frame) = plotLeft + frame × plotWidth / frames
///
/// so frame 0 is the plot's left edge, frame `frames` (the schedule's end) its right edge, and
/// pixel column `c` (`plotLeft + c ..< plotLeft + c + 1`) holds the frames of envelope column
/// `c`. Top to bottom: the title, the waveform, the tiers `clips` (an interval per clip played,
/// Praat's interval tier), `words` (an interval per word cue, its boundaries and its text),
/// `cues` (a point per pulse, chain end and activity event), then the time axis in seconds.
public struct PlotLayout: Sendable {
    public let width: Int
    public let height: Int
    public let sampleRate: Int
    public let frames: Int
    public let plotLeft: Double
    /// Pixel columns of the waveform: the envelope's `columns`.
    public let plotWidth: Int
    public let title: String

    public static let leftMargin = 64
    public static let rightMargin = 16
    static let titleHeight = 30.0
    static let clipLane = 20.0
    static let wordLane = 30.0
    static let cueRow = 15.0
    static let gap = 5.0
    static let axisHeight = 38.0
    static let minimumWaveform = 60.0
    static let maxLanes = 6
    static let maxCueRows = 12

    public let waveTop: Double
    public let waveBottom: Double
    let clipsTop: Double
    let wordsTop: Double
    let cuesTop: Double
    let axisTop: Double

    let clips: [ClipInterval]
    let clipLanes: Int
    let words: [WordInterval]
    let wordLanes: Int
    let points: [PointCue]
    let cueRows: Int

    struct ClipInterval {
        let start: Cue
        let end: Cue?
        let clip: String
        let pool: String?
        let endFrame: Int
        var lane = 0
    }

    struct WordInterval {
        let cue: Cue
        let text: String
        let endFrame: Int
        var lane = 0
    }

    struct PointCue {
        let cue: Cue
        let label: String
        let colour: String
        var row = 0
        var anchorEnd = false
        /// The label as drawn: shortened where the next one needs its room.
        var shown: String

        init(cue: Cue, label: String, colour: String) {
            self.cue = cue
            self.label = label
            self.colour = colour
            shown = label
        }
    }

    /// A cue label's width in pixels (10 px text), estimated.
    static func labelWidth(_ text: String) -> Double { Double(text.count) * PlotStyle.charWidth * 10 }

    /// `text` cut to `width` pixels with "…"; empty when not even two characters fit.
    static func shortened(_ text: String, width: Double) -> String {
        if labelWidth(text) <= width { return text }
        let fits = Int(width / (PlotStyle.charWidth * 10)) - 1
        return fits >= 2 ? String(text.prefix(fits)) + "…" : ""
    }

    public init(schedule: Schedule, options: PlotOptions) throws(NarratorError) {
        width = options.width
        height = options.height
        sampleRate = schedule.sampleRate
        frames = schedule.frames
        title = options.title
        plotLeft = Double(Self.leftMargin)
        plotWidth = width - Self.leftMargin - Self.rightMargin

        // Clips: each clipStart with the next clipEnd of the same clip (and pool).
        var clips: [ClipInterval] = []
        var open: [String: [Int]] = [:]
        var words: [WordInterval] = []
        // In the words' tier, packed after them: the words keep its first lane, their
        // sentences take the next.
        var sentences: [WordInterval] = []
        var points: [PointCue] = []
        for cue in schedule.cues {
            switch cue.kind {
            case .clipStart(let clip, let pool):
                open["\(clip)\u{0}\(pool ?? "")", default: []].append(clips.count)
                clips.append(ClipInterval(start: cue, end: nil, clip: clip, pool: pool, endFrame: schedule.frames))
            case .clipEnd(let clip, let pool):
                let key = "\(clip)\u{0}\(pool ?? "")"
                if let index = open[key]?.first {
                    open[key]!.removeFirst()
                    let interval = clips[index]
                    clips[index] = ClipInterval(start: interval.start, end: cue, clip: clip, pool: pool, endFrame: cue.frame)
                } else {
                    // An end without a start (cannot happen in a scheduler's output): a point.
                    points.append(PointCue(cue: cue, label: "end of \(clip)", colour: PlotStyle.clipBoundary))
                }
            case .word(_, _, let text, let endFrame):
                words.append(WordInterval(cue: cue, text: text, endFrame: endFrame))
            case .sentence(_, _, let text, let endFrame):
                sentences.append(WordInterval(cue: cue, text: text, endFrame: endFrame))
            case .pulse(let target):
                points.append(PointCue(cue: cue, label: "pulse \(target)", colour: PlotStyle.pulse))
            case .chainEnd(let chain):
                points.append(PointCue(cue: cue, label: "end \(chain)", colour: PlotStyle.chainEnd))
            case .activity(let type, let fields):
                let values = fields.sorted { $0.key < $1.key }.compactMap { field -> String? in
                    if case .string(let value) = field.value { return value }
                    return nil
                }
                points.append(PointCue(cue: cue, label: ([type.rawValue] + values).joined(separator: " "), colour: PlotStyle.activity))
            }
        }
        clipLanes = Self.pack(&clips, start: { $0.start.frame }, end: { $0.endFrame }, lane: { $0.lane = $1 })
        words += sentences
        wordLanes = Self.pack(&words, start: { $0.cue.frame }, end: { $0.endFrame }, lane: { $0.lane = $1 })
        self.clips = clips
        self.words = words

        // Point labels: beside their marker, right of it (left of it near the right edge), each
        // in the first row where it overlaps no other label. Rows: as many as needed, up to 12
        // and as long as the waveform keeps 40 % of the height; past that, the label before it
        // in the row that ends first is shortened ("…", or left out) to make room.
        let fixedRows = Double(clipLanes) * Self.clipLane + Double(wordLanes) * Self.wordLane
        let room = Double(height) - Self.titleHeight - fixedRows - 6 - 3 * Self.gap - Self.axisHeight
            - max(Self.minimumWaveform, 0.4 * Double(height))
        let maxRows = max(1, min(Self.maxCueRows, Int(room / Self.cueRow)))
        let right = plotLeft + Double(plotWidth)
        var rows: [(end: Double, last: Int)] = []
        let total = Double(max(schedule.frames, 1))
        let size = Double(plotWidth)
        for i in points.indices {
            let x = plotLeft + Double(points[i].cue.frame) * size / total
            let textWidth = Self.labelWidth(points[i].label)
            var from = x + 3
            if from + textWidth > right {
                points[i].anchorEnd = true
                from = x - 3 - textWidth
            }
            if let row = rows.firstIndex(where: { $0.end + 4 <= from }) {
                points[i].row = row
                rows[row] = (from + textWidth, i)
            } else if rows.count < maxRows {
                points[i].row = rows.count
                rows.append((from + textWidth, i))
            } else {
                let row = rows.indices.min { rows[$0].end < rows[$1].end }!
                let before = rows[row].last
                if !points[before].anchorEnd {
                    let beforeFrom = plotLeft + Double(points[before].cue.frame) * size / total + 3
                    points[before].shown = Self.shortened(points[before].label, width: from - 4 - beforeFrom)
                }
                points[i].row = row
                rows[row] = (from + textWidth, i)
            }
        }
        self.points = points
        cueRows = max(rows.count, 1)

        let tiers = Double(clipLanes) * Self.clipLane + Double(wordLanes) * Self.wordLane + Double(cueRows) * Self.cueRow + 6
        let fixed = Self.titleHeight + tiers + 3 * Self.gap + Self.axisHeight
        let waveform = Double(height) - fixed
        guard waveform >= Self.minimumWaveform else {
            throw NarratorError(
                file: "--height",
                "\(height) px leaves no room for the waveform above \(clipLanes + wordLanes + cueRows) tier rows: give at least \(Int((fixed + Self.minimumWaveform).rounded(.up)))")
        }
        waveTop = Self.titleHeight
        waveBottom = waveTop + waveform
        clipsTop = waveBottom + Self.gap
        wordsTop = clipsTop + Double(clipLanes) * Self.clipLane + Self.gap
        cuesTop = wordsTop + Double(wordLanes) * Self.wordLane + Self.gap
        axisTop = cuesTop + Double(cueRows) * Self.cueRow + 6
    }

    /// Puts each interval in the first lane where it overlaps nothing; returns the lane count.
    private static func pack<T>(_ items: inout [T], start: (T) -> Int, end: (T) -> Int, lane: (inout T, Int) -> Void) -> Int {
        var laneEnds: [Int] = []
        for i in items.indices {
            let s = start(items[i])
            if let free = laneEnds.firstIndex(where: { $0 <= s }) {
                lane(&items[i], free)
                laneEnds[free] = end(items[i])
            } else if laneEnds.count < maxLanes {
                lane(&items[i], laneEnds.count)
                laneEnds.append(end(items[i]))
            } else {
                let free = laneEnds.indices.min { laneEnds[$0] < laneEnds[$1] }!
                lane(&items[i], free)
                laneEnds[free] = max(laneEnds[free], end(items[i]))
            }
        }
        return max(laneEnds.count, 1)
    }

    /// x of a frame (fractional frames for the axis's ticks): `plotLeft + frame × plotWidth / frames`.
    public func x(frame: Double) -> Double {
        plotLeft + frame * Double(plotWidth) / Double(max(frames, 1))
    }

    public func x(frame: Int) -> Double { x(frame: Double(frame)) }

    /// The waveform's centre line and the height of full scale (±1.0) above and below it:
    /// `y(v) = waveMid − v × waveHalf`.
    public var waveMid: Double { (waveTop + waveBottom) / 2 }
    public var waveHalf: Double { (waveBottom - waveTop) / 2 - 4 }

    public func y(sample: Float) -> Double { waveMid - Double(max(-1, min(1, sample))) * waveHalf }
}

/// The plot as an SVG document.
public enum WaveformPlot {
    /// The SVG of `layout` with the waveform `envelope` (of `layout.plotWidth` columns).
    ///
    /// Every cue of the schedule is one `<g class="cue">` with its frame (`data-frame`), its x
    /// (`data-x`), its type and its cue-sheet members as `data-*` attributes (camelCase keys
    /// in kebab case: `endFrame` → `data-end-frame`), so a program can check the picture.
    public static func svg(layout: PlotLayout, envelope: WaveformEnvelope) -> String {
        precondition(envelope.columns == layout.plotWidth)
        var out = SVGWriter()
        let width = layout.width
        let height = layout.height
        let left = layout.plotLeft
        let right = left + Double(layout.plotWidth)
        let duration = Double(layout.frames) / Double(layout.sampleRate)

        out.line(
            ##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\##(width)" height="\##(height)" viewBox="0 0 \##(width) \##(height)" "##
                + ##"font-family="\##(PlotStyle.font)" data-sample-rate="\##(layout.sampleRate)" data-frames="\##(layout.frames)" "##
                + ##"data-plot-left="\##(fmt(left))" data-plot-width="\##(layout.plotWidth)">"##)
        out.line("<title>\(xml(layout.title))</title>")
        out.line(
            "<desc>x = \(fmt(left)) + frame × \(layout.plotWidth) / \(layout.frames) (frames at \(layout.sampleRate) Hz); "
                + "waveform y = \(fmt(layout.waveMid)) − sample × \(fmt(layout.waveHalf))</desc>")
        out.line(##"<rect width="100%" height="100%" fill="#ffffff"/>"##)
        out.line(##"<text x="8" y="19" font-size="13" font-weight="bold" fill="#000">\##(xml(layout.title))</text>"##)
        legend(&out, layout)

        // The waveform panel, its grid and amplitude labels.
        let top = layout.waveTop
        let bottom = layout.waveBottom
        out.line(
            ##"<g class="waveform" data-top="\##(fmt(top))" data-bottom="\##(fmt(bottom))" data-mid="\##(fmt(layout.waveMid))" data-half="\##(fmt(layout.waveHalf))">"##)
        out.line(##"<rect x="\##(fmt(left))" y="\##(fmt(top))" width="\##(layout.plotWidth)" height="\##(fmt(bottom - top))" fill="#f5f5fa" stroke="#909090"/>"##)
        let ticks = tickSeconds(duration: duration, plotWidth: layout.plotWidth)
        for tick in ticks.values {
            let x = layout.x(frame: tick * Double(layout.sampleRate))
            out.line(##"<line x1="\##(fmt(x))" y1="\##(fmt(top))" x2="\##(fmt(x))" y2="\##(fmt(bottom))" stroke="#dcdce6"/>"##)
        }
        for (value, label) in [(1.0, "1"), (0.5, "0.5"), (0, "0"), (-0.5, "-0.5"), (-1.0, "-1")] {
            let y = layout.y(sample: Float(value))
            out.line(##"<line x1="\##(fmt(left - 4))" y1="\##(fmt(y))" x2="\##(fmt(left))" y2="\##(fmt(y))" stroke="#606060"/>"##)
            out.line(##"<text x="\##(fmt(left - 6))" y="\##(fmt(y + 3.5))" font-size="10" text-anchor="end" fill="#404040">\##(label)</text>"##)
        }
        out.line(
            ##"<line class="zero" x1="\##(fmt(left))" y1="\##(fmt(layout.waveMid))" x2="\##(fmt(right))" y2="\##(fmt(layout.waveMid))" stroke="\##(PlotStyle.waveform)"/>"##)
        // A vertical line per pixel column, min to max; the RMS lighter inside. In paths of 64
        // columns: cairo strokes one path of thousands of pieces in quadratic time (seconds).
        var envelopePaths: [String] = []
        var rmsPaths: [String] = []
        for chunk in stride(from: 0, to: envelope.columns, by: 64) {
            var envelopePath = ""
            var rmsPath = ""
            for c in chunk..<min(chunk + 64, envelope.columns) {
                guard let column = envelope[c] else { continue }
                let x = fmt(left + Double(c) + 0.5)
                envelopePath += "M\(x) \(fmt(layout.y(sample: column.maximum)))V\(fmt(layout.y(sample: column.minimum)))"
                let rms = min(column.rms, min(column.maximum.magnitude, column.minimum.magnitude))
                if rms > 0 { rmsPath += "M\(x) \(fmt(layout.y(sample: rms)))V\(fmt(layout.y(sample: -rms)))" }
            }
            if !envelopePath.isEmpty { envelopePaths.append(envelopePath) }
            if !rmsPath.isEmpty { rmsPaths.append(rmsPath) }
        }
        for d in envelopePaths {
            out.line(##"<path class="envelope" d="\##(d)" stroke="\##(PlotStyle.waveform)" stroke-width="1" fill="none"/>"##)
        }
        for d in rmsPaths {
            out.line(##"<path class="rms" d="\##(d)" stroke="\##(PlotStyle.waveformRMS)" stroke-width="1" fill="none"/>"##)
        }
        // Praat's dotted boundaries through the sound: words (while they are at least 6 px apart
        // on average: denser, they would hide the waveform), and the point cues.
        let spoken = layout.words.filter { $0.cue.type == "word" }
        for word in spoken where spoken.count * 2 * 6 <= layout.plotWidth {
            for frame in [word.cue.frame, word.endFrame] {
                let x = fmt(layout.x(frame: frame))
                out.line(
                    ##"<line class="guide" x1="\##(x)" y1="\##(fmt(top))" x2="\##(x)" y2="\##(fmt(bottom))" stroke="\##(PlotStyle.wordBoundary)" stroke-opacity="0.45" stroke-dasharray="2 3"/>"##)
            }
        }
        for point in layout.points {
            let x = fmt(layout.x(frame: point.cue.frame))
            out.line(
                ##"<line class="guide" x1="\##(x)" y1="\##(fmt(top))" x2="\##(x)" y2="\##(fmt(bottom))" stroke="\##(point.colour)" stroke-opacity="0.7" stroke-dasharray="6 3"/>"##)
        }
        out.line("</g>")

        // Tiers.
        tier(&out, layout, name: "clips", top: layout.clipsTop, height: Double(layout.clipLanes) * PlotLayout.clipLane)
        for clip in layout.clips {
            let y0 = layout.clipsTop + Double(clip.lane) * PlotLayout.clipLane
            let y1 = y0 + PlotLayout.clipLane
            let x0 = layout.x(frame: clip.start.frame)
            let x1 = layout.x(frame: clip.endFrame)
            out.line("<g \(attributes(clip.start, layout))>")
            boundary(&out, x: x0, y0: y0, y1: y1, colour: PlotStyle.clipBoundary)
            let name = clip.pool.map { "\(clip.clip) (\($0))" } ?? clip.clip
            label(&out, name, x0: x0, x1: x1, baseline: y0 + 14.5, size: 11, colour: "#303030")
            out.line("</g>")
            if let end = clip.end {
                out.line("<g \(attributes(end, layout))>")
                boundary(&out, x: x1, y0: y0, y1: y1, colour: PlotStyle.clipBoundary)
                out.line("</g>")
            }
        }
        tier(&out, layout, name: "words", top: layout.wordsTop, height: Double(layout.wordLanes) * PlotLayout.wordLane)
        for word in layout.words {
            let y0 = layout.wordsTop + Double(word.lane) * PlotLayout.wordLane
            let y1 = y0 + PlotLayout.wordLane
            let x0 = layout.x(frame: word.cue.frame)
            let x1 = layout.x(frame: word.endFrame)
            out.line("<g \(attributes(word.cue, layout)) data-end-x=\"\(fmt(x1))\">")
            boundary(&out, x: x0, y0: y0, y1: y1, colour: PlotStyle.wordBoundary, role: "start")
            boundary(&out, x: x1, y0: y0, y1: y1, colour: PlotStyle.wordBoundary, role: "end")
            label(&out, word.text, x0: x0, x1: x1, baseline: y0 + 20, size: 13, colour: "#000000")
            out.line("</g>")
        }
        tier(&out, layout, name: "cues", top: layout.cuesTop, height: Double(layout.cueRows) * PlotLayout.cueRow + 6)
        for point in layout.points {
            let x = layout.x(frame: point.cue.frame)
            let y0 = layout.cuesTop
            let y1 = y0 + Double(layout.cueRows) * PlotLayout.cueRow + 6
            out.line("<g \(attributes(point.cue, layout))>")
            boundary(&out, x: x, y0: y0, y1: y1, colour: point.colour)
            out.line(##"<path d="M\##(fmt(x - 4)) \##(fmt(y0))h8l-4 5z" fill="\##(point.colour)"/>"##)
            out.line("</g>")
        }
        // The labels after every marker, each on a white box, so that no marker crosses a label.
        out.line(##"<g class="cue-labels" font-size="10">"##)
        for point in layout.points where !point.shown.isEmpty {
            let x = layout.x(frame: point.cue.frame)
            let baseline = layout.cuesTop + Double(point.row + 1) * PlotLayout.cueRow
            let width = PlotLayout.labelWidth(point.shown) + 2
            let boxX = point.anchorEnd ? x - 2 - width : x + 2
            out.line(
                ##"<rect x="\##(fmt(boxX))" y="\##(fmt(baseline - 10))" width="\##(fmt(width))" height="13" fill="#ffffff"/>"##
                    + ##"<text data-frame="\##(point.cue.frame)" data-type="\##(xml(point.cue.type))" x="\##(fmt(point.anchorEnd ? x - 3 : x + 3))" y="\##(fmt(baseline))" "##
                    + ##"text-anchor="\##(point.anchorEnd ? "end" : "start")" fill="\##(point.colour)">\##(xml(point.shown))</text>"##)
        }
        out.line("</g>")

        // The time axis.
        let axis = layout.axisTop
        out.line(##"<g class="axis" data-top="\##(fmt(axis))">"##)
        out.line(##"<line x1="\##(fmt(left))" y1="\##(fmt(axis))" x2="\##(fmt(right))" y2="\##(fmt(axis))" stroke="#404040"/>"##)
        for tick in ticks.values {
            let x = fmt(layout.x(frame: tick * Double(layout.sampleRate)))
            let text = String(format: "%.\(ticks.decimals)f", tick)
            out.line(
                ##"<g class="tick" data-seconds="\##(text)"><line x1="\##(x)" y1="\##(fmt(axis))" x2="\##(x)" y2="\##(fmt(axis + 5))" stroke="#404040"/>"##
                    + ##"<text x="\##(x)" y="\##(fmt(axis + 16))" font-size="10" text-anchor="middle" fill="#202020">\##(text)</text></g>"##)
        }
        out.line(
            ##"<text x="\##(fmt((left + right) / 2))" y="\##(fmt(axis + 31))" font-size="11" text-anchor="middle" fill="#202020">Time (s)</text>"##)
        out.line("</g>")
        out.line("</svg>")
        return out.text
    }

    /// What each colour means, right-aligned on the title's line: only the kinds the plot shows,
    /// and none when the title leaves no room.
    private static func legend(_ out: inout SVGWriter, _ layout: PlotLayout) {
        let colours = Set(layout.points.map(\.colour))
        var entries = [("waveform", PlotStyle.waveform)]
        if !layout.words.isEmpty { entries.append(("word boundary", PlotStyle.wordBoundary)) }
        if !layout.clips.isEmpty { entries.append(("clip", PlotStyle.clipBoundary)) }
        for (name, colour) in [("pulse", PlotStyle.pulse), ("chain end", PlotStyle.chainEnd), ("activity", PlotStyle.activity)]
        where colours.contains(colour) {
            entries.append((name, colour))
        }
        let widths = entries.map { Double($0.0.count) * PlotStyle.charWidth * 10 + 28 }
        let titleEnd = 8 + Double(layout.title.count) * 0.68 * 13
        var x = Double(layout.width) - 8
        guard x - widths.reduce(0, +) > titleEnd + 16 else { return }
        out.line(##"<g class="legend" font-size="10">"##)
        for (name, colour) in entries.reversed() {
            x -= Double(name.count) * PlotStyle.charWidth * 10
            out.line(##"<text x="\##(fmt(x))" y="18" fill="#303030">\##(name)</text>"##)
            x -= 16
            out.line(##"<line x1="\##(fmt(x))" y1="14.5" x2="\##(fmt(x + 12))" y2="14.5" stroke="\##(colour)" stroke-width="3"/>"##)
            x -= 12
        }
        out.line("</g>")
    }

    private static func tier(_ out: inout SVGWriter, _ layout: PlotLayout, name: String, top: Double, height: Double) {
        out.line(
            ##"<g class="tier" data-tier="\##(name)" data-top="\##(fmt(top))" data-bottom="\##(fmt(top + height))">"##
                + ##"<rect x="\##(fmt(layout.plotLeft))" y="\##(fmt(top))" width="\##(layout.plotWidth)" height="\##(fmt(height))" fill="#ffffff" stroke="#909090"/>"##
                + ##"<text x="\##(fmt(layout.plotLeft - 6))" y="\##(fmt(top + min(height, 30) / 2 + 4))" font-size="11" text-anchor="end" fill="#202020">\##(name)</text></g>"##)
    }

    /// A boundary line, 2 px wide, so the pixel column holding `x` is wholly its colour.
    private static func boundary(_ out: inout SVGWriter, x: Double, y0: Double, y1: Double, colour: String, role: String? = nil) {
        let cls = role.map { ##" class="\##($0)""## } ?? ""
        out.line(
            ##"<line\##(cls) x1="\##(fmt(x))" y1="\##(fmt(y0))" x2="\##(fmt(x))" y2="\##(fmt(y1))" stroke="\##(colour)" stroke-width="2"/>"##)
    }

    /// A label centred in `x0…x1`: smaller when it does not fit (down to 7 px), then cut with "…".
    private static func label(_ out: inout SVGWriter, _ text: String, x0: Double, x1: Double, baseline: Double, size: Double, colour: String) {
        let room = x1 - x0 - 4
        let count = Double(text.count)
        guard room > 0, count > 0 else { return }
        var fontSize = size
        var shown = text
        if count * PlotStyle.charWidth * size > room {
            fontSize = max(7, room / (count * PlotStyle.charWidth))
            if count * PlotStyle.charWidth * fontSize > room {
                let fits = Int(room / (PlotStyle.charWidth * fontSize)) - 1
                guard fits > 0 else { return }
                shown = String(text.prefix(fits)) + "…"
            }
        }
        out.line(
            ##"<text class="label" x="\##(fmt((x0 + x1) / 2))" y="\##(fmt(baseline))" font-size="\##(fmt(fontSize))" text-anchor="middle" fill="\##(colour)">\##(xml(shown))</text>"##)
    }

    /// `class="cue" data-type=… data-frame=… data-x=…` and the cue sheet's members.
    static func attributes(_ cue: Cue, _ layout: PlotLayout) -> String {
        var parts = [
            ##"class="cue""##, ##"data-type="\##(xml(cue.type))""##, ##"data-frame="\##(cue.frame)""##,
            ##"data-x="\##(fmt(layout.x(frame: cue.frame)))""##,
        ]
        for (key, value) in cue.members.sorted(by: { $0.key < $1.key }) {
            let text: String
            switch value {
            case .int(let number): text = String(number)
            case .string(let string): text = string
            case .bool(let flag): text = flag ? "true" : "false"
            }
            parts.append(##"data-\##(kebab(key))="\##(xml(text))""##)
        }
        return parts.joined(separator: " ")
    }

    /// `endFrame` → `end-frame`; anything but letters and digits becomes `-`.
    static func kebab(_ key: String) -> String {
        var out = ""
        for character in key {
            if character.isUppercase {
                out += "-" + character.lowercased()
            } else if character.isASCII && (character.isLetter || character.isNumber) {
                out.append(character)
            } else {
                out += "-"
            }
        }
        return out
    }

    /// Ticks every 1, 2 or 5 × 10ⁿ seconds, about 100 px apart, and the decimals their labels need.
    static func tickSeconds(duration: Double, plotWidth: Int) -> (values: [Double], decimals: Int) {
        guard duration > 0 else { return ([0], 0) }
        let wanted = duration * 100 / Double(plotWidth)
        let magnitude = pow(10, floor(log10(wanted)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= wanted } ?? 10 * magnitude
        let decimals = max(0, Int(-floor(log10(step) + 1e-9)))
        var values: [Double] = []
        var k = 0.0
        while k * step <= duration + step * 1e-9 {
            values.append(k * step)
            k += 1
        }
        return (values, decimals)
    }
}

/// Text and attribute values for XML: the five special characters as entities, and characters
/// XML 1.0 does not allow (control characters) as U+FFFD, so a word can never break the file.
func xml(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        case "\t": out += "&#9;"
        case "\n": out += "&#10;"
        case "\r": out += "&#13;"
        default:
            if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                out.unicodeScalars.append("\u{FFFD}")
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out
}

/// A number with at most three decimals, trailing zeros dropped.
func fmt(_ value: Double) -> String {
    var text = String(format: "%.3f", value)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text == "-0" ? "0" : text
}

struct SVGWriter {
    var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    mutating func line(_ line: String) {
        text += line
        text += "\n"
    }
}
