public import ArgumentParser
internal import CZeroMQ
internal import Foundation
internal import SofaClient
internal import SofaCluster
internal import SofaCore
internal import SofaFiles
internal import SofaQL

/// `sofa-bench`: Sofa's performance figures, each printed as one JSON object.
public struct Bench: AsyncParsableCommand {
    public init() {}

    /// The entry point of `sofa-bench`: a figure from a debug build is said to be one, on stderr.
    public static func runMain() async {
        await runCommand(Self.self) {
            if let warning = buildWarning { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
        }
    }

    /// The warning a debug build prints before its figures; nil in a release build.
    public static var buildWarning: String? {
        #if DEBUG
        "\(toolName): warning: this is a debug build; its figures are far below a release build's (swift build -c release)"
        #else
        nil
        #endif
    }

    public static let configuration = CommandConfiguration(
        commandName: "sofa-bench",
        abstract: "Print performance figures.", subcommands: [RTT.self, Codecs.self, Write.self, Blob.self, Query.self, BenchReplicate.self, Hostile.self, Fuzz.self, HTTP.self, View.self, Model.self])

    struct RTT: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Round trip of a 300-byte get through the gateway vs. a bare ZeroMQ echo of the same size.",
            discussion: "Uses the cluster at --gateway if one answers there; otherwise starts a temporary one, and then "
                + "also reads the same row in this process from the database file (SQLite point reads on a read-only "
                + "connection, the storage's own statement): the baseline of the pipelined figure. The pipelined "
                + "figure and its baseline are each the median of --rounds measurements (each round's follows, in `_trials`).")
        @OptionGroup var options: GatewayOptions
        @Option(help: "Round trips per measurement.") var count: Int = 5000
        @Option(help: "Calls kept in flight for the throughput figure.") var inFlight: Int = 64
        @Option(help: "Gets in the throughput figure (default: 4 × --count); a long run to profile it.")
        var pipelined: Int?
        @Option(help: "Measurements of the throughput figure and of its SQLite baseline (their median is the figure).")
        var rounds: Int = 3
        @Flag(help: "Start the cluster with CURVE off (SOFA_CURVE=off): the comparison figure of encryption's cost only.")
        var curveOff = false
        @Flag(inversion: .prefixedNo,
              help: "Make the calls from tasks on the connection's thread (SofaClient.executor), not the cooperative pool.")
        var onConnectionThread = true

        func run() async throws {
            try await reporting {
                var supervisor: Supervisor?
                var temporary: URL?
                var dataDirectory: URL?
                let client: SofaClient
                if let running = try? await options.access.connect(timeout: .seconds(1)) {
                    client = running
                } else {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-\(getpid())")
                    temporary = directory
                    dataDirectory = directory
                    let started = try Supervisor(.init(dataDirectory: directory, gatewayPort: try freePort(),
                                                       queryWorkers: 1, logLevel: "warning",
                                                       settings: curveOff ? [Setting.curve.variable: "off"] : [:])) { _ in }
                    try await started.start()
                    supervisor = started
                    client = try await started.connect()
                }
                let figures = try await measure(client, dataDirectory: dataDirectory)
                client.close()
                await supervisor?.stop()
                if let temporary { try? FileManager.default.removeItem(at: temporary) }
                printJSON(figures)
            }
        }

