internal import CZeroMQ
internal import CPosix
internal import Foundation
public import SofaClient
public import SofaCluster
internal import SofaWire
internal import Synchronization

/// A well-behaved client's latency with and without hostile clients beside it, against one
/// cluster: `sofa-bench hostile` prints it, and the hostile-client test runs a short version.
///
/// The well-behaved client alternates a get of a small document and an indexed query, one at a
/// time, for `phase` without load and again under load (under load for at least
/// `minimumCalls` calls too, however slow the machine, up to `longestLoad`). The hostile clients,
/// all at once, for as long as the well-behaved client measures:
/// * deep: queries whose WHERE is a chain of 40,000 operators, one after another;
/// * huge: raw requests just over the gateway's request limit, one after another;
/// * non-readers: raw sockets that ask for a large document again and again and never read;
/// * hogs: a client with a one-hour timeout that keeps `hogs` cross joins running;
/// * bulk: bulk writes over the per-request item limit.
/// Every loop ends when the measurement under load does (and, when deep, huge or bulk clients
/// run, once one of their requests has been refused; up to `longestLoad`); nothing is retried.
public struct HostileLoad: Sendable {
    public struct Options: Sendable {
        public var phase: Duration = .seconds(5)
        /// The well-behaved client's calls under load: at least this many, the load lasting
        /// until they are made (but no longer than `longestLoad`).
        public var minimumCalls = 0
        public var longestLoad: Duration = .seconds(120)
        public var nonReaders = 2
        public var nonReaderRequests = 200
        public var largeDocumentBytes = 4 << 20
        public var hogs = 8
        public var joinDocuments = 3_000
        /// The hostile clients to run (all by default): deep, huge, nonReaders, hogs, bulk.
        public var actors: Set<String> = ["deep", "huge", "nonReaders", "hogs", "bulk"]

        public init() {}
    }

    public struct Figures: Sendable {
        public var unloaded: [UInt64] = []
        public var loaded: [UInt64] = []
        public var hostileRequests = 0
        public var hostileRefused = 0

        public var json: JSON {
            let u99 = percentile(unloaded, 0.99), l99 = percentile(loaded, 0.99)
            return .object(JSONObject([
                ("unloaded_calls", .int(Int64(unloaded.count))), ("loaded_calls", .int(Int64(loaded.count))),
                ("unloaded_p50_us", .double(percentile(unloaded, 0.5))), ("unloaded_p99_us", .double(u99)),
                ("loaded_p50_us", .double(percentile(loaded, 0.5))), ("loaded_p99_us", .double(l99)),
                ("p99_ratio", .double((l99 / max(u99, 1) * 100).rounded() / 100)),
                // The calls alternate a get (even) and an indexed query (odd): each kind's own tail.
                ("unloaded_get_p99_us", .double(percentile(Self.every(unloaded, from: 0), 0.99))),
                ("unloaded_query_p99_us", .double(percentile(Self.every(unloaded, from: 1), 0.99))),
                ("loaded_get_p99_us", .double(percentile(Self.every(loaded, from: 0), 0.99))),
                ("loaded_query_p99_us", .double(percentile(Self.every(loaded, from: 1), 0.99))),
                ("hostile_requests", .int(Int64(hostileRequests))), ("hostile_refused", .int(Int64(hostileRefused))),
            ]))
        }

        public var p99Ratio: Double { percentile(loaded, 0.99) / max(percentile(unloaded, 0.99), 1) }

        /// Every other sample, from `first`.
        static func every(_ samples: [UInt64], from first: Int) -> [UInt64] {
            stride(from: first, to: samples.count, by: 2).map { samples[$0] }
        }
    }

    let access: ClusterAccess
    var gateway: String { access.endpoint }
    let options: Options

    public init(gateway: ClusterAccess, options: Options) {
        self.access = gateway
        self.options = options
    }

