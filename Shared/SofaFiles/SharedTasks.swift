public import Dispatch
import Synchronization

/// Tasks `0..<count` shared by the calling thread and one thread of a queue: the queue's thread
/// takes them from the first, the caller (in `finish`) from the last. The caller never waits for
/// a task no thread has begun: if the queue's thread is slow to come (a busy process, its thread
/// pool spent), the caller runs them all, and the queue's thread later finds none left and
/// touches nothing. So work split this way cannot hang on a thread that never comes.
public final class SharedTasks: Sendable {
    private struct State {
        var front = 0
        var back: Int
        /// The queue's thread is running a task it took.
        var helperBusy = false
        /// The caller waits for that task to end.
        var callerWaiting = false
    }

    private let state: Mutex<State>
    private let helperDone = DispatchSemaphore(value: 0)
    private let failure = Mutex<(any Error)?>(nil)
    private let task: @Sendable (Int) throws -> Void

    /// Offers the tasks to `queue`'s thread at once; `finish` runs the caller's share.
    public init(count: Int, on queue: DispatchQueue, _ task: @escaping @Sendable (Int) throws -> Void) {
        state = Mutex(State(back: count))
        self.task = task
        queue.async { self.runHelper() }
    }

    private func runHelper() {
        while true {
            let (index, wake): (Int?, Bool) = state.withLock { state in
                if state.front < state.back {
                    state.helperBusy = true
                    state.front += 1
                    return (state.front - 1, false)
                }
                state.helperBusy = false
                defer { state.callerWaiting = false }
                return (nil, state.callerWaiting)
            }
            guard let index else {
                if wake { helperDone.signal() }
                return
            }
            run(index)
        }
    }

    /// Runs the tasks the queue's thread has not taken (from the last), waits for the one it is
    /// running, if any, and throws the first error of any task. Call it once.
    public func finish() throws {
        while let index = state.withLock({ state -> Int? in
            guard state.front < state.back else { return nil }
            state.back -= 1
            return state.back
        }) {
            run(index)
        }
        let wait = state.withLock { state in
            if state.helperBusy { state.callerWaiting = true }
            return state.helperBusy
        }
        if wait { helperDone.wait() }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func run(_ index: Int) {
        do {
            try task(index)
        } catch {
            failure.withLock { if $0 == nil { $0 = error } }
        }
    }
}
