import Testing
import Dispatch
import Synchronization
import SofaTestSupport
@testable import SofaCore

/// `Confined`: jobs run on its queue, one at a time, in order; results and errors come back;
/// a job cancelled before it starts never runs, one that started finishes. (Touching the value
/// from the wrong queue traps by design, which is not tested.) The jobs block on semaphores, so
/// the suite and the tasks it starts run on threads of their own (a busy cooperative pool would
/// delay them past any deadline); every wait has a deadline.
@Suite(.ownThreads) struct ConfinedTests {
    static let deadline: DispatchTimeInterval = .seconds(10)
    static let marker = DispatchSpecificKey<String>()

    /// A box on a queue that can say whether the running code is on it.
    static func box(_ value: Int = 0) -> Confined<Int> {
        let queue = DispatchQueue(label: "sofa.tests.confined")
        queue.setSpecific(key: marker, value: "confined")
        return Confined(value, queue: queue)
    }

    static var onQueue: Bool { DispatchQueue.getSpecific(key: marker) == "confined" }

    @Test func jobsRunOnTheQueueInTheOrderTheyWereEnqueued() async throws {
        let box = Confined([String](), label: "sofa.tests.order")
        box.async { $0.append("a") }
        let seen = try await box.run { value in
            value.append("b")
            return value
        }
        box.async { $0.append("c") }
        box.async { $0.append("d") }
        let all = box.sync { $0 }
        #expect(seen == ["a", "b"])
        #expect(all == ["a", "b", "c", "d"])
    }

    @Test func jobsRunOnItsQueueAndAnswerTheirResults() async throws {
        let box = Self.box(40)
        let (value, wasOnQueue) = try await box.run { value in
            value += 2
            return (value, ConfinedTests.onQueue)
        }
        #expect(value == 42)
        #expect(wasOnQueue)
        #expect(!Self.onQueue)
        #expect(box.sync { ($0, ConfinedTests.onQueue) } == (42, true))
        let made = Confined<Int>.make(on: box.queue) { queue in Self.onQueue && queue === box.queue ? 1 : 0 }
        #expect(made.sync { $0 } == 1)
    }

    @Test func thrownErrorsReachTheCallerAndTheQueueGoesOn() async throws {
        let box = Self.box(1)
        let thrown = SofaError(.conflict, "no, this job refuses")
        await #expect(throws: thrown) {
            try await box.run { (value: inout Int) throws(SofaError) -> Int in
                value = 2
                throw thrown
            }
        }
        #expect(throws: thrown) { try box.sync { (_: inout Int) throws(SofaError) in throw thrown } }
        #expect(try await box.run { $0 } == 2)
    }

    @Test func aJobCancelledBeforeItStartsNeverRunsAndItsCallerIsAnsweredAtOnce() async throws {
        let box = Self.box()
        let gate = DispatchSemaphore(value: 0)
        let opened = Atomic<Bool>(false)
        box.async { _ in _ = gate.wait(timeout: .now() + ConfinedTests.deadline) }
        // Should the caller wait for the queue, the gate opens at the deadline and says so.
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.deadline) {
            opened.store(true, ordering: .sequentiallyConsistent)
            gate.signal()
        }
        let task = Task(executorPreference: OwnThreadExecutor.shared) {
            try await box.run { (value: inout Int) in value += 1 }
        }
        task.cancel()
        let result = await task.result
        let waitedForTheQueue = opened.load(ordering: .sequentiallyConsistent)
        #expect(!waitedForTheQueue, "the cancelled caller waited for the queue")
        #expect(throws: SofaError(.cancelled, "the job was cancelled before it started")) { try result.get() }
        gate.signal()
        #expect(try await box.run { $0 } == 0)
    }

    @Test func aJobCancelledAfterItStartedFinishesAndHearsOfIt() async throws {
        let box = Self.box()
        let started = DispatchSemaphore(value: 0)
        let cancelHeard = DispatchSemaphore(value: 0)
        let task = Task(executorPreference: OwnThreadExecutor.shared) {
            try await box.run(onCancel: { cancelHeard.signal() }) { (value: inout Int) -> Bool in
                started.signal()
                let heard = cancelHeard.wait(timeout: .now() + ConfinedTests.deadline) == .success
                value += 1
                return heard
            }
        }
        #expect(started.wait(timeout: .now() + Self.deadline) == .success)
        task.cancel()
        #expect(try await task.value == true)
        #expect(try await box.run { $0 } == 1)
    }

    @Test func aTaskAlreadyCancelledEnqueuesNothing() async throws {
        let box = Self.box()
        let errors = await Task(executorPreference: OwnThreadExecutor.shared) { () -> [SofaError?] in
            withUnsafeCurrentTask { $0?.cancel() }
            var errors: [SofaError?] = []
            do throws(SofaError) {
                try await box.run(cancelled: SofaError(.cancelled, "gone")) { $0 += 1 }
                errors.append(nil)
            } catch {
                errors.append(error)
            }
            do throws(SofaError) {
                try await box.run { $0 += 1 }
                errors.append(nil)
            } catch {
                errors.append(error)
            }
            return errors
        }.value
        #expect(errors == [SofaError(.cancelled, "gone"), SofaError(.cancelled, "the job was cancelled before it started")])
        #expect(box.sync { $0 } == 0)
    }
}
