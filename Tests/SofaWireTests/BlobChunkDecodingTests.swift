import SofaCore
@testable import SofaWire
import Testing

/// A blob chunk request is decoded by walking its fields (one copy of its bytes); what that gives
/// must be what protobuf-c's decoder gives, and anything it does not take goes to that decoder.
struct BlobChunkDecodingTests {
    /// The chunk requests by size (a test's argument is printed, so the request is made here).
    static func chunk(_ size: Int) -> Request {
        switch size {
        case 0: Request(operation: .blobWriteChunk(writeID: 0, offset: 0, bytes: []))
        case 256: Request(id: 1, database: "app", operation: .blobWriteChunk(writeID: 7, offset: 1 << 40, bytes: Array(0...255)))
        default: Request(id: .max, database: "ünï", collection: "s.c", deadline: 1_800_000_000_000, actingUser: "alice",
                         operation: .blobWriteChunk(writeID: .max, offset: 0, bytes: [UInt8](repeating: 0xA5, count: size)))
        }
    }

    @Test(arguments: [0, 256, 1 << 20])
    func walkedAsProtobufCDecodesIt(_ size: Int) throws {
        let request = Self.chunk(size)
        let bytes = request.encoded()
        let walked = try #require(bytes.withUnsafeBytes { BlobChunkDecoding.request($0) })
        let unpacked = try bytes.withUnsafeBytes { (buffer) throws(SofaError) -> Request in try Request.unpacked(buffer) }
        #expect(walked == unpacked)
        #expect(walked == request)
    }

    @Test func otherRequestsAreLeftToProtobufC() throws {
        let others = [
            Request(id: 2, database: "app", operation: .blobWriteEnd(writeID: 7, length: 3)),
            Request(id: 3, database: "app", operation: .getDocument(id: "a", rev: "")),
        ]
        for request in others {
            #expect(request.encoded().withUnsafeBytes { BlobChunkDecoding.request($0) } == nil)
        }
        // A database name with a NUL: protobuf-c's C string ends there; the general decoder reads it.
        var nul = Request(id: 4, database: "a~b", operation: .blobWriteChunk(writeID: 1, offset: 0, bytes: [1])).encoded()
        nul[try #require(nul.firstIndex(of: UInt8(ascii: "~")))] = 0
        #expect(nul.withUnsafeBytes { BlobChunkDecoding.request($0) } == nil)
        // Truncated: not well formed, so left to the decoder that says so.
        nul.removeLast()
        #expect(nul.withUnsafeBytes { BlobChunkDecoding.request($0) } == nil)
        #expect(throws: SofaError.self) { try Request.decode(nul) }
    }
}
