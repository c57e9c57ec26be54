import Foundation
import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Synchronization
import Testing

/// Broker and BrokerWorker over real sockets. (A worker that dies without a word is covered by
/// the process-level fault-injection tests; `BrokerStateTests` cover the failover rules.)
@Suite struct BrokerTests {
    /// Workers and broker heartbeat every 100 ms but declare each other dead only after 5 s of
    /// silence: nothing here tests death, and a suite busy on two cores can starve a thread
    /// for longer than a few heartbeats.
    static let liveness: UInt64 = 50

    static func startWorker(_ broker: Broker, _ instance: String, gate: Gate? = nil) async throws -> BrokerWorker {
        let handler = BasicHandler(service: "query", instance: instance)
        return try await BrokerWorker.start(broker: broker.endpoint, service: "query", instance: instance, heartbeatMs: 100,
                                      liveness: liveness, logger: .init(label: "sofa-bus-tests")) { request in
            await gate?.pass(instance)
            return await handler.handle(request)
        }
    }

    static func bindBroker() async throws -> Broker {
        try await Broker.bind("tcp://127.0.0.1:*", heartbeatMs: 100, liveness: liveness, logger: .init(label: "sofa-bus-tests"))
    }

    static func echoReply(_ response: Response) -> (payload: [UInt8], instance: String)? {
        guard case .success(.echo(let payload, let instance)) = response.outcome else { return nil }
        return (payload, instance)
    }

    @Test func twoWorkersServeRequestsAndShareTheLoad() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let a = try await Self.startWorker(broker, "A")
        let b = try await Self.startWorker(broker, "B")
        let joined = await eventually("both workers to join") {
            broker.snapshot.workers == ["A", "B"] ? true : nil
        }
        try #require(joined == true)
        #expect(broker.snapshot.pids == [UInt32(getpid()), UInt32(getpid())])
        #expect(broker.snapshot.busy == 0)
        #expect(broker.snapshot.queued == 0)

        let single = await broker.submit(Request(operation: echo([1, 2, 3])), timeout: .seconds(10))
        #expect(Self.echoReply(single)?.payload == [1, 2, 3])

        // Eight slow requests at once: a worker takes one at a time, so both must take some.
        let results = await withTaskGroup(of: (Int, Response).self) { group in
            for index in 0..<8 {
                group.addTask {
                    (index, await broker.submit(Request(operation: echo([UInt8(index)], delayMs: 100)), timeout: .seconds(20)))
                }
            }
            return await group.reduce(into: [(Int, Response)]()) { $0.append($1) }
        }
        #expect(results.count == 8)
        for (index, response) in results {
            #expect(Self.echoReply(response)?.payload == [UInt8(index)], "request \(index): \(response)")
        }
        #expect(Set(results.compactMap { Self.echoReply($0.1)?.instance }) == ["A", "B"])

