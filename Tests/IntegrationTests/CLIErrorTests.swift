import Foundation
import SofaCluster
import SofaClient
import Testing

/// How the `sofa` executable reports errors: once, one line on stderr, JSON only with `--json`;
/// with no cluster running, at once and with a hint.
@Suite struct CLIErrorTests {
    @Test func withNoClusterACommandFailsFastWithAHint() async throws {
        let gateway = "tcp://127.0.0.1:\(try freePort())"  // nothing listens there
        // The call's own timeout is 120 s, so a first contact bounded by it would take that
        // long; the connection's wait is 1 s (the message says so). Timing a process on a loaded
        // machine says little more than that, so the bound is half the call's timeout.
        let clock = ContinuousClock()
        let started = clock.now
        let run = try await runSofa(["db", "list", "--timeout", "120"], gateway: gateway)
        let took = clock.now - started
        #expect(run.status == 1)
        #expect(took < .seconds(60), "failing took \(took)")
        expectErrorLine(run.err, .unavailable)
        #expect(run.err.hasSuffix("no gateway answered at \(gateway) within 1.0 seconds: is sofa up running?\n"), "\(run.err)")

        let json = try await runSofa(["status", "--json"], gateway: gateway)
        #expect(json.status == 1)
        #expect(json.err.split(separator: "\n").count == 1, "\(json.err)")
        let error = try parseOutput(json.err)["error"]
        #expect(error?["name"] == "unavailable" && error?["code"] == 101, "\(json.err)")
        #expect(error?["message"]?.stringValue?.hasSuffix("is sofa up running?") == true, "\(json.err)")
    }

    @Test func jsonOnlyWithTheFlag() async throws {
        let text = try await runSofa(["query", "--to-json", "SELECT FROM WHERE"], gateway: "tcp://127.0.0.1:1")
        #expect(text.status == 1)
        expectErrorLine(text.err, .invalidQuery)
        #expect(!text.err.contains("{"), "\(text.err)")
        let json = try await runSofa(["query", "--to-json", "SELECT FROM WHERE", "--json"], gateway: "tcp://127.0.0.1:1")
        #expect(json.status == 1)
        #expect(json.err.split(separator: "\n").count == 1, "\(json.err)")
        let error = try parseOutput(json.err)["error"]
        #expect(error?["name"] == "invalid_query" && error?["code"] == 23 && error?["domain"] == "sofa", "\(json.err)")
        #expect(error?["message"]?.stringValue == String(text.err.dropFirst("sofa: invalid_query (23): ".count).dropLast()),
                "the same message: \(text.err) \(json.err)")
    }

    /// The short wait is for the connection alone: a call that takes longer than it still gets
    /// its answer.
    @Test func aShortHandshakeWaitDoesNotShortenCalls() async throws {
        try await Cluster.with { cluster in
            let client = try await cluster.supervisor.connect(timeout: .seconds(20),
                                                      handshakeTimeout: .milliseconds(500))
            defer { client.close() }
            let echoed = try await client.echo([1, 2, 3], delayMs: 1500)
            #expect(echoed.payload == [1, 2, 3])
        }
    }
}
