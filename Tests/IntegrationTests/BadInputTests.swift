import Foundation
import SofaClient
import SofaCore
import Testing
import SofaCluster
import SofaTestSupport

/// Odd IDs, revisions and sizes through real processes: each is refused with an error that says
/// what is wrong, by the SDK and by storage itself, and nothing is written.
@Suite(.serialized) struct BadInputTests {
    static let badIDs: [(String, String)] = [
        ("_foo", "Only reserved document ids"), ("_sync:abc", "Only reserved document ids"), ("_design/", "no name after"),
        ("evil\u{202E}txt.exe", "bidirectional control U+202E"), ("two\u{2028}lines", "separator U+2028"),
    ]

    @Test func oddIDsAreRefusedBySDKAndStorage() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("ids")
            for (id, reason) in Self.badIDs {
                do throws(SofaError) {
                    _ = try await db.put(id: id, json: "{}")
                    Issue.record("put \(id.debugDescription) was accepted")
                } catch {
                    #expect(error.is(.badDocID) && error.message.contains(reason), "\(error)")
                }
            }
            // A bulk write is checked by storage, item by item; the good item is written.
            let results = try await db.bulk(Self.badIDs.map { .put(id: $0.0, rev: "", body: Array("{}".utf8), deleted: false) }
                                            + [.put(id: "fine", rev: "", body: Array("{}".utf8), deleted: false)])
            for (result, (_, reason)) in zip(results, Self.badIDs) {
                #expect(result.error?.is(.badDocID) == true && result.error?.message.contains(reason) == true, "\(result)")
            }
            #expect(results.last?.error == nil)
            #expect(try await db.allDocs().map(\.id) == ["fine"])
            // The reserved prefixes are taken.
            _ = try await db.put(id: "_design/app", json: #"{"views":{}}"#)
            _ = try await db.putLocal(id: "_local/mark", json: "{}")
        }
    }

    // Off the cooperative pool: it waits for a process to exit.
    @Test(.ownThreads) func cliRefusesArgumentsThatAreNotUTF8() async throws {
        try await Cluster.with { cluster in
            _ = try await cluster.client.createDatabase("utf")
            let sofa = Supervisor.defaultBinDirectory.appendingPathComponent("sofa").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", "exec \"$0\" put utf \"$(printf 'bad\\377id')\" '{}' --gateway \"$1\"",
                                 sofa, cluster.supervisor.gatewayEndpoint]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = Pipe()
            try process.run()
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 1)
            #expect(message.contains("argument 3 is not valid UTF-8"), "\(message)")
            #expect(try await cluster.client.database("utf").allDocs().isEmpty)
        }
    }

    @Test func revisionsAndSizesAreNamedForWhatTheyAre() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("revs")
            _ = try await db.put(id: "a", json: "{}")
            let run = try await runSofa(["put", "revs", "a", "{}", "--rev", "abc"], gateway: cluster.supervisor.gatewayEndpoint)
            #expect(run.status == 1)
            #expect(run.err.contains("GENERATION-DIGEST") && run.err.contains("revision trees"), "\(run.err)")
            // Over the gateway's request limit (16 MiB), and past four times it, where ZeroMQ
            // would drop the connection: both are "too large", and nothing is written.
            for mebibytes in [20, 70] {
                let big = #"{"x":""# + String(repeating: "x", count: mebibytes << 20) + #""}"#
                do throws(SofaError) {
                    _ = try await db.put(id: "big\(mebibytes)", json: big)
                    Issue.record("a \(mebibytes) MiB put was accepted")
                } catch {
                    #expect(error.is(.messageTooLarge) && error.message.contains("over the limit of 16777216 bytes"), "\(error)")
                }
            }
            #expect(try await db.allDocs().map(\.id) == ["a"])
        }
    }
}
