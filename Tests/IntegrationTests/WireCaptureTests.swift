import Foundation
import SofaClient
import SofaCluster
import SofaCore
import SofaTestSupport
import Synchronization
import Testing

/// What crosses the network: a capture of every TCP port of a cluster (the gateway's and, here,
/// every service's) while a client signs in, writes a document and a blob and creates a user
/// holds none of their bytes in clear.
@Suite(.serialized) struct WireCaptureTests {
    @Test func theCaptureHoldsNoBodyBlobOrPassword() async throws {
        let tcpdump = try #require(DeployTests.executableOnPath("tcpdump"), "tcpdump is missing: scripts/dev.sh setup installs it")
        var settings: [String: String] = [:]
        var ports: [Int] = []
        for setting in [Setting.storageEndpoint, .blobEndpoint, .replicatorEndpoint, .brokerEndpoint, .changesEndpoint] {
            let port = try freePort()
            ports.append(port)
            settings[setting.variable] = "tcp://127.0.0.1:\(port)"
        }
        try await withTemporaryDirectory { folder in
            try await Cluster.with(settings: settings) { cluster in
                let gatewayPort = try #require(Int(cluster.supervisor.gatewayEndpoint.split(separator: ":").last ?? ""))
                ports.append(gatewayPort)
                let file = folder.appendingPathComponent("capture.pcap")
                let capture = Process()
                capture.executableURL = tcpdump
                capture.arguments = ["-Z", "root", "-i", "lo", "-U", "-w", file.path, "-s", "0"]
                    + ports.enumerated().flatMap { $0.offset == 0 ? ["tcp", "port", "\($0.element)"] : ["or", "port", "\($0.element)"] }
                // When tcpdump captures (it says "listening on") and when it exits, as events to wait on.
                let (listening, heard) = AsyncStream<Void>.makeStream()
                let (exit, exited) = AsyncStream<Void>.makeStream()
                let said = Mutex("")
                let errors = Pipe()
                // Read on a thread of its own until the pipe ends (a FileHandle readability handler
                // is a dispatch source: libdispatch's event loop crashed under one in this test).
                let reader = Thread {
                    let handle = errors.fileHandleForReading
                    while case let chunk = handle.availableData, !chunk.isEmpty {
                        let text = String(decoding: chunk, as: UTF8.self)
                        if said.withLock({ $0 += text; return $0.contains("listening on") }) { heard.yield() }
                    }
                }
                capture.standardError = errors
                capture.standardOutput = FileHandle.nullDevice
                capture.terminationHandler = { _ in exited.yield() }
                try capture.run()
                reader.start()
                defer {
                    if capture.isRunning { capture.terminate() }
                    // The reader sees the pipe end once no writer holds it: tcpdump's copy goes when it exits.
                    try? errors.fileHandleForWriting.close()
                }
                let started = try await Self.first(listening, within: .seconds(20))
                try #require(started, "tcpdump did not start capturing: \(said.withLock { $0 })")

                let marker = "secret-body-\(UUID().uuidString)"
                let password = "pw-\(UUID().uuidString)"
                let blobBytes = Array("blob-bytes-\(UUID().uuidString)".utf8) + Array(repeating: 0x5a, count: 100_000)
                let admin = try await cluster.supervisor.connect()
                defer { admin.close() }
                let db = try await admin.createDatabase("wire")
                _ = try await db.put(id: "doc", json: "{\"text\":\"\(marker)\"}")
                try await admin.users.create("eve", password: password)
                let blob = try await db.putBlob(blobBytes)
                #expect(try await db.blob(blob.key) == blobBytes)
                let eve = try await SofaClient.connect(cluster.supervisor.gatewayEndpoint, serverKey: cluster.supervisor.serverKey,
                                                       credentials: .init(name: "eve", password: password))
                eve.close()

                // Stopped before the file is read (with -U every packet is in the file as it is captured).
                try #require(capture.isRunning, "tcpdump stopped before the end")
                kill(capture.processIdentifier, SIGKILL)
                let stopped = try await Self.first(exit, within: .seconds(20))
                try #require(stopped, "tcpdump did not exit")
                let bytes = try Data(contentsOf: file)
                #expect(bytes.count > blobBytes.count, "the capture holds \(bytes.count) bytes: it missed the traffic")
                // The connections it holds greeted each other with ZMTP's mechanism name in clear: CURVE.
                #expect(bytes.range(of: Data("CURVE".utf8)) != nil, "the capture holds no CURVE greeting")
                for (what, needle) in [("the document body", Array(marker.utf8)), ("the password", Array(password.utf8)),
                                       ("the blob", Array(blobBytes.prefix(40)))] {
                    #expect(bytes.range(of: Data(needle)) == nil, "\(what) crossed the wire in clear")
                }
            }
        }
    }

    /// Whether `events` yields within `timeout` (the event, or the deadline, whichever comes first).
    static func first(_ events: AsyncStream<Void>, within timeout: Duration) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in events { return true }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)  // the deadline of the wait
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