        await a.close()
        await b.close()
        let left = await eventually("the workers to leave") { broker.snapshot.workers.isEmpty ? true : nil }
        #expect(left == true)
    }

    @Test func snapshotShowsTheBusyWorker() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let gate = Gate()
        let a = try await Self.startWorker(broker, "A", gate: gate)
        _ = await eventually("the worker to join") { broker.snapshot.workers == ["A"] ? true : nil }

        // The request is held in the worker until the snapshot has been seen.
        async let held = broker.submit(Request(operation: echo([7])), timeout: .seconds(60))
        let busy = await eventually("the worker to be busy") { broker.snapshot.busy == 1 ? broker.snapshot : nil }
        #expect(busy?.busyWorkers == ["A"])
        #expect(busy?.busyPids == [UInt32(getpid())])
        gate.open("A")
        #expect(Self.echoReply(await held)?.instance == "A")
        let idle = await eventually("the worker to be idle") { broker.snapshot.busy == 0 ? true : nil }
        #expect(idle == true)
        await a.close()
    }

    /// A worker that leaves cleanly (DISCONNECT) in the middle of a request: the broker retries
    /// the request on the other worker, so the caller still gets its answer.
    @Test func requestOfAWorkerThatLeavesIsRetriedOnAnother() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let gate = Gate()
        let workers = ["A": try await Self.startWorker(broker, "A", gate: gate), "B": try await Self.startWorker(broker, "B", gate: gate)]
        _ = await eventually("both workers to join") { broker.snapshot.workers == ["A", "B"] ? true : nil }

        // Whichever worker takes the request holds it until after it has left.
        async let held = broker.submit(Request(operation: echo([5])), timeout: .seconds(60))
        let busy = await eventually("a worker to take the request") { broker.snapshot.busyWorkers.first }
        let taker = try #require(busy)
        let other = taker == "A" ? "B" : "A"
        gate.open(other)
        await workers[taker]!.close()
        let response = await held
        #expect(Self.echoReply(response)?.instance == other, "\(response)")
        #expect(Self.echoReply(response)?.payload == [5])
        #expect(broker.snapshot.workers == [other])
        gate.open(taker)  // lets the abandoned handler end
        await workers[other]!.close()
    }

    @Test func requestWithNoWorkerTimesOut() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let clock = ContinuousClock()
        let start = clock.now
        let response = await broker.submit(Request(operation: echo([1])), timeout: .milliseconds(300))
        let elapsed = clock.now - start
        guard case .failure(let error) = response.outcome else {
            Issue.record("expected a timeout, got \(response)")
            return
        }
        #expect(error.is(.timeout), "\(error)")
        #expect(elapsed >= .milliseconds(290))
        #expect(elapsed < .seconds(300))  // no hang (a loaded machine once held this process's tasks 37 s)
        // The snapshot is refreshed after the completion is delivered.
        let emptied = await eventually("the queue to empty") { broker.snapshot.queued == 0 ? true : nil }
        #expect(emptied == true)
    }

    /// A worker's direct handler takes requests without a task and answers from its own thread;
    /// a request whose caller went away is cancelled through the function the handler returned;
    /// requests it declines go to the task handler.
    @Test func directHandlerAnswersAndIsCancelled() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let held = Mutex<[UInt64: @Sendable (Response) -> Void]>([:])
        let cancelled = Mutex<[UInt64]>([])
        let worker = try await BrokerWorker.start(broker: broker.endpoint, service: "query", instance: "D", heartbeatMs: 100,
                                                  liveness: Self.liveness, logger: .init(label: "sofa-bus-tests"), direct: { request, reply in
            guard case .echo(let payload, _, _) = request.operation, payload != [0] else { return nil }
            if payload == [1] {
                DispatchQueue.global().async { reply(.ok(request.id, .echo(payload: [1, 1], instance: "direct"))) }
            } else {
                held.withLock { $0[request.id] = reply }
            }
            return { cancelled.withLock { $0.append(request.id) } }
        }) { request in
            .ok(request.id, .echo(payload: [0, 0], instance: "task"))
        }
        defer { Task { await worker.close() } }

        let direct = await broker.submit(Request(operation: echo([1])), timeout: .seconds(10))
        #expect(Self.echoReply(direct)?.payload == [1, 1])
        let declined = await broker.submit(Request(operation: echo([0])), timeout: .seconds(10))
        #expect(Self.echoReply(declined)?.instance == "task")

        let waiting = Task { await broker.submit(Request(operation: echo([2])), timeout: .seconds(30)) }
        let heldID = await eventually("the request held") { held.withLock { $0.keys.first } }
        waiting.cancel()
        let answer = await waiting.value
        guard case .failure(let error) = answer.outcome else {
            Issue.record("a cancelled request was answered \(answer)")
            return
        }
        #expect(error.is(.cancelled), "\(error)")
        let stopped = await eventually("the worker told to stop it") { cancelled.withLock { $0.isEmpty ? nil : $0 } }
        #expect(stopped == [try #require(heldID)])
    }

    /// A request over `inlineDecodeBytes` is neither decoded nor handled on the worker's socket
    /// thread (decoding parses a query's parameters, which only the request's size bounds): it
    /// skips the direct handler for a task of its own, which CANCEL reaches as any other.
    @Test func aLargeRequestIsDecodedInATaskAndCanBeCancelled() async throws {
        let broker = try await Self.bindBroker()
        defer { broker.close() }
        let started = Flag(), stopped = Flag(), cancelGate = Gate()
        let worker = try await BrokerWorker.start(broker: broker.endpoint, service: "query", instance: "L", heartbeatMs: 100,
                                                  liveness: Self.liveness, logger: .init(label: "sofa-bus-tests"), direct: { request, reply in
            reply(.ok(request.id, .echo(payload: [], instance: "direct")))
            return {}
        }) { request in
            guard case .echo(let payload, _, _) = request.operation else { return .failure(request.id, .invalid("not an echo")) }
            if payload.first == 9 {  // held until its caller goes away
                started.set()
                await withTaskCancellationHandler { await cancelGate.pass("held") } onCancel: {
                    stopped.set()
                    cancelGate.open("held")
                }
                return .failure(request.id, SofaError(.cancelled, "stopped"))
            }
            return .ok(request.id, .echo(payload: Array("\(payload.count)".utf8), instance: "task"))
        }
        defer { Task { await worker.close() } }

        let large = [UInt8](repeating: 1, count: BrokerWorker.inlineDecodeBytes + 1)
        let answer = await broker.submit(Request(operation: echo(large)), timeout: .seconds(30))
        #expect(Self.echoReply(answer)?.instance == "task", "\(answer)")
        #expect(Self.echoReply(answer)?.payload == Array("\(large.count)".utf8), "decoded whole")
        let small = await broker.submit(Request(operation: echo([1])), timeout: .seconds(30))
        #expect(Self.echoReply(small)?.instance == "direct", "\(small)")

        let held = [9] + large
        let waiting = Task { await broker.submit(Request(operation: echo(held)), timeout: .seconds(60)) }
        #expect(await eventually("the large request handled") { started.isSet ? true : nil } == true)
        waiting.cancel()
        let cancelled = await waiting.value
        guard case .failure(let error) = cancelled.outcome, error.is(.cancelled) else {
            Issue.record("a cancelled request was answered \(cancelled)")
            return
        }
        #expect(await eventually("its task cancelled") { stopped.isSet ? true : nil } == true)
    }

    @Test func closedBrokerAnswersShuttingDown() async throws {
        let broker = try await Self.bindBroker()
        broker.close()
        let response = await broker.submit(Request(operation: echo([1])), timeout: .seconds(5))
        guard case .failure(let error) = response.outcome else {
            Issue.record("expected an error, got \(response)")
            return
        }
        #expect(error.is(.shuttingDown), "\(error)")
    }
}
