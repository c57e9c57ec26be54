internal import Synchronization

extension Confined {
    /// Runs `body` on the queue and waits for it without blocking a thread. The job is enqueued
    /// before the caller's isolation is left, so jobs enqueued by one actor (or one task) run in
    /// the order it called `run`.
    ///
    /// Cancelling the calling task before the job starts takes it off: it never runs, and `run`
    /// throws `cancelled` at once. A job that has started finishes (SQLite calls and file writes
    /// are not torn), and `run` returns its result; `onCancel` is then called (from the cancelling
    /// thread) so the job can stop early on its own terms, as a query's interrupt does.
    public func run<T: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        cancelled: @autoclosure @escaping @Sendable () -> SofaError = SofaError(.cancelled, "the job was cancelled before it started"),
        onCancel: @escaping @Sendable () -> Void = {},
        _ body: @escaping @Sendable (inout Value) throws(SofaError) -> T
    ) async throws(SofaError) -> T {
        let job = ConfinedJob<T>()
        let result = await withTaskCancellationHandler(operation: {
            await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Result<T, SofaError>, Never>) in
                guard job.install(continuation, cancelled: cancelled) else { return }
                queue.async {
                    guard job.start() else { return }
                    job.finish(Result { () throws(SofaError) -> T in try self.withValue(body) })
                }
            }
        }, onCancel: {
            if !job.cancel(cancelled) { onCancel() }
        }, isolation: isolation)
        return try result.get()
    }
}

/// One job of `Confined.run`: waiting (with its continuation once installed), cancelled before
/// it started, running, or finished. Whoever moves it out of waiting resumes the continuation
/// (exactly once): the cancelling thread, or the queue when the job finishes.
final class ConfinedJob<T: Sendable>: Sendable {
    private enum Phase {
        case waiting(CheckedContinuation<Result<T, SofaError>, Never>?)
        case cancelled
        case running(CheckedContinuation<Result<T, SofaError>, Never>)
        case finished
    }

    private let phase = Mutex<Phase>(.waiting(nil))

    /// Keeps the continuation; false (and the continuation resumed with `cancelled`) when the
    /// task was cancelled before the job was even enqueued.
    func install(_ continuation: CheckedContinuation<Result<T, SofaError>, Never>,
                 cancelled: () -> SofaError) -> Bool {
        let installed = phase.withLock { phase -> Bool in
            guard case .waiting = phase else { return false }
            phase = .waiting(continuation)
            return true
        }
        if !installed { continuation.resume(returning: .failure(cancelled())) }
        return installed
    }

    /// On the queue, as the job is about to run: false when it was cancelled first.
    func start() -> Bool {
        phase.withLock { phase -> Bool in
            guard case .waiting(let continuation?) = phase else { return false }
            phase = .running(continuation)
            return true
        }
    }

    /// On the queue, with the job's result.
    func finish(_ result: Result<T, SofaError>) {
        let continuation = phase.withLock { phase -> CheckedContinuation<Result<T, SofaError>, Never>? in
            guard case .running(let continuation) = phase else { return nil }
            phase = .finished
            return continuation
        }
        continuation?.resume(returning: result)
    }

    /// From the cancelling thread: true when the job had not started (it never will, and the
    /// caller is answered `cancelled` now); false when it is running or done.
    func cancel(_ cancelled: () -> SofaError) -> Bool {
        let outcome = phase.withLock { phase -> (Bool, CheckedContinuation<Result<T, SofaError>, Never>?) in
            guard case .waiting(let continuation) = phase else { return (false, nil) }
            phase = .cancelled
            return (true, continuation)
        }
        outcome.1?.resume(returning: .failure(cancelled()))
        return outcome.0
    }
}