        func measure(_ client: SofaClient, dataDirectory: URL?) async throws -> JSON {
            let name = "bench-rtt-\(getpid())"
            let db = try await client.createDatabase(name)
            defer { Task { try? await client.deleteDatabase(name) } }
            // A body whose compact JSON is exactly 300 bytes.
            let padding = String(repeating: "x", count: 300 - #"{"pad":""}"#.utf8.count)
            let body = #"{"pad":"\#(padding)"}"#
            try await db.put(id: "doc", json: body)
            let executor = onConnectionThread ? client.executor : nil
            let count = self.count
            let gateway = try await withTaskExecutorPreference(executor) { () async throws -> [UInt64] in
                for _ in 0..<200 { _ = try await db.get(id: "doc") }  // warm up
                var gateway: [UInt64] = []
                gateway.reserveCapacity(count)
                for _ in 0..<count {
                    let start = DispatchTime.now().uptimeNanoseconds
                    _ = try await db.get(id: "doc")
                    gateway.append(DispatchTime.now().uptimeNanoseconds - start)
                }
                return gateway
            }
            // Where the pipelined gets' time goes: the gateway's CPU and this process's (the SDK's
            // threads), per get; the gateway's only when this bench started it (it runs here).
            let gatewayPID = dataDirectory == nil ? nil : try? await client.health().pid
            let cpuBefore = (gateway: gatewayPID.flatMap { processCPUSeconds(Int32($0)) }, client: processCPUSeconds(getpid()))
            let total = pipelined ?? count * 4
            let inFlight = self.inFlight
            var trials: [Double] = []
            for _ in 0..<max(1, rounds) {
                let throughputStart = DispatchTime.now().uptimeNanoseconds
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<inFlight {
                        group.addTask(executorPreference: executor) {
                            for _ in stride(from: lane, to: total, by: inFlight) { _ = try await db.get(id: "doc") }
                        }
                    }
                    try await group.waitForAll()
                }
                trials.append(Double(total) / (Double(DispatchTime.now().uptimeNanoseconds - throughputStart) / 1e9))
            }
            let pipelined = median(trials)
            let gets = Double(total * trials.count)
            let cpuAfter = (gateway: gatewayPID.flatMap { processCPUSeconds(Int32($0)) }, client: processCPUSeconds(getpid()))
            var cpu: [(String, JSON)] = []
            if let before = cpuBefore.gateway, let after = cpuAfter.gateway {
                cpu.append(("gateway_cpu_us_per_pipelined_get", .double(((after - before) / gets * 1e7).rounded() / 10)))
            }
            if let before = cpuBefore.client, let after = cpuAfter.client {
                cpu.append(("client_cpu_us_per_pipelined_get", .double(((after - before) / gets * 1e7).rounded() / 10)))
            }
            let echo = try await bareEcho(size: 300, count: count)
            var baseline: [(String, JSON)] = []
            if let dataDirectory {
                let file = StorageLayout.databaseFile(of: name, in: dataDirectory)
                let sqliteTrials = try (0..<max(1, rounds)).map { _ in try pointReads(file, id: "doc", count: total) }
                let sqlite = median(sqliteTrials)
                baseline = [("sqlite_point_reads_per_s", .int(Int64(sqlite))),
                            ("sqlite_point_reads_per_s_trials", .array(sqliteTrials.map { .int(Int64($0)) })),
                            ("pipelined_ratio_to_sqlite", .double((pipelined / sqlite * 100).rounded() / 100))]
            }
            let g50 = percentile(gateway, 0.50), g99 = percentile(gateway, 0.99)
            let e50 = percentile(echo, 0.50), e99 = percentile(echo, 0.99)
            return .object(JSONObject([
                ("count", .int(Int64(count))),
                ("gateway_get_p50_us", .double(g50)), ("gateway_get_p99_us", .double(g99)),
                ("zmq_echo_p50_us", .double(e50)), ("zmq_echo_p99_us", .double(e99)),
                ("ratio_p50", .double(round(g50 / e50 * 100) / 100)), ("ratio_p99", .double(round(g99 / e99 * 100) / 100)),
                ("gateway_get_pipelined_per_s", .int(Int64(pipelined))),
                ("gateway_get_pipelined_per_s_trials", .array(trials.map { .int(Int64($0)) })), ("rounds", .int(Int64(trials.count))),
                ("in_flight", .int(Int64(inFlight))), ("on_connection_thread", .bool(onConnectionThread)),
            ] + cpu + baseline))
        }

        /// Point reads of document `id` in this process, `count` times, on a read-only connection to
        /// the database file: storage's statement for a get (every column of the row, each read out).
        func pointReads(_ file: URL, id: String, count: Int) throws -> Double {
            let confined = try Confined.make(on: DispatchQueue(label: "sofa.bench.rtt")) { (queue) throws(SofaError) in
                try SQLiteConnection(path: file.path, queue: queue, options: .queryWorker)
            }
            return try confined.sync { (connection) throws(SofaError) -> Double in
                let sql = "SELECT key, sequence, flags, version, body, extra, expiration FROM kv_default WHERE key = ?"
                var bytes = 0
                let started = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<count {
                    try connection.run("get", { sql }, [.text(id)]) { row in
                        bytes += row.text(0).utf8.count + row.blob(3).count + row.blob(4).count + row.blob(5).count
                        _ = (row.integer(1), row.integer(2), row.isNull(6))
                    }
                }
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                guard bytes >= count * 300 else {
                    throw SofaError(.unexpectedError, "the direct reads found \(bytes) bytes for \(count) reads of a 300-byte document")
                }
                return Double(count) / elapsed
            }
        }
    }
}

