import Foundation
import SofaClient
import Synchronization
import Testing

/// `SofaClient.executor`: tasks that prefer it run on the connection's own thread, their calls
/// work as anywhere else, and closing the client strands none of them.
@Suite(.serialized) struct ConnectionExecutorTests {
    /// Gets from 16 tasks on the connection's thread: every one is answered, and every task's code
    /// ran on that thread (named after the connection), none on the cooperative pool.
    @Test func tasksRunOnTheConnectionsThread() async throws {
        try await Cluster.with { cluster in
            let client = try await cluster.supervisor.connect()
            defer { client.close() }
            let app = try await client.createDatabase("app")
            for n in 0..<16 { _ = try await app.put(id: "d\(n)", json: #"{"n":\#(n)}"#) }
            try await withThrowingTaskGroup(of: (sum: Int, threads: Set<String>).self) { group in
                for lane in 0..<16 {
                    group.addTask(executorPreference: client.executor) {
                        var sum = 0
                        var threads: Set<String> = []
                        for round in 0..<20 {
                            threads.insert(threadName())
                            let document = try await app.get(id: "d\((lane + round) % 16)")
                            sum += Int(try document.json()["n"]?.intValue ?? -1000)
                        }
                        return (sum, threads)
                    }
                }
                var total = 0
                var threads: Set<String> = []
                for try await lane in group {
                    total += lane.sum
                    threads.formUnion(lane.threads)
                }
                let expected = (0..<16).reduce(0) { total, lane in total + (0..<20).reduce(0) { $0 + (lane + $1) % 16 } }
                #expect(total == expected)
                // One thread, the connection's: its kernel name is the first 15 bytes of "bus-client-gateway".
                #expect(threads == ["bus-client-gate"])
            }
        }
    }

    /// A task waiting on the connection's thread when the client closes is resumed (its call fails
    /// as closed) and goes on elsewhere; a task started there afterwards runs too.
    @Test(.timeLimit(.minutes(1))) func closingTheClientStrandsNoTask() async throws {
        try await Cluster.with { cluster in
            let client = try await cluster.supervisor.connect()
            let started = Mutex(false)
            let waiting = Task(executorPreference: client.executor) { () -> SofaError? in
                started.withLock { $0 = true }
                do throws(SofaError) {
                    _ = try await client.echo([1], delayMs: 5_000)
                    return nil
                } catch {
                    return error
                }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while !started.withLock({ $0 }), ContinuousClock.now < deadline { await Task.yield() }
            client.close()
            let error = await waiting.value
            #expect(error?.is(.shuttingDown) == true, "\(String(describing: error))")
            let after = await Task(executorPreference: client.executor) { threadName() }.value
            #expect(after != "bus-client-gate")
        }
    }
}

/// The name of the thread the caller runs on.
private func threadName() -> String { Thread.current.name ?? "" }
