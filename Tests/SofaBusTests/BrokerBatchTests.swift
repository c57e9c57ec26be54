import Foundation
@testable import SofaBus
import SofaServer
import SofaCore
@testable import SofaWire
import Synchronization
import Testing

/// The broker and its workers pass several frames in one message (`WireBatch`): a worker whose
/// READY says it takes batches gets the jobs the broker hands it at once in one message, and its
/// replies in a batch are each taken; a worker that does not say so gets one frame per message.
@Suite struct BrokerBatchTests {
    /// What a worker standing in for a real one saw: the messages the jobs came in (how many, how
    /// many of them batches), and how many jobs in all.
    struct Seen: Sendable {
        var messages = 0
        var batches = 0
        var jobs = 0
    }

    /// A worker of its own making, on a thread of its own (its socket lives there): announces
    /// itself (with `batches` or not), takes `count` jobs, and answers each with an echo of its
    /// payload — in one batch when it says it takes batches, else one by one.
    static func standInWorker(_ endpoint: String, batches: Bool, count: Int) async throws -> Seen {
        let result: Result<Seen, SofaError> = await withCheckedContinuation { continuation in
            Thread {
                do throws(SofaError) {
                    let socket = try ZMQSocket(type: 5)  // ZMQ_DEALER
                    try socket.connectSecured(endpoint, Curve.internalClient)
                    let ready = WorkerFrame(kind: .ready, instance: "stand-in", pid: 1, service: "query", capacity: 64,
                                            batches: batches)
                    _ = try socket.send([ready.encoded()])
                    var seen = Seen()
                    var replies: [[UInt8]] = []
                    let end = monotonicMs() + 120_000  // a hang guard: the jobs come as soon as READY is in
                    while seen.jobs < count, monotonicMs() < end {
                        guard try poll([socket], fds: [], timeoutMs: 50)[0] else { continue }
                        while case .message(let frames)? = try socket.receive() {
                            guard let last = frames.last else { continue }
                            let (items, isBatch) = WireBatch.unpacked(last)
                            // (The broker's heartbeats come in messages of their own.)
                            var requests: [WorkerFrame] = []
                            for item in items {
                                let frame = try WorkerFrame.decode(item)
                                if frame.kind == .request { requests.append(frame) }
                            }
                            guard !requests.isEmpty else { continue }
                            seen.messages += 1
                            if isBatch { seen.batches += 1 }
                            for frame in requests {
                                let request = try Request.decode(frame.payload)
                                guard case .echo(let payload, _, _) = request.operation else { continue }
                                seen.jobs += 1
                                let response = Response.ok(request.id, .echo(payload: payload, instance: "stand-in"))
                                replies.append(WorkerFrame(kind: .reply, payload: response.encoded()).encoded())
                            }
                        }
                    }
                    for message in batches ? [WireBatch.encoded(arrays: replies)] : replies { _ = try socket.send([message]) }
                    // Stays until the broker has the replies (it answers a DISCONNECT with nothing).
                    _ = try socket.send([WorkerFrame(kind: .heartbeat, instance: "stand-in").encoded()])
                    continuation.resume(returning: .success(seen))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        return try result.get()
    }

    /// Eight jobs wait at the broker, then a worker joins: they go to it in the same turn.
    @Test(arguments: [true, false])
    func jobsHandedOutTogetherGoInOneBatchToAWorkerThatTakesThem(_ batches: Bool) async throws {
        let broker = try await Broker.bind("tcp://127.0.0.1:*", heartbeatMs: 100, liveness: 50, logger: .init(label: "sofa-bus-tests"))
        defer { broker.close() }
        try await withThrowingTaskGroup(of: (Int, Response)?.self) { group in
            for index in 0..<8 {
                group.addTask { (index, await broker.submit(Request(operation: echo([UInt8(index)])), timeout: .seconds(120))) }
            }
            let queued = await eventually("eight jobs waiting") { broker.snapshot.queued == 8 ? true : nil }
            try #require(queued == true)
            let seen = try await Self.standInWorker(broker.endpoint, batches: batches, count: 8)
            #expect(seen.jobs == 8)
            #expect(seen.messages == (batches ? 1 : 8), "\(seen)")
            #expect(seen.batches == (batches ? 1 : 0), "\(seen)")
            var answered = 0
            for try await case let (index, response)? in group {
                guard case .success(.echo(let payload, let instance)) = response.outcome else {
                    Issue.record("job \(index): \(response)")
                    continue
                }
                #expect(payload == [UInt8(index)] && instance == "stand-in")
                answered += 1
            }
            #expect(answered == 8)
        }
    }
}
