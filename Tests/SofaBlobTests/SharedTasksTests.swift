import Dispatch
import Foundation
@testable import SofaBlob
@testable import SofaFiles
import Synchronization
import Testing

@Suite struct SharedTasksTests {
    /// How many times each task ran.
    final class Runs: Sendable {
        let counts: Mutex<[Int]>
        init(_ count: Int) { counts = Mutex([Int](repeating: 0, count: count)) }
        func record(_ task: Int) { counts.withLock { $0[task] += 1 } }
        var all: [Int] { counts.withLock { $0 } }
    }

    @Test func everyTaskRunsOnce() throws {
        let runs = Runs(50)
        try SharedTasks(count: 50, on: DispatchQueue(label: "helper")) { runs.record($0) }.finish()
        #expect(runs.all == [Int](repeating: 1, count: 50))
    }

    /// A queue whose thread never comes (suspended): the caller runs everything and returns;
    /// the queue's thread, once it runs, finds nothing left.
    @Test func theCallerNeverWaitsForAThreadThatDoesNotCome() throws {
        let queue = DispatchQueue(label: "stuck")
        queue.suspend()
        let runs = Runs(9)
        try SharedTasks(count: 9, on: queue) { runs.record($0) }.finish()
        #expect(runs.all == [Int](repeating: 1, count: 9))
        queue.resume()
        queue.sync {}  // the helper's turn has come and gone
        #expect(runs.all == [Int](repeating: 1, count: 9))
    }

    /// The queue's thread takes task 0 and is still in it when the caller runs out of tasks: the
    /// caller waits for it to end.
    @Test func theCallerWaitsForTheTaskTheHelperIsRunning() throws {
        let started = DispatchSemaphore(value: 0), secondDone = DispatchSemaphore(value: 0)
        let finished = Mutex(false)
        let tasks = SharedTasks(count: 2, on: DispatchQueue(label: "helper")) { task in
            if task == 0 {
                started.signal()
                _ = secondDone.wait(timeout: .now() + 10)  // ends only after the caller's task
                finished.withLock { $0 = true }
            } else {
                secondDone.signal()
            }
        }
        #expect(started.wait(timeout: .now() + 10) == .success)
        try tasks.finish()
        #expect(finished.withLock { $0 })
    }

    @Test func theFirstErrorIsThrownAndTheOtherTasksStillRun() {
        struct Failure: Error, Equatable { let task: Int }
        let runs = Runs(6)
        let queue = DispatchQueue(label: "stuck")
        queue.suspend()  // every task on the caller, from the last: task 4 fails first
        defer { queue.resume() }
        #expect(throws: Failure(task: 4)) {
            try SharedTasks(count: 6, on: queue) { task in
                runs.record(task)
                if task == 4 || task == 1 { throw Failure(task: task) }
            }.finish()
        }
        #expect(runs.all == [Int](repeating: 1, count: 6))
    }
}
