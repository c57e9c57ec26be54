import SofaCore
import SofaWire

/// Micro-benchmarks of the SofaCore codecs: how many operations per second each manages,
/// measured over about `secondsPerFigure` of a monotonic clock (`ContinuousClock`).
public enum CodecBenchmarks {
    public static let secondsPerFigure = 0.3

    public static func run() -> [(name: String, perSecond: Double)] {
        let revID = try! RevID.parse("42-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55")
        let revASCII = revID.ascii
        let revBinary = revID.binary
        let vector = try! VersionVector.parse("1a2b3c@*,17@c0ffee01,3@a1b2c3d4e5f6,1@77")
        let vectorASCII = vector.ascii
        let vectorBinary = vector.binary
        let document = sampleDocument
        let documentBytes = document.compactBytes()
        var results: [(name: String, perSecond: Double)] = []

        results.append(("RevID parse ASCII", measure { sink(try! RevID.parse(revASCII).generation) }))
        results.append(("RevID encode ASCII", measure { sink(UInt32(revID.ascii.utf8.count)) }))
        results.append(("RevID parse binary", measure { sink(try! RevID(binary: revBinary).generation) }))
        results.append(("RevID encode binary", measure { sink(UInt32(revID.binary.count)) }))
        results.append(("VersionVector parse ASCII", measure { sink(UInt32(try! VersionVector.parse(vectorASCII).count)) }))
        results.append(("VersionVector encode ASCII", measure { sink(UInt32(vector.ascii.utf8.count)) }))
        results.append(("VersionVector parse binary", measure { sink(UInt32(try! VersionVector(binary: vectorBinary).count)) }))
        results.append(("VersionVector encode binary", measure { sink(UInt32(vector.binary.count)) }))
        results.append(("revIDs generated (\(documentBytes.count)-byte body)", measure {
            sink(RevID.generate(parent: revID, deleted: false, body: document).generation)
        }))
        results.append(("JSON parse (\(documentBytes.count)-byte doc)", measure {
            sink(UInt32(try! JSON.parse(documentBytes).objectValue!.count))
        }))
        results.append(("JSON encode compact (\(documentBytes.count)-byte doc)", measure {
            sink(UInt32(document.compactBytes().count))
        }))
        // A get as the gateway takes it up (its envelope peeked first), then read whole through
        // protobuf-c, or by walking its fields (`documentGet`).
        let get = Request(id: 7, database: "app", deadline: 1_800_000_000_000, operation: .getDocument(id: "doc", rev: "")).encoded()
        let operations: Set<UInt32> = [OperationKind.getDocument.rawValue]
        results.append(("get request peeked and decoded whole", measure {
            let peeked = get.withUnsafeBytes { ForwardedRequest.peek($0, operations: operations) }!
            sink(UInt32(try! Request.decode(peeked.bytes(id: peeked.id, deadline: peeked.deadline)).database.utf8.count))
        }))
        results.append(("get request peeked and walked", measure {
            let peeked = get.withUnsafeBytes { ForwardedRequest.peek($0, operations: operations) }!
            sink(UInt32(peeked.documentGet!.id.utf8.count))
        }))
        return results
    }

    /// A document of about 300 bytes of compact JSON, with the usual mix of types.
    static let sampleDocument: JSON = [
        "type": "order", "customer": "Ada Lovelace", "status": "shipped",
        "total": 1234.5, "paid": true, "created": 1_732_000_000, "notes": nil,
        "address": ["street": "12 Analytical Row", "city": "London", "country": "UK"],
        "items": [
            ["sku": "ENG-001", "qty": 2, "price": 499.5],
            ["sku": "CARD-77", "qty": 10, "price": 23.55],
        ],
        "tags": ["gift", "ünïcode"],
    ]

    /// Runs `body` in batches until `secondsPerFigure` has passed; returns calls per second.
    static func measure(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        for _ in 0..<100 { body() }  // warm up
        var calls = 0
        var batch = 64
        let start = clock.now
        var elapsed = Duration.zero
        while elapsed < .seconds(secondsPerFigure) {
            for _ in 0..<batch { body() }
            calls += batch
            elapsed = clock.now - start
            if elapsed < .milliseconds(10) { batch *= 2 }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Double(calls) / seconds
    }

    /// Hands a result to an opaque call so the optimizer cannot drop the measured work.
    @inline(never) @_optimize(none) static func sink(_ value: UInt32) { _ = value }
}
