import CRsvgLoader
import Foundation
import NarratorCore

/// Writing a plot: SVG as it is, PNG rasterized from the same SVG by librsvg into a cairo
/// image surface. Either file appears under its name only when complete (`AtomicFile`).
public enum PlotFile {
    public enum Format: String, Sendable {
        case svg, png
    }

    /// The format `path`'s extension names, or an error naming the file.
    public static func format(of path: String) throws(NarratorError) -> Format {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        guard let format = Format(rawValue: ext) else {
            throw NarratorError(file: path, "cannot write '.\(ext)' (expected .svg or .png)")
        }
        return format
    }

    /// Writes `svg` to `path` as SVG, or rasterized at `width` × `height` as PNG.
    public static func write(svg: String, width: Int, height: Int, to path: String) throws(NarratorError) {
        switch try format(of: path) {
        case .svg: try AtomicFile.write(svg, to: path)
        case .png: try AtomicFile.write(try rasterize(svg: svg, width: width, height: height, for: path), to: path)
        }
    }

    /// The SVG drawn by librsvg on a `width` × `height` ARGB image, as PNG bytes.
    public static func rasterize(svg: String, width: Int, height: Int, for path: String) throws(NarratorError) -> Data {
        let bytes = Array(svg.utf8)
        var error: UnsafeMutablePointer<GError>?
        // librsvg, cairo, GObject and GLib are loaded here, by the first PNG, not at process start.
        if let failure = narrator_rsvg_open() {
            throw NarratorError(file: path, "cannot write PNG: \(String(cString: failure))")
        }
        guard let handle = rsvg_handle_new_from_data(bytes, gsize(bytes.count), &error) else {
            throw NarratorError(file: path, "cannot read the plot's SVG (librsvg: \(message(taking: error)))")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(handle)) }
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height)),
            cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS
        else {
            throw NarratorError(file: path, "cannot make a \(width) × \(height) image (cairo)")
        }
        defer { cairo_surface_destroy(surface) }
        let context = cairo_create(surface)
        defer { cairo_destroy(context) }
        var viewport = RsvgRectangle(x: 0, y: 0, width: Double(width), height: Double(height))
        guard rsvg_handle_render_document(handle, context, &viewport, &error) != 0 else {
            throw NarratorError(file: path, "cannot draw the plot (librsvg: \(message(taking: error)))")
        }
        cairo_surface_flush(surface)
        let sink = PNGSink()
        let status = cairo_surface_write_to_png_stream(
            surface,
            { closure, data, length in
                guard let closure, let data else { return CAIRO_STATUS_WRITE_ERROR }
                Unmanaged<PNGSink>.fromOpaque(closure).takeUnretainedValue().data.append(data, count: Int(length))
                return CAIRO_STATUS_SUCCESS
            }, Unmanaged.passUnretained(sink).toOpaque())
        guard status == CAIRO_STATUS_SUCCESS else {
            throw NarratorError(file: path, "cannot encode the PNG (cairo: \(String(cString: cairo_status_to_string(status))))")
        }
        return withExtendedLifetime(sink) { sink.data }
    }

    private final class PNGSink {
        var data = Data()
    }

    private static func message(taking error: UnsafeMutablePointer<GError>?) -> String {
        guard let error else { return "unknown error" }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    }
}
