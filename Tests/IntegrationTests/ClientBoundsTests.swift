import Foundation
import SofaClient
import SofaCore
import SofaWire
import Synchronization
import Testing

/// One client cannot take the others' share: through real processes, a client that never reads
/// its replies and a client that fills the query workers with endless queries, while a
/// well-behaved client goes on working.
@Suite(.serialized) struct ClientBoundsTests {
    /// A client sends 100 gets of a 4 MiB document (400 MiB of replies) and never reads. The
    /// gateway keeps what the budget allows (16 MiB here), answers the rest with an error naming
    /// the limit, and its RSS stays within 128 MiB of where it started (without the budget it
    /// grows by the whole 400 MiB); another client's gets go on working meanwhile, 64 at once too.
    @Test func aClientThatDoesNotReadHoldsOnlyItsBudget() async throws {
        let budget = 16 << 20
        // The reply budget alone: with fair forwarding the gateway forwards the burst one get at a
        // time, and the hoarder's ZeroMQ takes each reply as it comes, so none pile up to be refused.
        let settings = ["SOFA_CLIENT_REPLY_BYTES": "\(budget)", "SOFA_CLIENT_IN_FLIGHT": "1000", "SOFA_CLIENT_IN_FLIGHT_BYTES": "0"]
        try await Cluster.with(clientTimeout: .seconds(60), settings: settings) { cluster in
            let db = try await cluster.client.createDatabase("big")
            let size = 4 << 20
            _ = try await db.put(id: "big", json: #"{"blob":""# + String(repeating: "x", count: size) + #""}"#)
            _ = try await db.put(id: "small", json: #"{"ok":true}"#)
            let medium = 256 << 10
            _ = try await db.put(id: "medium", json: #"{"blob":""# + String(repeating: "y", count: medium) + #""}"#)
            _ = try await db.get(id: "big")  // the gateway has moved one big reply: its allocator is warm
            let gateway = try #require(cluster.supervisor.pid(of: "gateway"))
            let sampler = try #require(RSSSampler(pid: gateway))
            let baseline = sampler.peak

            let count = 100
            let raw = RawDealer(cluster.supervisor.gatewayEndpoint, receiveQueue: 1)
            for id in 1...count {
                raw.send([Request(id: UInt64(id), database: "big", operation: .getDocument(id: "big", rev: "")).encoded()])
            }
            // Another client is served meanwhile, each get answered within its client's deadline.
            // (Its first gets may wait behind the hoarder's 100 reads, which storage serves first:
            // up to 20 s with the whole suite running on two cores, so the deadline is a minute.)
            for _ in 0..<20 {
                #expect(try await db.get(id: "small").body == Array(#"{"ok":true}"#.utf8))
            }
            // A pipelining client that reads (64 gets in flight, a whole budget's worth) loses nothing.
            let pipelined = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<64 { group.addTask { try await db.get(id: "medium").body.count } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(pipelined.count == 64 && pipelined.allSatisfy { $0 > medium })
            // Now the hoarder reads: every request has an answer, the document or the error.
            let handed = HandedOver(raw)
            let replies = await onThread { handed.value.receiveAll(count, timeoutMs: 60_000) }
            let peak = sampler.stop()
            #expect(replies.count == count)
            var documents = 0, refused: [SofaError] = []
            for reply in replies {
                switch try Response.decode(reply).outcome {
                case .success(.document(let document)) where document.body.count > size: documents += 1
                case .failure(let error): refused.append(error)
                case let other: Issue.record("unexpected reply \(other)")
                }
            }
            #expect(documents >= 1 && documents < count / 2, "\(documents) documents kept")
            #expect(!refused.isEmpty)
            #expect(refused.allSatisfy { $0.is(.busy) && $0.message.contains("SOFA_CLIENT_REPLY_BYTES") },
                    "\(refused.first.map { "\($0)" } ?? "")")
            print("non-reading client: gateway RSS \(baseline >> 20) MiB → peak \(peak >> 20) MiB; "
                  + "\(documents) of \(count) replies of \(size >> 20) MiB kept, \(refused.count) refused")
            #expect(peak - baseline < 128 << 20, "gateway RSS grew from \(baseline >> 20) to \(peak >> 20) MiB")
            #expect(try await db.get(id: "small").body == Array(#"{"ok":true}"#.utf8))
        }
    }

    /// A client sends a burst of 100 gets of a 4 MiB document at once and never reads. The
    /// gateway forwards them to storage one at a time (a client asking for large documents has
    /// one request out, SOFA_CLIENT_IN_FLIGHT_BYTES), so another client's small gets, sent
    /// meanwhile, wait behind at most one of them, not behind the whole burst (which took
    /// storage 0.5 to 3 s on a two-core machine before fair forwarding, as many 2 MiB gets).
    @Test func aBurstOfLargeGetsDoesNotQueueAnotherClientBehindIt() async throws {
        try await Cluster.with(clientTimeout: .seconds(30)) { cluster in
            let db = try await cluster.client.createDatabase("burst")
            let size = 4 << 20
            _ = try await db.put(id: "big", json: #"{"blob":""# + String(repeating: "x", count: size) + #""}"#)
            _ = try await db.put(id: "small", json: #"{"ok":true}"#)
            func latencies(_ runs: Int) async throws -> [Duration] {
                var measured: [Duration] = []
                for _ in 0..<runs {
                    let started = ContinuousClock.now
                    #expect(try await db.get(id: "small").body == Array(#"{"ok":true}"#.utf8))
                    measured.append(ContinuousClock.now - started)
                }
                return measured.sorted()
            }
            _ = try await db.get(id: "big")
            let unloaded = try await latencies(20)
            let raw = RawDealer(cluster.supervisor.gatewayEndpoint, receiveQueue: 1)
            for id in 1...100 {
                raw.send([Request(id: UInt64(id), database: "burst", operation: .getDocument(id: "big", rev: "")).encoded()])
            }
            let loaded = try await latencies(20)
            print("small get latency, unloaded: median \(unloaded[10]), max \(unloaded.last!); beside a burst of 100 "
                  + "gets of 4 MiB: median \(loaded[10]), max \(loaded.last!)")
            // Behind one large get at most (tens of ms), with a margin for a loaded machine.
            #expect(loaded.last! < unloaded.last! * 5 + .milliseconds(250), "a small get waited \(loaded.last!) behind the burst")
            withExtendedLifetime(raw) {}
        }
    }

    /// A client sends 8 endless cross joins with a one-hour deadline to a cluster of 2 workers:
    /// it gets one worker (its share), its other queries wait their turn, and another client's
    /// simple queries keep their unloaded latency within a bound factor. The server cuts the
    /// one-hour deadline to SOFA_MAX_QUERY_MS, so the heavy queries end with a timeout naming it.
    @Test func aClientFillingTheWorkersGetsOnlyItsShare() async throws {
        let capMs = 8000
        try await Cluster.with(queryWorkers: 2, clientTimeout: .seconds(30), settings: ["SOFA_MAX_QUERY_MS": "\(capMs)"]) { cluster in
            let db = try await cluster.client.createDatabase("shared")
            let items: [BulkItem] = (0..<3000).map { .put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            _ = try await db.bulk(items)
            let simple = "SELECT n FROM _ WHERE META().id = 'd42'"
            func latencies(_ runs: Int) async throws -> [Duration] {
                var measured: [Duration] = []
                for _ in 0..<runs {
                    let started = ContinuousClock.now
                    #expect(try await db.query(n1ql: simple).rows == [[.int(42)]])
                    measured.append(ContinuousClock.now - started)
                }
                return measured.sorted()
            }
            _ = try await latencies(5)  // both workers have the database open and the query compiled
            let unloaded = try await latencies(20)

            let heavy = try await cluster.supervisor.connect(timeout: .seconds(3600))
            let started = ContinuousClock.now
            let hogs = (0..<8).map { _ in
                Task { () -> SofaError? in
                    do {
                        _ = try await heavy.database("shared").query(n1ql: "SELECT COUNT(*) FROM _ AS a CROSS JOIN _ AS b CROSS JOIN _ AS c")
                        return nil
                    } catch { return error as? SofaError }
                }
            }
            // Wait until the heavy client holds its share and the rest of its queries wait.
            let status = try #require(await eventuallyStatus(cluster.client, { $0.contains("queued: 7") }))
            #expect(status.contains("busy: query-"), "\(status)")
            let loaded = try await latencies(20)
            let median = { (values: [Duration]) in values[values.count / 2] }
            print("simple query latency, unloaded: median \(median(unloaded)), max \(unloaded.last!); "
                  + "with a client holding its share: median \(median(loaded)), max \(loaded.last!)")
            #expect(median(loaded) <= median(unloaded) * 5 + .milliseconds(50))
            // None waited behind a heavy query (that would take its whole cap); a loaded machine
            // may still hold one back a second or two (seen: 2.2 s with the unloaded max at 0.6 s).
            #expect(loaded.last! < .milliseconds(capMs / 2))

            // The one-hour deadline was cut to the server's cap: every heavy query ends in a timeout naming it.
            var errors: [SofaError?] = []
            for hog in hogs { errors.append(await hog.value) }
            #expect(ContinuousClock.now - started < .milliseconds(capMs) + .seconds(20))
            #expect(errors.allSatisfy { $0?.is(.timeout) == true }, "\(errors)")
            #expect(errors.contains { $0?.message.contains("SOFA_MAX_QUERY_MS") == true }, "\(errors)")
            heavy.close()
            #expect(try await db.query(n1ql: simple).rows == [[.int(42)]])
        }
    }

    /// The query detail of the cluster status once `matches` accepts it (nil after 30 s).
    private func eventuallyStatus(_ client: SofaClient, _ matches: (String) -> Bool) async throws -> String? {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let detail = try await client.clusterStatus().first(where: { $0.name == "query" })?.detail, matches(detail) {
                return detail
            }
            await Task.yield()
        }
        return nil
    }
}

/// Samples a process's resident set size (VmRSS in /proc/PID/status) every 10 ms on a thread of
/// its own, keeping the highest, until stopped: between samples it waits for the stop itself.
final class RSSSampler: Sendable {
    private let state = Mutex(0)  // the peak
    private let stopping = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init?(pid: Int32) {
        guard let first = Self.rss(pid) else { return nil }
        state.withLock { $0 = first }
        let thread = Thread { [self] in
            repeat {
                if let now = Self.rss(pid) { state.withLock { $0 = max($0, now) } }
            } while stopping.wait(timeout: .now() + .milliseconds(10)) == .timedOut
            done.signal()
        }
        thread.start()
    }

    var peak: Int { state.withLock { $0 } }

    /// Stops sampling and returns the highest RSS seen, in bytes.
    func stop() -> Int {
        stopping.signal()
        done.wait()
        return peak
    }

    static func rss(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kB = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kB << 10
    }
}

/// A value handed from one task to one thread, used by one of them at a time.
final class HandedOver<T>: @unchecked Sendable {  // safe: the test stops using it before the thread starts
    let value: T
    init(_ value: T) { self.value = value }
}

/// Runs blocking work on a thread of its own (never on the cooperative pool) and returns its result.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

extension RawDealer {
    /// Up to `count` messages' last frames, waiting at most `timeoutMs` in all.
    func receiveAll(_ count: Int, timeoutMs: Int) -> [[UInt8]] {
        let end = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        var replies: [[UInt8]] = []
        while replies.count < count {
            let left = Int32(max(0, end.timeIntervalSinceNow * 1000))
            guard left > 0, let reply = receive(timeoutMs: left) else { break }
            replies.append(reply)
        }
        return replies
    }
}
