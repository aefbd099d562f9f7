import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import NarratorService
import Testing

/// The daemon writes a moment's WebSocket text frames itself, headers and payloads in one buffer
/// (`ChannelOutlet`; NIO's encoder would put each header in a buffer of its own). The ground
/// truth: RFC 6455's own example bytes (§5.7), and NIO's frame decoder reading the buffer back
/// at every length form (7-bit, 16-bit and 64-bit lengths, and each boundary between them).
@Suite struct WebSocketFramingTests {
    /// §5.7: "A single-frame unmasked text message: 0x81 0x05 0x48 0x65 0x6c 0x6c 0x6f" and the
    /// 16- and 64-bit length forms of its 256-byte and 64 KiB examples (there binary, 0x82).
    @Test func headersAreTheRFCsExamples() {
        func header(_ length: Int) -> [UInt8] {
            var buffer = ByteBufferAllocator().buffer(capacity: 10)
            buffer.writeWebSocketTextHeader(length: length)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        #expect(header(5) == [0x81, 0x05])
        #expect(header(256) == [0x81, 0x7E, 0x01, 0x00])
        #expect(header(65_536) == [0x81, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
    }

    @Test func nioDecodesEveryLengthForm() throws {
        let lengths = [0, 1, 125, 126, 127, 65_535, 65_536, 70_000]
        let payloads = lengths.enumerated().map { index, length in
            String((0..<length).map { Character(Unicode.Scalar(UInt8(97 + ($0 + index) % 26))) })
        }
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        for payload in payloads {
            buffer.writeWebSocketTextHeader(length: payload.utf8.count)
            buffer.writeString(payload)
        }
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
        try channel.writeInbound(buffer)
        var decoded: [String] = []
        while let frame = try channel.readInbound(as: WebSocketFrame.self) {
            #expect(frame.fin && frame.opcode == .text && frame.maskKey == nil)
            var data = frame.data
            decoded.append(data.readString(length: data.readableBytes) ?? "?")
        }
        #expect(decoded.map(\.utf8.count) == lengths)
        #expect(decoded == payloads)
        _ = try channel.finish()
    }
}