    public func run() async throws -> Figures {
        let client = try await access.connect(timeout: .seconds(30))
        defer { client.close() }
        let name = "hostile-\(getpid())"
        let db = try await client.createDatabase(name)
        try await seed(db)
        var figures = Figures()
        figures.unloaded = try await measure(db, for: options.phase, atLeast: 2)  // a get and a query at least
        let end = LoadWindow(latest: ContinuousClock.now + max(options.phase, options.longestLoad))
        let counts = Counts(until: end.latest)
        // Each hostile client has a connection of its own, as separate programs would; those that
        // compute or block (building huge or deep requests) do it on threads of their own, so that
        // the well-behaved client's tasks in this process are not held up by them.
        let actors = options.actors
        let hostile = Task { try await withThrowingTaskGroup(of: Void.self) { group in
            if actors.contains("deep") { group.addTask { try await deep(name, until: end, counts) } }
            if actors.contains("huge") { group.addTask { try await huge(name, until: end, counts) } }
            if actors.contains("hogs") { group.addTask { try await hog(name, until: end, counts) } }
            if actors.contains("bulk") { group.addTask { try await bulk(name, until: end, counts) } }
            if actors.contains("nonReaders") {
                for _ in 0..<options.nonReaders { group.addTask { try await nonReader(name, until: end, counts) } }
            }
            try await group.waitForAll()
        } }
        do {
            figures.loaded = try await measure(db, for: options.phase, atLeast: options.minimumCalls, until: end.latest)
            // The load also lasts until the limits have refused something (or `latest`): on a
            // machine a whole test suite loads, the hostile clients (at the lowest priority) may
            // not have had a request answered by the time the well-behaved client is done.
            if !actors.isDisjoint(with: ["deep", "huge", "bulk"]) { await counts.firstRefusal.closed() }
            end.close()
        } catch {
            end.close()
            throw error
        }
        try await hostile.value
        figures.hostileRequests = counts.requests.withLock { $0 }
        figures.hostileRefused = counts.refused.withLock { $0 }
        try? await client.deleteDatabase(name)
        return figures
    }

    final class Counts: Sendable {
        let requests = Mutex(0)
        let refused = Mutex(0)
        /// Closed by the first refusal (or at its `latest`).
        let firstRefusal: LoadWindow

        init(until latest: ContinuousClock.Instant) { firstRefusal = LoadWindow(latest: latest) }

        func sent(refused wasRefused: Bool) {
            requests.withLock { $0 += 1 }
            guard wasRefused else { return }
            refused.withLock { $0 += 1 }
            firstRefusal.close()
        }
    }

