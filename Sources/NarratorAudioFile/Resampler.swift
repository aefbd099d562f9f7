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
