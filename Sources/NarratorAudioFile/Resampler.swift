import CSoxr
import NarratorCore

/// Sample-rate conversion with libsoxr (the resampler SoX uses), very high quality.
/// A whole clip is converted in one pass, so soxr's filter delay is compensated inside it:
/// frame k of the input lands at round(k × to / from) of the output, and N input frames
/// become round(N × to / from) output frames.
public enum Resampler {
    public static func convert(
        _ samples: [Float], channels: Int, from inputRate: Int, to outputRate: Int, file: String
    ) throws(NarratorError) -> [Float] {
        let inputFrames = samples.count / channels
        let outputFrames = Frames.convert(inputFrames, from: inputRate, to: outputRate)
        var output = [Float](repeating: 0, count: outputFrames * channels)
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var quality = soxr_quality_spec(UInt(SOXR_VHQ), 0)
        var done = 0
        let failure: String? = samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                guard
                    let error = soxr_oneshot(
                        Double(inputRate), Double(outputRate), UInt32(channels),
                        input.baseAddress, inputFrames, nil,
                        out.baseAddress, outputFrames, &done,
                        &ioSpec, &quality, nil)
                else { return nil }
                return String(cString: error)
            }
        }
        if let failure {
            throw NarratorError(file: file, "cannot resample \(inputRate) Hz to \(outputRate) Hz (soxr: \(failure))")
        }
        // soxr may hand back a frame less than the rounded length; the rest stays silent.
        return output
    }
}

extension Resampler {
    /// libsoxr created with the settings every conversion here uses (very high quality, 32-bit
    /// float interleaved in and out).
    static func make(from inputRate: Int, to outputRate: Int, channels: Int, file: String) throws(NarratorError) -> soxr_t {
        var error: soxr_error_t?
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var quality = soxr_quality_spec(UInt(SOXR_VHQ), 0)
        guard let soxr = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &ioSpec, &quality, nil),
            error == nil
        else {
            throw NarratorError(file: file, "cannot resample \(inputRate) Hz to \(outputRate) Hz (soxr: \(error.map { String(cString: $0) } ?? "?"))")
        }
        return soxr
    }

    /// A whole recording converted a chunk at a time, with the same samples `convert` gives for
    /// it in one pass (soxr's filter works on blocks of its own, whatever the chunks fed; the
    /// length is cut or padded with silence to round(N × to / from) frames as there).
    final class Stream {
        private let soxr: soxr_t
        private let channels: Int
        private let inputRate: Int
        private let outputRate: Int
        private let file: String
        private var output: [Float]
        private let outputFrames = 8192
        private var inputTotal = 0
        private var outputTotal = 0

        init(from inputRate: Int, to outputRate: Int, channels: Int, file: String) throws(NarratorError) {
            soxr = try Resampler.make(from: inputRate, to: outputRate, channels: channels, file: file)
            self.channels = channels
            self.inputRate = inputRate
            self.outputRate = outputRate
            self.file = file
            output = [Float](repeating: 0, count: outputFrames * channels)
        }

        deinit { soxr_delete(soxr) }

        /// Converts `input` (interleaved frames; nil: the end, soxr flushed), handing what comes
        /// out to `body`.
        func process(_ input: UnsafeBufferPointer<Float>?, _ body: (UnsafeBufferPointer<Float>) throws(NarratorError) -> Void) throws(NarratorError) {
            let frames = (input?.count ?? 0) / channels
            inputTotal += frames
            var consumed = 0
            while true {
                var inputDone = 0
                var outputDone = 0
                let failure = output.withUnsafeMutableBufferPointer { out in
                    if let input {
                        soxr_process(
                            soxr, input.baseAddress! + consumed * channels, frames - consumed, &inputDone, out.baseAddress, outputFrames, &outputDone)
                    } else {
                        soxr_process(soxr, nil, 0, nil, out.baseAddress, outputFrames, &outputDone)
                    }
                }
                if let failure { throw NarratorError(file: file, "cannot resample \(inputRate) Hz to \(outputRate) Hz (soxr: \(String(cString: failure)))") }
                consumed += inputDone
                try hand(outputDone, body)
                if input == nil ? outputDone == 0 : (consumed >= frames && outputDone < outputFrames) { break }
            }
            guard input == nil else { return }
            // soxr may hand back a frame less than the rounded length: the rest is silence.
            let wanted = Frames.convert(inputTotal, from: inputRate, to: outputRate)
            while outputTotal < wanted {
                let count = min(outputFrames, wanted - outputTotal)
                for index in 0..<(count * channels) { output[index] = 0 }
                try hand(count, body)
            }
        }

        /// Hands on the first `count` frames of `output`, up to the rounded length.
        private func hand(_ count: Int, _ body: (UnsafeBufferPointer<Float>) throws(NarratorError) -> Void) throws(NarratorError) {
            // Cut at the rounded length of what has been fed so far (the whole recording's at the end).
            let kept = min(count, max(0, Frames.convert(inputTotal, from: inputRate, to: outputRate) - outputTotal))
            guard kept > 0 else { return }
            outputTotal += kept
            try output.withUnsafeBufferPointer { buffer throws(NarratorError) in try body(UnsafeBufferPointer(rebasing: buffer[0..<(kept * channels)])) }
        }
    }
}
