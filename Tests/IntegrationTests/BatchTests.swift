import Foundation
import SofaClient
import SofaCore
@testable import SofaWire
import Testing

/// Calls sent as one message (`WireBatch`) through the real gateway: each is answered as if it
/// had come alone, a client that sent a batch gets its ready replies in batches, a malformed
/// batch is refused without harm, and the SDK's calls made together (which it batches) all get
/// their own answers, large ones included.
@Suite(.serialized) struct BatchTests {
    /// The responses in `messages`, each batch taken apart.
    static func responses(_ messages: [[UInt8]]) throws -> [Response] {
        try messages.flatMap { message -> [Response] in
            switch message.withUnsafeBytes({ WireBatch.contents($0) }) {
            case .single: return [try Response.decode(message)]
            case .items(let items): return try items.map { try Response.decode(Array($0)) }
            case .malformed(let reason): throw SofaError(.malformedMessage, reason)
            }
        }
    }

    static func batch(_ requests: [Request]) -> [UInt8] {
        wrap(requests.map { $0.encoded() })
    }

    /// A batch of `items`, whatever they are.
    static func wrap(_ items: [[UInt8]]) -> [UInt8] {
        WireBatch.encoded(arrays: items)
    }

    /// Eleven gets in one message: ten documents and one that does not exist. Each is answered
    /// under its own id, and as the gateway reads them together, their answers come back together,
    /// in one batch.
    @Test func getsInOneMessageAreAnsweredInOneBatch() async throws {
        try await Cluster.with { cluster in
            // The gateway says it takes batches (the SDK sends them only then).
            #expect(try await cluster.client.health().batches)
            let app = try await cluster.client.createDatabase("app")
            for n in 1...10 { _ = try await app.put(id: "d\(n)", json: #"{"n":\#(n)}"#) }
            let gets = (1...11).map { n in
                Request(id: UInt64(n), database: "app", operation: .getDocument(id: "d\(n)", rev: ""))
            }
            let raw = RawDealer(cluster.supervisor.gatewayEndpoint)
            raw.send([Self.batch(gets)])
            let handed = HandedOver(raw)
            let message = try #require(await onThread { handed.value.receive(timeoutMs: 120_000) })  // a hang guard
            guard case .items(let items) = message.withUnsafeBytes({ WireBatch.contents($0) }) else {
                Issue.record("the answer is no batch")
                return
            }
            #expect(items.count == 11)
            let responses = try Self.responses([message])
            for n in 1...10 {
                let response = try #require(responses.first { $0.id == UInt64(n) })
                guard case .success(.document(let document)) = response.outcome else {
                    Issue.record("get \(n): \(response.outcome)")
                    continue
                }
                #expect(document.id == "d\(n)")
                #expect(document.body == Array(#"{"n":\#(n)}"#.utf8))
            }
            let missing = try #require(responses.first { $0.id == 11 })
            guard case .failure(let error) = missing.outcome else {
                Issue.record("d11 was found")
                return
            }
            #expect(error.is(.notFound))
        }
    }

    /// A batch inside a batch, a batch with another field, and a malformed call inside a batch are
    /// each refused with `malformedMessage`; the well-formed calls of the last batch are answered,
    /// and so is the next message.
    @Test func malformedBatchesAreRefusedAndTheConnectionServesOn() async throws {
        try await Cluster.with { cluster in
            let echo = Request(id: 1, operation: .echo(payload: [1], delayMs: 0, service: ""))
            let raw = RawDealer(cluster.supervisor.gatewayEndpoint)
            raw.send([Self.wrap([Self.batch([echo])])])
            raw.send([Self.batch([echo]) + [0x08, 0x01]])
            let withGarbage = Self.batch([Request(id: 2, operation: .echo(payload: [2], delayMs: 0, service: "")),
                                          Request(id: 3, operation: .echo(payload: [3], delayMs: 0, service: ""))])
            // The second item's bytes become garbage: its tag is replaced by an invalid one.
            var corrupted = withGarbage
            let second = try #require(Self.secondItemOffset(withGarbage))
            corrupted[second] = 0x07  // field 0, wire type 7: no protobuf message starts so
            raw.send([corrupted])
            raw.send([Request(id: 4, operation: .echo(payload: [4], delayMs: 0, service: "")).encoded()])
            let handed = HandedOver(raw)
            var responses: [Response] = []
            let end = ContinuousClock.now + .seconds(120)  // a hang guard: answers come as soon as they are made
            while responses.count < 5, ContinuousClock.now < end {
                guard let message = await onThread({ handed.value.receive(timeoutMs: 1_000) }) else { continue }
                responses += try Self.responses([message])
            }
            let failures = responses.compactMap { response -> SofaError? in
                if case .failure(let error) = response.outcome { return error } else { return nil }
            }
            #expect(failures.count == 3, "\(responses)")
            #expect(failures.allSatisfy { $0.is(.malformedMessage) }, "\(failures)")
            #expect(failures.contains { $0.message.contains("a batch holds no batch") }, "\(failures)")
            #expect(failures.contains { $0.message.contains("holds its batch and nothing else") }, "\(failures)")
            #expect(responses.contains { response in
                guard response.id == 2, case .success(.echo(let payload, _)) = response.outcome else { return false }
                return payload == [2]
            })
            #expect(responses.contains { $0.id == 4 })
            #expect(!responses.contains { $0.id == 3 })
        }
    }

    /// The offset of the second item's first byte in a batch of two made by `batch`.
    static func secondItemOffset(_ bytes: [UInt8]) -> Int? {
        guard case .items(let items) = bytes.withUnsafeBytes({ WireBatch.contents($0) }), items.count == 2 else { return nil }
        return bytes.withUnsafeBytes { base in items[1].baseAddress! - base.baseAddress! }
    }

    /// 32 tasks on the connection's thread, each writing and reading back one small and one large
    /// document (40 KiB, which goes alone) at once: the SDK sends the small calls in batches, and
    /// every call gets its own answer.
    @Test func callsMadeTogetherThroughTheSDKEachGetTheirOwnAnswer() async throws {
        try await Cluster.with { cluster in
            // What is checked is each call's answer, not how soon it comes: beside the rest of the
            // suite (load average 34), one of these 320 writes once waited past the usual 10 s.
            let client = try await cluster.supervisor.connect(timeout: .seconds(120))
            defer { client.close() }
            let app = try await client.createDatabase("app")
            let large = String(repeating: "x", count: 40 << 10)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<32 {
                    group.addTask(executorPreference: client.executor) {
                        for round in 0..<5 {
                            let small = #"{"lane":\#(lane),"round":\#(round)}"#
                            let big = #"{"lane":\#(lane),"text":"\#(large)"}"#
                            async let smallPut = app.put(id: "s\(lane)-\(round)", json: small)
                            async let bigPut = app.put(id: "b\(lane)-\(round)", json: big)
                            _ = try await (smallPut, bigPut)
                            async let smallGet = app.get(id: "s\(lane)-\(round)")
                            async let bigGet = app.get(id: "b\(lane)-\(round)")
                            let (readSmall, readBig) = try await (smallGet, bigGet)
                            #expect(readSmall.body == Array(small.utf8))
                            #expect(readBig.body == Array(big.utf8))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await app.info().documentCount == 320)
        }
    }
}
