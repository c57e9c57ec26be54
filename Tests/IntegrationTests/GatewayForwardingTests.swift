import Foundation
import SofaBus
import SofaServer
import SofaClient
import SofaCore
import SofaWire
import Testing

/// Document reads and writes pass through the gateway undecoded (`GatewayService.passedThrough`, from the routing table):
/// each answer still reaches the call that asked, with that call's id, when many are in flight on
/// one connection; and a request the gateway cannot route is refused there.
@Suite(.serialized) struct GatewayForwardingTests {
    @Test func manyForwardedCallsInFlightEachGetTheirOwnAnswer() async throws {
        try await Cluster.with { cluster in
            _ = try await cluster.client.createDatabase("fwd")
            let bus = try await connectedBus(cluster.supervisor.gatewayEndpoint)
            defer { bus.close() }
            // One bulk write of 300 documents, then 300 reads at once, plus writes that conflict.
            let items = (0..<300).map { BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            guard case .bulk(let written) = try await bus.call(.bulkWrite(items), database: "fwd") else {
                Issue.record("no bulk result"); return
            }
            #expect(written.count == 300 && written.allSatisfy { $0.error == nil })
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<300 {
                    group.addTask {
                        guard case .document(let doc) = try await bus.call(.getDocument(id: "d\(n)", rev: "", history: false), database: "fwd") else {
                            Issue.record("d\(n): not a document"); return
                        }
                        #expect(doc.id == "d\(n)" && doc.body == Array(#"{"n":\#(n)}"#.utf8) && doc.rev == written[n].rev)
                    }
                    group.addTask {
                        // Already exists, no rev given: a conflict, answered to this call.
                        await #expect(throws: SofaError.self) {
                            _ = try await bus.call(.putDocument(id: "d\(n)", rev: "", body: Array("{}".utf8), deleted: false), database: "fwd")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let missing = await #expect(throws: SofaError.self) {
                _ = try await bus.call(.getDocument(id: "nope", rev: "", history: false), database: "fwd")
            }
            #expect(missing?.is(.notFound) == true, "\(String(describing: missing))")
            let unnamed = await #expect(throws: SofaError.self) { _ = try await bus.call(.bulkWrite(items), database: "") }
            #expect(unnamed?.is(.invalidParameter) == true && unnamed?.message.contains("bulkWrite needs a database name") == true,
                    "\(String(describing: unnamed))")
            // Blob requests go on to sofa-blob the same way, and come back with its answers.
            let stat = await #expect(throws: SofaError.self) {
                _ = try await bus.call(.blobStat(key: "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E="), database: "fwd")
            }
            #expect(stat?.is(.notFound) == true, "\(String(describing: stat))")
            let noBlobDatabase = await #expect(throws: SofaError.self) {
                _ = try await bus.call(.blobWriteBegin(expectedKey: ""), database: "")
            }
            #expect(noBlobDatabase?.message.contains("blobWriteBegin needs a database name") == true, "\(String(describing: noBlobDatabase))")
            let badKey = await #expect(throws: SofaError.self) {
                _ = try await bus.call(.blobRead(key: "sha1-../../etc/passwd", offset: 0, length: 10), database: "fwd")
            }
            #expect(badKey?.is(.invalidParameter) == true, "\(String(describing: badKey))")
        }
    }
}
