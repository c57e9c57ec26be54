import Foundation
import SofaClient
import Testing

/// `sofa replicate --create-target` through the real executable: a missing target is refused
/// naming the flag (nothing created), or created, on this cluster or on another one, in the
/// source's versioning; a one-shot shows its progress on a terminal only.
@Suite(.serialized) struct CLIReplicateTests {
    private func replicate(_ arguments: [String], _ gateway: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON {
        let run = try await runSofa(["replicate"] + arguments, gateway: gateway)
        try #require(run.status == 0, "sofa replicate \(arguments.joined(separator: " ")): \(run.err)", sourceLocation: sourceLocation)
        #expect(run.err.isEmpty, "\(run.err)", sourceLocation: sourceLocation)
        return try parseOutput(run.out)
    }

    @Test func createTargetOnThisClusterAndAnother() async throws {
        try await Cluster.with { a in
            try await Cluster.with { b in
                let gw = a.supervisor.gatewayEndpoint
                let app = try await a.client.createDatabase("app", versioning: .versionVectors)
                for index in 0..<20 { _ = try await app.put(id: "d\(index)", body: Array(#"{"n":\#(index)}"#.utf8)) }

                // Without the flag: refused, naming it; nothing is created.
                let refused = try await runSofa(["replicate", "app", "backup"], gateway: gw)
                #expect(refused.status == 1)
                #expect(refused.out.isEmpty)
                expectErrorLine(refused.err, .notFound)
                #expect(refused.err.contains("'backup'") && refused.err.contains("--create-target"), "\(refused.err)")
                #expect(try await !a.client.databases().contains("backup"))
                let remote = "\(b.supervisor.gatewayEndpoint)/copy"
                let refusedRemote = try await runSofa(["replicate", "app", remote], gateway: gw)
                #expect(refusedRemote.status == 1 && refusedRemote.err.contains("--create-target"), "\(refusedRemote.err)")
                #expect(try await !b.client.databases().contains("copy"))

                // With it: created in the source's versioning, then filled.
                let local = try await replicate(["app", "backup", "--create-target"], gw)
                #expect(local.arrayValue?.first?["state"] == "completed")
                #expect(try await a.client.database("backup").info().versioning == .versionVectors)
                #expect(try await a.client.database("backup").allDocs().count == 20)
                // On the other cluster.
                let there = try await replicate(["app", remote, "--create-target"], gw)
                #expect(there.arrayValue?.first?["docs_written"] == 20)
                #expect(try await b.client.database("copy").info().versioning == .versionVectors)
                #expect(try await b.client.database("copy").allDocs().count == 20)
                // An existing target: the flag changes nothing.
                _ = try await app.put(id: "late", body: Array("{}".utf8))
                _ = try await replicate(["app", "backup", "--create-target"], gw)
                #expect(try await a.client.database("backup").get(id: "late").id == "late")
                // A pull receives into the source: it is the one created.
                _ = try await replicate(["pulled", "app", "--pull", "--create-target"], gw)
                #expect(try await a.client.database("pulled").allDocs().count == 21)

                // On a terminal, the one-shot shows done/total of the source's documents.
                _ = try await a.client.createDatabase("shown", versioning: .versionVectors)
                let shown = try await runInTerminal(["replicate", "app", "shown"], gateway: gw)
                #expect(shown.status == 0 && shown.output.contains("\rreplicate  ") && shown.output.contains("/21 docs"),
                        "\(shown.output)")
            }
        }
    }
}
