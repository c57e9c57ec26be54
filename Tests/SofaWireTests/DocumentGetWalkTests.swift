import SofaCore
@testable import SofaWire
import Testing

/// A router reads a get's fields by walking them (`ForwardedRequest.documentGet`); what that gives
/// must be what decoding the whole request gives, and anything it does not take is left to that.
struct DocumentGetWalkTests {
    static let gets: [Request] = [
        Request(id: 1, database: "app", operation: .getDocument(id: "doc", rev: "")),
        Request(id: 2, database: "app", deadline: 1_800_000_000_000, operation: .getDocument(id: "a/b c", rev: "2-ab", history: true)),
        Request(id: .max, database: "ünï", collection: "s.c", actingUser: "alice",
                operation: .getDocument(id: "ドキュメント", rev: "", openLeaves: true)),
        Request(id: 4, database: "app", collection: "_default", operation: .getDocument(id: "", rev: "")),
    ]

    /// The peeked request of `bytes`, as the gateway sees one.
    static func peeked(_ bytes: [UInt8]) throws -> ForwardedRequest {
        try #require(bytes.withUnsafeBytes { ForwardedRequest.peek($0, operations: [OperationKind.getDocument.rawValue]) })
    }

    @Test(arguments: 0..<gets.count)
    func walkedAsTheDecoderReadsIt(_ index: Int) throws {
        let request = Self.gets[index]
        let decoded = try Request.decode(request.encoded())
        guard case .getDocument(let id, let rev, let history, let openLeaves) = decoded.operation else {
            Issue.record("not a get: \(decoded.operation)")
            return
        }
        let walked = try #require(try Self.peeked(request.encoded()).documentGet)
        #expect(walked == .init(collection: decoded.collection, id: id, rev: rev, history: history, openLeaves: openLeaves))
    }

    @Test func whatTheWalkDoesNotTakeIsLeftToTheDecoder() throws {
        // A NUL inside the revision: protobuf-c reads a C string, which ends there.
        var nul = Request(id: 1, database: "app", operation: .getDocument(id: "doc", rev: "1-a~b")).encoded()
        nul[try #require(nul.firstIndex(of: UInt8(ascii: "~")))] = 0
        #expect(try Self.peeked(nul).documentGet == nil)
        guard case .getDocument(_, let rev, _, _) = try Request.decode(nul).operation else {
            Issue.record("not a get")
            return
        }
        #expect(rev == "1-a")
        // A field the walk does not know (6, a varint) after the operation: left to the decoder.
        let unknown = Request(id: 2, database: "app", operation: .getDocument(id: "doc", rev: "")).encoded() + [6 << 3, 1]
        #expect(try Self.peeked(unknown).documentGet == nil)
        // An id that is not UTF-8: the decoder refuses it, with its message.
        var latin = Request(id: 3, database: "app", operation: .getDocument(id: "d~c", rev: "")).encoded()
        latin[try #require(latin.firstIndex(of: UInt8(ascii: "~")))] = 0xE9
        #expect(try Self.peeked(latin).documentGet == nil)
        #expect(throws: SofaError.self) { try Request.decode(latin) }
        // Another operation has no get to read.
        let put = Request(id: 4, database: "app", operation: .putDocument(id: "doc", rev: "", body: Array("{}".utf8), deleted: false))
        let forwarded = try #require(put.encoded().withUnsafeBytes {
            ForwardedRequest.peek($0, operations: [OperationKind.putDocument.rawValue])
        })
        #expect(forwarded.documentGet == nil)
    }
}