    private func seed(_ db: Database) async throws {
        let docs = (0..<options.joinDocuments).map { n in
            BulkItem.put(id: String(format: "d%06d", n), rev: "", body: Array(#"{"n":\#(n),"name":"p\#(n)"}"#.utf8), deleted: false)
        }
        for part in stride(from: 0, to: docs.count, by: 1_000) {
            _ = try await db.bulk(Array(docs[part..<min(part + 1_000, docs.count)]))
        }
        try await db.createIndex("byN", kind: .value, expressions: [[".n"]])
        let large = #"{"pad":""# + String(repeating: "x", count: options.largeDocumentBytes) + #""}"#
        _ = try await db.put(id: "large", json: large)
    }

    /// The well-behaved client: a get and an indexed query in turn, each timed, for `phase` and
    /// at least `minimumCalls` calls (but not past `latest`).
    private func measure(_ db: Database, for phase: Duration, atLeast minimumCalls: Int = 0,
                         until latest: ContinuousClock.Instant = .now + .seconds(3_600)) async throws -> [UInt64] {
        var samples: [UInt64] = []
        let end = ContinuousClock.now + phase
        var n = 0
        while ContinuousClock.now < end || (samples.count < minimumCalls && ContinuousClock.now < latest) {
            let start = DispatchTime.now().uptimeNanoseconds
            do throws(SofaError) {
                if n % 2 == 0 {
                    _ = try await db.get(id: String(format: "d%06d", n % options.joinDocuments))
                } else {
                    _ = try await db.query(n1ql: "SELECT name FROM _ WHERE n = $n",
                                           parameters: ["n": .int(Int64(n % options.joinDocuments))])
                }
            } catch {
                // Which call failed, and when: a failure under load says where to look.
                let waited = (DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
                throw SofaError(error.domain, error.code, "the well-behaved client's \(n % 2 == 0 ? "get" : "query") (call \(n + 1), "
                                + "after \(samples.count) answered; it waited \(waited) ms): \(error.message)")
            }
            samples.append(DispatchTime.now().uptimeNanoseconds - start)
            n += 1
        }
        return samples
    }

    /// Queries whose WHERE is a chain of 40,000 operators, one after another, from a raw socket
    /// (the request is encoded once, on a thread of its own, as the other hostile clients').
    private func deep(_ name: String, until end: LoadWindow, _ counts: Counts) async throws {
        try await onThread {
            let socket = RawSocket(access)
            let chain = "SELECT 1 FROM _ WHERE n = 1" + String(repeating: " + 1", count: 40_000)
            let request = Request(database: name, operation: .query(QuerySpec(text: chain, isN1QL: true))).encoded()
            while end.isOpen {
                socket.send(request)
                guard let reply = socket.receive(until: end.latest) else { break }
                var refused = true
                if let response = try? Response.decode(reply), case .success = response.outcome { refused = false }
                counts.sent(refused: refused)
            }
        }
    }

    /// Raw requests just over the gateway's limit: refused by the gateway with an error.
    private func huge(_ name: String, until end: LoadWindow, _ counts: Counts) async throws {
        try await onThread {
            let socket = RawSocket(access)
            let body = Array(#"{"pad":""#.utf8) + [UInt8](repeating: 0x78, count: 16 << 20) + Array(#""}"#.utf8)
            let request = Request(database: name, operation: .putDocument(id: "huge", rev: "", body: body, deleted: false)).encoded()
            while end.isOpen {
                socket.send(request)
                counts.sent(refused: socket.receive(until: end.latest) != nil)
            }
        }
    }

    /// Asks for the large document again and again and never reads an answer: its ZeroMQ takes
    /// one message off the connection and its kernel buffer is small, so the replies stay with
    /// the gateway (a client that reads them into a queue of its own is reading).
    private func nonReader(_ name: String, until end: LoadWindow, _ counts: Counts) async throws {
        try await onThread {
            let socket = RawSocket(access, reading: false)
            let request = Request(database: name, operation: .getDocument(id: "large", rev: "")).encoded()
            for _ in 0..<options.nonReaderRequests where end.isOpen {
                socket.send(request)
                counts.sent(refused: false)
            }
            while end.isOpen { socket.wait(until: min(end.latest, .now + .milliseconds(50))) }
        }
    }

    /// Keeps `hogs` cross joins running, each with a one-hour deadline.
    private func hog(_ name: String, until end: LoadWindow, _ counts: Counts) async throws {
        let hogClient = try await access.connect(timeout: .seconds(3_600))
        defer { hogClient.close() }
        let db = hogClient.database(name)
        let join = "SELECT COUNT(*) FROM _ a JOIN _ b ON a.n != b.n WHERE a.name || b.name != ''"
        let running = Task { try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<options.hogs {
                group.addTask {
                    while end.isOpen, !Task.isCancelled {
                        do {
                            _ = try await db.query(n1ql: join)
                            counts.sent(refused: false)
                        } catch {
                            counts.sent(refused: true)
                        }
                    }
                }
            }
            try await group.waitForAll()
        } }
        await end.closed()  // the load's own duration
        running.cancel()
        hogClient.close()
        _ = try? await running.value
    }

    /// Bulk writes of 200,000 items (over the per-request item limit), one after another.
    private func bulk(_ name: String, until end: LoadWindow, _ counts: Counts) async throws {
        try await onThread {
            let socket = RawSocket(access)
            let items = (0..<200_000).map { _ in BulkItem.put(id: "", rev: "", body: Array("{}".utf8), deleted: false) }
            let request = Request(database: name, operation: .bulkWrite(items)).encoded()
            while end.isOpen {
                socket.send(request)
                counts.sent(refused: socket.receive(until: end.latest) != nil)
            }
        }
    }
}

/// How long the hostile clients go on: until the well-behaved client's measurement under load
/// ends (`close()`), or `latest`.
final class LoadWindow: Sendable {
    let latest: ContinuousClock.Instant
    private let state = Mutex<(closed: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    init(latest: ContinuousClock.Instant) { self.latest = latest }

    var isOpen: Bool { !state.withLock { $0.closed } && ContinuousClock.now < latest }

    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once `close()` was called or `latest` has come.
    func closed() async {
        let latest = latest
        let timer = Task { [weak self] in
            try? await Task.sleep(until: latest, clock: .continuous)
            self?.close()
        }
        defer { timer.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.closed { return true }
                state.waiting.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

/// Runs `body` on a thread of its own (it blocks in ZeroMQ calls), at the lowest priority, as
/// are the ZeroMQ threads its sockets start: on a shared machine the cores spent making and
/// sending the hostile requests stand for another machine's; what they cost the cluster (every
/// byte received, every refusal) is still spent at the cluster's own priority.
private func onThread(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        Thread {
            _ = sofa_nice_this_thread(19)
            do {
                try body()
                continuation.resume()
            } catch {
                continuation.resume(throwing: error)
            }
        }.start()
    }
}
