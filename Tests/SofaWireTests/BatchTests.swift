import CProtobufC
import SofaCore
@testable import SofaWire
import SofaWireC
import Testing

/// Several calls in one message (`WireBatch`): what it writes is sofa.proto's `batch` as
/// protobuf-c reads it, what it reads gives the calls back in place, and what is not a batch
/// (or not a well-formed one) is told apart.
struct WireBatchTests {
    static let requests: [Request] = [
        Request(id: 1, database: "app", operation: .getDocument(id: "a", rev: "")),
        Request(id: 300, database: "app", collection: "s.c", operation: .getDocument(id: "b", rev: "2-ab", history: true)),
        Request(id: 7, database: "ünï", operation: .putDocument(id: "c", rev: "", body: Array(repeating: 0x41, count: 200), deleted: false)),
    ]

    static func contents(_ bytes: [UInt8]) -> WireBatch.Contents {
        bytes.withUnsafeBytes { WireBatch.contents($0) }
    }

    static func encoded(_ items: [[UInt8]]) -> [UInt8] {
        let message = withArrays(items) { WireBatch.encoded($0) }
        return withExtendedLifetime(message) { Array(message.bytes) }
    }

    /// `items` as buffers for the duration of `body`.
    static func withArrays<T>(_ items: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> T) -> T {
        func nest(_ index: Int, _ buffers: [UnsafeRawBufferPointer]) -> T {
            guard index < items.count else { return body(buffers) }
            return items[index].withUnsafeBytes { nest(index + 1, buffers + [$0]) }
        }
        return nest(0, [])
    }

    @Test func encodedBatchIsTheProtosBatchAndReadsBackInOrder() throws {
        let items = Self.requests.map { $0.encoded() }
        let bytes = Self.encoded(items)
        #expect(WireBatch.encoded(arrays: items) == bytes)  // the array form writes the same bytes
        // protobuf-c reads it as a Request whose operation is `batch`, holding the same items.
        let unpacked = try #require(bytes.withUnsafeBytes {
            sofa__wire__request__unpack(nil, $0.count, $0.bindMemory(to: UInt8.self).baseAddress)
        })
        defer { sofa__wire__request__free_unpacked(unpacked, nil) }
        #expect(unpacked.pointee.op_case == SOFA__WIRE__REQUEST__OP_BATCH)
        let batch = try #require(unpacked.pointee.batch)
        #expect(batch.pointee.n_items == items.count)
        for (index, item) in items.enumerated() {
            let data = batch.pointee.items[index]
            #expect(Array(UnsafeRawBufferPointer(start: data.data, count: data.len)) == item)
        }
        // And WireBatch reads each item back as the request it was.
        guard case .items(let read) = Self.contents(bytes) else {
            Issue.record("not read as a batch")
            return
        }
        #expect(try read.map { try Request.decode(Array($0)) } == Self.requests)
    }

    @Test func aCallAloneIsNoBatch() {
        for request in Self.requests {
            guard case .single = Self.contents(request.encoded()) else {
                Issue.record("\(request) read as a batch")
                continue
            }
        }
        guard case .single = Self.contents([]) else {
            Issue.record("empty bytes read as a batch")
            return
        }
    }

    @Test func anEmptyBatchHoldsNothing() {
        guard case .items(let items) = Self.contents([0xD2, 0x05, 0x00]) else {
            Issue.record("not a batch")
            return
        }
        #expect(items.isEmpty)
    }

    static let malformed: [(String, [UInt8])] = [
        ("a batch inside a batch", encoded([encoded([Request(id: 1, operation: .health(service: "")).encoded()])])),
        ("a field after the batch", encoded([Request(id: 1, operation: .health(service: "")).encoded()]) + [0x08, 0x01]),
        ("an item that is no bytes field", [0xD2, 0x05, 0x02, 0x08, 0x01]),
        ("a length past the end", [0xD2, 0x05, 0x09, 0x0A, 0x01]),
        ("a truncated item", [0xD2, 0x05, 0x03, 0x0A, 0x05, 0x08]),
        ("more calls than a batch holds", encoded(Array(repeating: [0x08, 0x01], count: WireBatch.maxItems + 1))),
    ]

    @Test func aFullBatchIsABatch() {
        guard case .items(let items) = Self.contents(Self.encoded(Array(repeating: [0x08, 0x01], count: WireBatch.maxItems))) else {
            Issue.record("a batch of maxItems refused")
            return
        }
        #expect(items.count == WireBatch.maxItems)
    }

    /// Many small calls are grouped into as few batches as the bounds allow, in order; a large one
    /// goes alone, after those before it.
    @Test func groupedKeepsOrderAndBounds() {
        let small = (0..<(WireBatch.maxItems + 10)).map { [0x08, UInt8($0 & 0x7F)] }
        let large = [UInt8](repeating: 0x41, count: WireBatch.maxItemBytes + 1)
        let messages = small.prefix(5) + [large] + small.dropFirst(5)
        let grouped = WireBatch.grouped(Array(messages))
        var flattened: [[UInt8]] = []
        for message in grouped {
            switch Self.contents(message) {
            case .items(let items):
                #expect(items.count > 1 && items.count <= WireBatch.maxItems)
                flattened += items.map { Array($0) }
            case .single: flattened.append(message)
            case .malformed(let reason): Issue.record("grouped made a malformed batch: \(reason)")
            }
        }
        #expect(flattened == Array(messages))
        #expect(grouped.count == 4)  // 5 small, the large one, 1024 small, the last 5
    }

    @Test(arguments: malformed)
    func malformedBatchesSayWhy(_ name: String, _ bytes: [UInt8]) {
        guard case .malformed(let reason) = Self.contents(bytes) else {
            Issue.record("\(name): not refused")
            return
        }
        #expect(reason.contains("batch"), "\(name): \(reason)")
    }
}
