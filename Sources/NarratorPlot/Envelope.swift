/// The waveform as Audacity draws it: for each pixel column, the lowest and highest sample
/// (over every channel) of the frames that column covers, and their RMS.
///
/// Column `c` of `columns` covers the frames `f` with `c ≤ f × columns / totalFrames < c + 1`,
/// that is `ceil(c × totalFrames / columns) ..< ceil((c + 1) × totalFrames / columns)`: exactly
/// the frames whose x (`PlotLayout.x(frame:)`) falls inside the column's pixel. A column that
/// covers no frame (a schedule shorter than the plot is wide) is `nil`.
///
/// Samples are added block by block, in order, so a render never has to be held whole.
public struct WaveformEnvelope: Sendable {
    public struct Column: Sendable, Equatable {
        public var minimum: Float
        public var maximum: Float
        /// Root mean square over the column's samples (every channel).
        public var rms: Float
    }

    public let totalFrames: Int
    public let columns: Int
    public let channels: Int
    private var minimum: [Float]
    private var maximum: [Float]
    private var squares: [Double]
    private var counts: [Int]
    /// Frames added so far.
    public private(set) var position = 0

    public init(totalFrames: Int, columns: Int, channels: Int) {
        precondition(columns > 0 && channels > 0 && totalFrames >= 0)
        self.totalFrames = totalFrames
        self.columns = columns
        self.channels = channels
        minimum = Array(repeating: .infinity, count: columns)
        maximum = Array(repeating: -.infinity, count: columns)
        squares = Array(repeating: 0, count: columns)
        counts = Array(repeating: 0, count: columns)
    }

    /// The column frame `frame` falls in.
    public func column(ofFrame frame: Int) -> Int {
        min(columns - 1, frame * columns / max(totalFrames, 1))
    }

    /// The first frame of column `c` (`totalFrames` for `c == columns`).
    public func firstFrame(ofColumn c: Int) -> Int {
        (c * totalFrames + columns - 1) / columns
    }

    /// Adds the next `frames` frames (interleaved, `channels` per frame).
    public mutating func add(_ samples: UnsafeBufferPointer<Float>, frames: Int) {
        precondition(samples.count >= frames * channels)
        var f = 0
        while f < frames, position < totalFrames {
            let column = column(ofFrame: position)
            // Frames of this block that stay in this column.
            let end = min(frames, f + (firstFrame(ofColumn: column + 1) - position))
            var low = minimum[column]
            var high = maximum[column]
            var sum = 0.0
            for i in (f * channels)..<(end * channels) {
                let sample = samples[i]
                low = Swift.min(low, sample)
                high = Swift.max(high, sample)
                sum += Double(sample) * Double(sample)
            }
            minimum[column] = low
            maximum[column] = high
            squares[column] += sum
            counts[column] += (end - f) * channels
            position += end - f
            f = end
        }
    }

    /// Column `c`, or nil when it covers no frame.
    public subscript(c: Int) -> Column? {
        guard counts[c] > 0 else { return nil }
        return Column(minimum: minimum[c], maximum: maximum[c], rms: Float((squares[c] / Double(counts[c])).squareRoot()))
    }
}
