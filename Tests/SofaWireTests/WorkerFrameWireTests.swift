import SofaCore
@testable import SofaWire
import SofaTestSupport
import Testing

/// `WorkerFrame`'s own codec against protobuf-c's: the same bytes out, the same frames (or the
/// same refusal) in.
@Suite struct WorkerFrameWireTests {
    static let frames: [WorkerFrame] = [
        WorkerFrame(kind: .ready),
        WorkerFrame(kind: .ready, instance: "query-1", pid: 4242, service: "query", capacity: 64, batches: true),
        WorkerFrame(kind: .heartbeat, instance: "wörker"),
        WorkerFrame(kind: .request, payload: Request(id: 9, database: "app", deadline: 1_900_000_000_000,
                                                      operation: .query(QuerySpec(text: "SELECT 1", isN1QL: true))).encoded()),
        WorkerFrame(kind: .reply, payload: Array(repeating: 0xAB, count: 300)),
        WorkerFrame(kind: .reply, payload: Array(repeating: 7, count: 70_000)),
        WorkerFrame(kind: .disconnect, instance: "a\u{0}b", service: "x"),
        WorkerFrame(kind: .cancel, requestID: .max),
        WorkerFrame(kind: .cancel, pid: .max, requestID: 1 << 35, capacity: .max),
    ]

    @Test(arguments: frames)
    func encodesAsProtobufCDoesAndReadsBack(frame: WorkerFrame) throws {
        let bytes = frame.encoded()
        #expect(bytes == frame.protobufEncoded())
        #expect(try WorkerFrame.decode(bytes) == WorkerFrame.protobufDecode(bytes))
        var expected = frame
        // A string goes up to its first NUL, as protobuf-c's C strings do.
        expected.instance = String(frame.instance.prefix { $0 != "\u{0}" })
        expected.service = String(frame.service.prefix { $0 != "\u{0}" })
        #expect(try WorkerFrame.decode(bytes) == expected)
    }

    /// Messages written by hand: repeated fields (the last wins), unknown fields (skipped), and
    /// what protobuf-c refuses (a known field with another wire type, a truncated field, an
    /// unknown kind, a string that is not UTF-8). Both readers must agree on each.
    static let messages: [[UInt8]] = [
        [],
        [0x08, 0x02, 0x08, 0x03],  // kind twice
        [0x08, 0x03, 0x2A, 0x01, 0x41, 0x2A, 0x02, 0x42, 0x43],  // payload twice
        [0x08, 0x01, 0x78, 0x05, 0x82, 0x01, 0x01, 0x00],  // fields 15 and 16, unknown
        [0x08, 0x03, 0x45, 1, 2, 3, 4],  // field 8 as a fixed32
        [0x12, 0x05, 0x61],  // instance truncated
        [0x08, 0x09],  // no such kind
        [0x08, 0x01, 0x12, 0x02, 0xC3, 0x28],  // instance not UTF-8
        [0x08, 0x01, 0x22, 0x03, 0x61, 0x00, 0xFF],  // service: a NUL, then not UTF-8
        [0x40, 0x80, 0x01],  // batches = 128, true
        [0x40, 0x80, 0x00],  // batches = 0 written long: true for protobuf-c
        [0x42, 0x01, 0x00],  // batches length-delimited
        [0x41, 0, 0, 0, 0, 0, 0, 0, 0],  // batches as a fixed64 zero
        [0x10, 0x01],  // instance as a varint
        [0x2D, 1, 2, 3, 4],  // payload as a fixed32
        [0x30, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],  // request id of 10 bytes
        [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // pid over 32 bits
        [0x08, 0x80],  // a varint cut short
        [0x07],  // field 0
    ]

    @Test(arguments: messages)
    func readsWhatProtobufCReadsAndRefusesWhatItRefuses(message: [UInt8]) {
        let ours = Result { () throws(SofaError) in try WorkerFrame.decode(message) }
        let theirs = Result { () throws(SofaError) in try WorkerFrame.protobufDecode(message) }
        switch (ours, theirs) {
        case (.success(let a), .success(let b)): #expect(a == b)
        case (.failure(let a), .failure(let b)): #expect(a.code == b.code && a.domain == b.domain)
        default: Issue.record("ours: \(ours), protobuf-c's: \(theirs)")
        }
    }

    /// Messages made of random fields (numbers 1 to 10, every wire type, varints long and short,
    /// text with and without a NUL or bad UTF-8, a cut at the end now and then): the two readers
    /// agree on each, frame for frame or refusal for refusal.
    @Test func agreesWithProtobufCOnRandomMessages() {
        var random = SplitMix64(seed: 0x5EED_F2A3)
        var disagreements: [[UInt8]] = []
        for _ in 0..<3000 {
            var message: [UInt8] = []
            for _ in 0..<(1 + random.next(below: 6)) {
                let number = 1 + random.next(below: 10)
                let wireType = [0, 0, 0, 2, 2, 2, 1, 5, 3][Int(random.next(below: 9))]
                Varint.append(number << 3 | UInt64(wireType), to: &message)
                switch wireType {
                case 0:
                    let value = [0, 1, 5, 127, 128, 1 << 32 + 3, .max][Int(random.next(below: 7))]
                    Varint.append(UInt64(value), to: &message)
                    if random.next(below: 8) == 0 { message[message.count - 1] |= 0x80; message.append(0) }  // written long
                case 1: message += random.bytes(8)
                case 5: message += random.bytes(4)
                case 2:
                    var body: [UInt8]
                    switch random.next(below: 4) {
                    case 0: body = Array("query-\(random.next(below: 100))".utf8)
                    case 1: body = Array("a\u{0}b".utf8)
                    case 2: body = [0xC3, 0x28]
                    default: body = random.bytes(Int(random.next(below: 40)))
                    }
                    Varint.append(UInt64(body.count), to: &message)
                    message += body
                default: break
                }
            }
            if random.next(below: 10) == 0, !message.isEmpty { message.removeLast(Int(random.next(below: UInt64(message.count))) + 1) }
            let ours = Result { () throws(SofaError) in try WorkerFrame.decode(message) }
            let theirs = Result { () throws(SofaError) in try WorkerFrame.protobufDecode(message) }
            switch (ours, theirs) {
            case (.success(let a), .success(let b)) where a == b: continue
            case (.failure(let a), .failure(let b)) where a.code == b.code && a.domain == b.domain: continue
            default: disagreements.append(message)
            }
        }
        #expect(disagreements.isEmpty, "first disagreement: \(disagreements.first ?? [])")
    }
}