extension Bench {
    struct Codecs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Parse/encode rates of SofaCore's codecs.")
        func run() async throws {
            let figures = CodecBenchmarks.run()
            printJSON(.object(JSONObject(figures.map { ($0.name, .int(Int64($0.perSecond))) })))
        }
    }
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Seconds since `start`, as a figure.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// Starts a cluster for one bench in a temporary folder, prints what `measure` answers, and
/// stops and removes the cluster whatever happens.
func withScratchCluster(_ bench: String, queryWorkers: Int = 1, _ measure: (SofaClient) async throws -> JSON) async throws {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-\(bench)-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let supervisor = try Supervisor(.init(dataDirectory: scratch, gatewayPort: try freePort(), queryWorkers: queryWorkers,
                                          logLevel: "warning")) { _ in }
    do {
        try await supervisor.start()
        let client = try await supervisor.connect(timeout: .seconds(600))
        defer { client.close() }
        printJSON(try await measure(client))
        await supervisor.stop()
    } catch {
        await supervisor.stop()
        throw error
    }
}

/// Microseconds at a percentile of nanosecond samples; 0 for none (a phase that made no call in
/// its time: a figure says so, the process does not stop on it).
func percentile(_ samples: [UInt64], _ p: Double) -> Double {
    guard !samples.isEmpty else { return 0 }
    let sorted = samples.sorted()
    let index = min(sorted.count - 1, Int(Double(sorted.count) * p))
    return (Double(sorted[index]) / 1000 * 10).rounded() / 10
}

/// A bare ZeroMQ ROUTER echo and a DEALER client on loopback TCP, each on its own thread, one
/// round trip at a time: the floor any bus hop is compared with.
func bareEcho(size: Int, count: Int) async throws -> [UInt64] {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try runBareEcho(size: size, count: count))
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

private func runBareEcho(size: Int, count: Int) throws -> [UInt64] {
    let context = zmq_ctx_new()
    defer { zmq_ctx_term(context) }
    let server = zmq_socket(context, ZMQ_ROUTER)
    var linger: Int32 = 0
    zmq_setsockopt(server, ZMQ_LINGER, &linger, 4)
    guard zmq_bind(server, "tcp://127.0.0.1:*") == 0 else { throw SofaError(.zmq, zmq_errno(), "bind failed") }
    guard let endpoint = lastEndpoint(of: server) else { throw SofaError(.zmq, zmq_errno(), "getsockopt ZMQ_LAST_ENDPOINT failed") }
    let serverSocket = UnsafeSendable(server)
    let echo = Thread {
        // The server socket is used only by this thread from here on.
        let socket = serverSocket.value
        var identity = [UInt8](repeating: 0, count: 256)
        var payload = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let idSize = zmq_recv(socket, &identity, identity.count, 0)
            if idSize < 0 { break }
            let size = zmq_recv(socket, &payload, payload.count, 0)
            if size <= 0 { break }  // an empty payload means stop
            zmq_send(socket, identity, Int(idSize), ZMQ_SNDMORE)
            zmq_send(socket, payload, Int(size), 0)
        }
        zmq_close(socket)
    }
    echo.start()
    let client = zmq_socket(context, ZMQ_DEALER)
    zmq_setsockopt(client, ZMQ_LINGER, &linger, 4)
    defer { zmq_close(client) }
    zmq_connect(client, endpoint)
    let message = [UInt8](repeating: 0x61, count: size)
    var reply = [UInt8](repeating: 0, count: size * 2)
    var samples: [UInt64] = []
    for index in 0..<(count + 200) {
        let start = DispatchTime.now().uptimeNanoseconds
        zmq_send(client, message, message.count, 0)
        zmq_recv(client, &reply, reply.count, 0)
        if index >= 200 { samples.append(DispatchTime.now().uptimeNanoseconds - start) }
    }
    zmq_send(client, message, 0, 0)
    while echo.isExecuting { usleep(1000) }
    return samples
}

/// Where a raw socket bound last (`tcp://127.0.0.1:PORT` for `tcp://127.0.0.1:*`); nil on failure.
func lastEndpoint(of socket: UnsafeMutableRawPointer?) -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    var length = buffer.count
    guard zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, &buffer, &length) == 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Hands a raw socket to the one thread that will use it from then on.
private struct UnsafeSendable: @unchecked Sendable {  // safe: the socket is used by one thread at a time, handed over once
    let value: UnsafeMutableRawPointer?
    init(_ value: UnsafeMutableRawPointer?) { self.value = value }
}

/// The CPU time (user and system) a process of this host has used so far, in seconds; nil when it
/// cannot be read (/proc/PID/stat, fields 14 and 15, in clock ticks).
func processCPUSeconds(_ pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let end = stat.lastIndex(of: ")") else { return nil }
    // The fields after the command name (which may hold spaces), from field 3 on.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
