import SofaCore
import SofaWire
import Testing

/// `ForwardedRequest` / `ForwardedResponse`: what the gateway reads of a message it passes on
/// undecoded, and the message it passes on.
@Suite struct ForwardingTests {
    static let bulk = Request(id: 7, database: "app", collection: "s.c", deadline: 1_900_000_000_000, operation: .bulkWrite([
        .put(id: "a", rev: "", body: Array(#"{"x":1}"#.utf8), deleted: false),
        .put(id: "b", rev: "1-abcd", body: Array("{}".utf8), deleted: true),
    ]))

    @Test func aRequestGoesOnWithOnlyItsIDAndDeadlineReplaced() throws {
        let bytes = Self.bulk.encoded()
        let peeked = try #require(bytes.withUnsafeBytes { ForwardedRequest.peek($0, operations: [24]) })
        #expect(peeked.id == 7)
        #expect(peeked.database == "app")
        #expect(peeked.deadline == 1_900_000_000_000)
        #expect(peeked.operationField == 24)
        let message = peeked.encoded(id: 99, deadline: 5)
        let passed = try Request.decode(copy(message))
        var expected = Self.bulk
        expected.id = 99
        expected.deadline = 5
        #expect(passed == expected)
        // A zero id or deadline is left out, as the encoder leaves it out.
        let unset = try Request.decode(copy(peeked.encoded(id: 0, deadline: 0)))
        #expect(unset.id == 0 && unset.deadline == 0 && unset.operation == Self.bulk.operation)
    }

    @Test func otherOperationsAndMalformedBytesAreLeftToTheDecoder() {
        let bytes = Self.bulk.encoded()
        #expect(bytes.withUnsafeBytes { ForwardedRequest.peek($0, operations: [15, 16]) } == nil)
        #expect(Request(id: 1, operation: .listDatabases).encoded().withUnsafeBytes { ForwardedRequest.peek($0, operations: [24]) } == nil)
        let malformed: [[UInt8]] = [
            Array(bytes.dropLast()),  // the operation's length runs past the end
            [0x08],  // a tag without its value
            [0x0B, 0x00],  // a group (wire type 3)
            [0x00, 0x01],  // field number 0
            [0x12, 0x02, 0xFF, 0xFE] + Array(bytes),  // a database name that is not UTF-8
            [0x0A, 0x01, 0x00] + Array(bytes),  // the id as bytes, not a varint
        ]
        for case let sample in malformed {
            #expect(sample.withUnsafeBytes { ForwardedRequest.peek($0, operations: [24]) } == nil, "\(sample.prefix(8))")
        }
    }

    @Test func aResponseGoesBackWithTheCallersID() throws {
        let response = Response.ok(41, .bulk([BulkItemResult(id: "a", rev: "1-abcd", sequence: 3)]))
        let bytes = response.encoded()
        #expect(bytes.withUnsafeBytes { ForwardedResponse.peekID($0) } == 41)
        let back = try Response.decode(copy(ForwardedResponse.encoded(bytes, id: 6)))
        var expected = response
        expected.id = 6
        #expect(back == expected)
        let failure = Response.failure(8, SofaError(.conflict, "no"))
        #expect(try Response.decode(copy(ForwardedResponse.encoded(failure.encoded(), id: 2))).outcome == failure.outcome)
        #expect([UInt8]([0x08]).withUnsafeBytes { ForwardedResponse.peekID($0) } == nil)
    }

    /// The bytes of a message (which owns them, so it must live until they are copied).
    func copy(_ message: EncodedMessage) -> [UInt8] {
        withExtendedLifetime(message) { Array(message.bytes) }
    }

    @Test func aCommitNoticeSummaryHasItsPlaceAndHighestSequence() throws {
        let changes = [Change(sequence: 41, id: "a", rev: "1-aa"), Change(sequence: 43, id: "b", rev: "2-bb", deleted: true),
                       Change(sequence: 42, id: "c", rev: "")]
        let notice = CommitNotice(database: "app", collection: "s.c", batch: ChangesBatch(changes: changes, lastSequence: 43))
        #expect(CommitNotice.summary(notice.encoded()) == .init(database: "app", collection: "s.c", lastSequence: 43))
        // Without a last sequence, the highest change's; an empty batch and default names are zeros and "".
        let unset = CommitNotice(database: "app", collection: "", batch: ChangesBatch(changes: changes, lastSequence: 0))
        #expect(CommitNotice.summary(unset.encoded()) == .init(database: "app", collection: "", lastSequence: 43))
        let empty = CommitNotice(database: "", collection: "", batch: ChangesBatch(changes: [], lastSequence: 0))
        #expect(CommitNotice.summary(empty.encoded()) == .init(database: "", collection: "", lastSequence: 0))
        // What decoding refuses, the summary refuses.
        let bytes = notice.encoded()
        for bad in [Array(bytes.dropLast()), [0xFF, 0xFF], [0x0A, 0x05, 0x61]] {
            #expect(CommitNotice.summary(bad) == nil)
            #expect(throws: SofaError.self) { try CommitNotice.decode(bad) }
        }
        #expect(CommitNotice.summary([0x0A, 0x02, 0xC3, 0x28]) == nil, "a database name that is not UTF-8")
    }
}
