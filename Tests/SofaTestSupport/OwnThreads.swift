public import Testing
internal import Foundation

/// A task executor that runs each job on a new thread of its own.
///
/// The suite runs every test at once on the cooperative pool, which has as many threads as
/// the machine has cores (two here). A test that computes for seconds, or blocks on fsync,
/// holds one of them all that time, and every other test's next step waits behind it: a
/// 200 ms timer firing ten seconds late. Jobs run here instead share the cores with everything
/// else through the kernel's scheduler. A new thread per job is cheap next to what these
/// tests do, and they have few jobs.
public final class OwnThreadExecutor: TaskExecutor {
    public static let shared = OwnThreadExecutor()
    /// Set in the thread dictionary of the threads running its jobs, so a test can tell.
    static let mark = "sofa.tests.own-thread"

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let thread = Thread {
            Thread.current.threadDictionary[Self.mark] = true
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Whether the caller runs on one of its threads.
    public static var isCurrent: Bool { Thread.current.threadDictionary[mark] as? Bool == true }
}

/// Runs `body` in the caller's task (so `#expect` and `Issue.record` inside still belong to the
/// test) with its jobs on threads of their own instead of the cooperative pool.
public func offPool<T: Sendable>(_ body: () throws -> T) async throws -> T {
    try await withTaskExecutorPreference(OwnThreadExecutor.shared) { try body() }
}

/// The trait that runs a suite's or test's jobs on threads of their own (`OwnThreadExecutor`):
/// for tests that compute for long or block.
public struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(OwnThreadExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreads {
    /// Runs the tests' jobs on threads of their own, off the cooperative pool.
    public static var ownThreads: Self { OwnThreads() }
}
