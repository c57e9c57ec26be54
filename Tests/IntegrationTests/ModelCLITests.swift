import Foundation
import SofaClient
import SofaCore
import Testing

/// `sofa package` and `sofa snapshot` as a user types them, and the example app's executable.
@Suite(.serialized) struct ModelCLITests {
    @Test func packagesAndSnapshotsFromTheCommandLine() async throws {
        try await Cluster.with { cluster in
            let gateway = cluster.supervisor.gatewayEndpoint
            func sofa(_ arguments: [String]) async throws -> String {
                let run = try await runSofa(arguments, gateway: gateway)
                #expect(run.status == 0, "sofa \(arguments.joined(separator: " ")): \(run.err)")
                return run.out
            }
            _ = try await sofa(["package", "create", "shop", "orders", "items"])
            #expect(try await sofa(["package", "list"]) == "shop\n")
            #expect(try await sofa(["package", "list", "shop"]) == "items\norders\n")
            let orders = cluster.client.database("shop+orders")
            _ = try await orders.put(id: "o1", json: #"{"objectType":"Order","total":10}"#)
            #expect(try await sofa(["snapshot", "create", "shop", "first"]).contains("first\t"))
            #expect(try await sofa(["snapshot", "list", "shop"]).hasPrefix("first\t"))
            let o1 = try await orders.get(id: "o1")
            _ = try await orders.put(id: "o1", json: #"{"objectType":"Order","total":99}"#, rev: o1.rev)
            _ = try await orders.put(id: "o2", json: #"{"objectType":"Order","total":5}"#)
            #expect(try await sofa(["snapshot", "restore", "shop", "first"]) == "restored first: 1 written, 1 deleted\n")
            #expect(try await orders.get(id: "o1").json()["total"] == 10)
            await #expect(throws: SofaError.self) { _ = try await orders.get(id: "o2") }
            let missing = try await runSofa(["snapshot", "restore", "shop", "nope"], gateway: gateway)
            #expect(missing.status != 0 && missing.err.contains("no snapshot 'nope'"))
            _ = try await sofa(["package", "delete", "shop"])
            #expect(try await sofa(["package", "list"]) == "")
            let bad = try await runSofa(["package", "create", "Bad+Name"], gateway: gateway)
            #expect(bad.status != 0 && bad.err.contains("invalid package name"))
        }
    }

    @Test func theExampleAppWritesAndListsItsNotes() async throws {
        try await Cluster.with { cluster in
            let run = try await runSofa([], gateway: cluster.supervisor.gatewayEndpoint, executable: "sofa-notes-example")
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out == "Bread: flour, water, salt\n")
            #expect(try await Package.list(cluster.client) == ["notes"])
        }
    }
}
