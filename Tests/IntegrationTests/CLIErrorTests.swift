import Foundation
import SofaCore
import SofaCluster
import SofaClient
import Testing

/// How the `sofa` executable reports errors: once, one line on stderr, JSON only with `--json`;
/// with no cluster running, at once and with a hint.
@Suite struct CLIErrorTests {
    @Test func withNoClusterACommandFailsFastWithAHint() async throws {
        let unlistened = try UnlistenedPort()  // nothing listens there, and no cluster can meanwhile
        defer { withExtendedLifetime(unlistened) {} }
        let gateway = "tcp://127.0.0.1:\(unlistened.port)"
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

/// A loopback port bound and not listened on, for as long as this value lives: a connection to
/// it is refused, and no cluster started meanwhile can take it (a port merely found free can be,
/// by a test running beside this one).
final class UnlistenedPort {
    let port: Int
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SofaError(.posix, errno, "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw SofaError(.posix, errno, "cannot bind a loopback port")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
