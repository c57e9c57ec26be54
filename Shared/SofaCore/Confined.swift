public import Dispatch

/// A value confined to one serial dispatch queue: the one way Sofa bridges state that blocking
/// calls touch (SQLite connections, files) to Swift concurrency. Every access is checked: the
/// value is only ever reached by code running on the queue, which `dispatchPrecondition` asserts
/// on each call, so a mistake traps at once instead of racing.
///
/// * `run` (see `Confined+Async.swift`) is the async bridge: a job enqueued on the queue, awaited
///   without blocking the cooperative pool, and cancellable until it starts.
/// * `withValue` is for code already on the queue (another job, a timer on the queue).
/// * `sync` blocks the calling thread until a job ran: for set-up and tests, never on the
///   cooperative pool's threads in a hot path.
/// * `async` enqueues a job and does not wait for it.
///
/// Jobs run one at a time in the order they were enqueued.
public final class Confined<Value>: @unchecked Sendable {  // safe: `value` is read and written only on `queue`, which every access checks
    /// The serial queue the value lives on.
    public let queue: DispatchQueue
    private var value: Value

    /// Confines `value` to `queue`, which must be serial. The caller gives the value up.
    public init(_ value: sending Value, queue: DispatchQueue) {
        self.queue = queue
        self.value = value
    }

    /// Confines `value` to a new serial queue named `label`.
    public convenience init(_ value: sending Value, label: String) {
        self.init(value, queue: DispatchQueue(label: label))
    }

    /// A value that must be made on its queue (an SQLite connection checks where it is opened):
    /// `make` runs there, given the queue, and the caller waits for it.
    public static func make<E: Error>(on queue: DispatchQueue,
                                      _ make: (DispatchQueue) throws(E) -> sending Value) throws(E) -> Confined<Value> {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let made: Result<Confined<Value>, E> = queue.sync {
            Result { () throws(E) -> Confined<Value> in Confined(try make(queue), queue: queue) }
        }
        return try made.get()
    }

    /// On the queue only (checked): `body` with the value. Not from inside another access to the
    /// same box (the value is already lent out there: pass it down instead).
    public func withValue<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        return try body(&value)
    }

    /// Runs `body` on the queue and waits for it, blocking the calling thread (which must not be
    /// the queue's).
    public func sync<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let result: Result<T, E> = queue.sync {
            Result { () throws(E) -> T in try self.withValue(body) }
        }
        return try result.get()
    }

    /// Enqueues `body` and returns at once.
    public func async(_ body: @escaping @Sendable (inout Value) -> Void) {
        queue.async { self.withValue(body) }
    }
}
