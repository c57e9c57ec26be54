public import SofaCore
internal import CPosix
internal import Foundation
internal import Synchronization

/// What a socket loop runs on its thread: made there by `SocketLoop.start`, used there only and
/// released there when the loop ends (so the ZeroMQ sockets it holds close on the thread that
/// made them).
public protocol SocketLoopDriver: AnyObject, SendableMetatype {
    /// What other threads hand the loop (`SocketLoop.post`).
    associatedtype Posted: Sendable

    /// The sockets to poll on this turn (they may change between turns: a reconnect).
    var sockets: [ZMQSocket] { get }
    /// The longest a turn waits for a readable socket or a post, in milliseconds: the period
    /// of the driver's timers (heartbeats, deadlines).
    var pollTimeoutMs: Int { get }
    /// One turn of the loop: what was posted since the last turn, in order, and which of
    /// `sockets` are readable (all false after a timeout or a failed poll).
    func turn(posted: [Posted], readable: [Bool])
    /// The loop was closed: what was posted before that, and the driver's last words (a reply
    /// still queued, a goodbye to the peer). Its sockets close when it is released, just after.
    func finish(posted: [Posted])
    /// While the loop runs the jobs of tasks that prefer it, a turn is taken as soon as they have
    /// posted this many items (the first calls go out while the other tasks still make theirs).
    var postsPerTurn: Int { get }
}

extension SocketLoopDriver {
    public var postsPerTurn: Int { .max }
}

/// How a socket loop is ended and followed, whatever it carries (a lifecycle service runs one).
/// It is also an executor: a task that prefers it runs its jobs on the loop's thread.
public protocol SocketLoopControl: TaskExecutor {
    /// The thread's name.
    var name: String { get }
    /// Ends the loop without waiting.
    func requestClose()
    /// Ends the loop and waits until its sockets are closed.
    func close() async
    /// Waits until the loop has ended, without asking it to.
    func waitUntilEnded() async
}

/// One thread owning ZeroMQ sockets for its whole life, and the one loop every socket owner of
/// Sofa runs on it (client, server, broker, worker, publisher, subscriber): poll the driver's
/// sockets and an eventfd, take what other threads posted, hand both to the driver, until closed.
///
/// Other threads never touch the sockets: they `post` (a mutex-guarded inbox, then a wake-up of
/// the poll through the eventfd) and the driver acts on it on the loop's thread. `close` ends the
/// loop after the driver's `finish`, and waits until its sockets are closed.
///
/// The loop is a task executor too (`enqueue`): a task that prefers it (`withTaskExecutorPreference`,
/// `Task(executorPreference:)`) runs on the loop's thread, after the turn that woke it. A client's
/// task then sends its next request and gets its answer without crossing a thread: an answer
/// resumes the task in the same turn, and what the task posts goes out in the next, with no
/// wake-up. Such a task must not block, or the sockets wait with it.
public final class SocketLoop<Posted: Sendable>: SocketLoopControl {
    public let name: String
    private let wakeup: Wakeup
    private let inbox = Mutex<(posted: [Posted], jobs: [UnownedJob], closed: Bool)>(([], [], false))
    /// Callers of `close` waiting for the end of the loop; nil once it ended.
    private let ending = Mutex<[CheckedContinuation<Void, Never>]?>([])
    /// The loop's thread (`pthread_self`), once it runs: what it posts to itself needs no wake-up.
    private let thread = Atomic<UInt>(0)

    private init(name: String) throws(SofaError) {
        self.name = name
        self.wakeup = try Wakeup()
    }

    /// Starts a loop on a thread of its own named `name`. `open` runs first on that thread, with
    /// the loop: it makes the sockets (bind, connect), and returns what the caller gets back (the
    /// loop's owner, say) and the driver. When `open` throws, the thread ends and so does this
    /// call, with its error.
    public static func start<Owner: Sendable, Driver: SocketLoopDriver>(
        name: String,
        open: @escaping @Sendable (SocketLoop<Posted>) throws(SofaError) -> (Owner, Driver)
    ) async throws(SofaError) -> Owner where Driver.Posted == Posted {
        let loop = try SocketLoop(name: name)
        let opened: Result<Owner, SofaError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                // Foundation's name stays in Foundation; this one is the kernel's, which tools show.
                _ = sofa_name_this_thread(name)
                var driver: Driver?
                do throws(SofaError) {
                    let (owner, made) = try open(loop)
                    driver = made
                    continuation.resume(returning: .success(owner))
                } catch {
                    loop.markEnded()
                    continuation.resume(returning: .failure(error))
                    loop.handOffJobs()
                    return
                }
                loop.run(driver!)
                driver = nil  // its sockets close here, on their thread, before anyone is told the loop ended
                loop.markEnded()
                loop.handOffJobs()
            }
            thread.name = name
            thread.start()
        }
        return try opened.get()
    }

    /// Hands `item` to the driver's next turn; false (and nothing queued) once the loop is closed.
    ///
    /// One wake-up per batch: only the post that finds the inbox empty signals the eventfd (the
    /// others find a wake-up already on its way, and the loop takes the whole inbox after it
    /// consumed that signal); a post from the loop's own thread signals nothing, as the loop looks
    /// at its inbox before it waits. Measured on the gateway: a query posted to its own loop twice
    /// (the broker's job, then the reply), and a get cost 3 eventfd writes and reads, now 2;
    /// pipelined gets rose from 19–22k/s to 23–25k/s in the same runs.
    @discardableResult
    public func post(_ item: Posted) -> Bool {
        let (taken, first) = inbox.withLock { inbox -> (Bool, Bool) in
            guard !inbox.closed else { return (false, false) }
            inbox.posted.append(item)
            return (true, inbox.posted.count == 1 && inbox.jobs.isEmpty)
        }
        if taken && first && !onLoopThread { wakeup.signal() }
        return taken
    }

    /// Takes a job of a task that prefers this loop: it runs on the loop's thread after the
    /// current turn (one wake-up per batch, none from the loop's own thread, as `post`). Once
    /// the loop is closed, jobs go to the global executor instead, so no task waits forever.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (taken, first) = inbox.withLock { inbox -> (Bool, Bool) in
            guard !inbox.closed else { return (false, false) }
            inbox.jobs.append(job)
            return (true, inbox.jobs.count == 1 && inbox.posted.isEmpty)
        }
        guard taken else { return globalConcurrentExecutor.enqueue(job) }
        if first && !onLoopThread { wakeup.signal() }
    }

    /// Runs the jobs enqueued so far (not those they enqueue: those wait for the next turn, so a
    /// task that keeps yielding cannot hold the sockets up). Once they have posted the driver's
    /// `postsPerTurn`, those go in a turn at once, before the next job runs.
    private func runJobs<Driver: SocketLoopDriver>(_ driver: Driver) where Driver.Posted == Posted {
        let jobs = inbox.withLock { inbox -> [UnownedJob] in
            defer { inbox.jobs.removeAll(keepingCapacity: true) }
            return inbox.jobs
        }
        let postsPerTurn = driver.postsPerTurn
        for (index, job) in jobs.enumerated() {
            job.runSynchronously(on: asUnownedTaskExecutor())
            guard postsPerTurn != .max, index + 1 < jobs.count else { continue }
            let posted = inbox.withLock { inbox -> [Posted] in
                guard inbox.posted.count >= postsPerTurn, !inbox.closed else { return [] }
                defer { inbox.posted.removeAll(keepingCapacity: true) }
                return inbox.posted
            }
            if !posted.isEmpty { driver.turn(posted: posted, readable: Array(repeating: false, count: driver.sockets.count)) }
        }
    }

    /// The loop has ended: jobs still waiting go to the global executor (new ones go there too,
    /// as the loop is closed).
    private func handOffJobs() {
        let jobs = inbox.withLock { inbox -> [UnownedJob] in
            inbox.closed = true
            defer { inbox.jobs.removeAll() }
            return inbox.jobs
        }
        for job in jobs { globalConcurrentExecutor.enqueue(job) }
    }

    /// Whether the caller runs on the loop's thread.
    private var onLoopThread: Bool { thread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Makes the driver take a turn soon, with nothing posted (a state it reads has changed).
    public func wake() { wakeup.signal() }

    /// Whether `close` was called.
    public var isClosed: Bool { inbox.withLock { $0.closed } }

    /// Ends the loop after its current turn and the driver's `finish`, without waiting.
    public func requestClose() {
        inbox.withLock { $0.closed = true }
        wakeup.signal()
    }

    /// Ends the loop (see `requestClose`) and waits until its sockets are closed: an endpoint it
    /// bound can be bound again.
    public func close() async {
        requestClose()
        await waitUntilEnded()
    }

    /// Waits until the loop has ended, without asking it to (a lifecycle service's `run`).
    public func waitUntilEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = ending.withLock { ending -> Bool in
                guard ending != nil else { return false }
                ending!.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }

    private func run<Driver: SocketLoopDriver>(_ driver: Driver) where Driver.Posted == Posted {
        thread.store(UInt(pthread_self()), ordering: .relaxed)
        while true {
            let sockets = driver.sockets
            // Something already waiting (posted by the loop itself, or after the wake-up of an
            // earlier post was consumed): look at the sockets without waiting.
            let waiting = inbox.withLock { !$0.posted.isEmpty || !$0.jobs.isEmpty || $0.closed }
            // A failed poll reads as "nothing ready": the driver's timers still run.
            let ready = (try? poll(sockets, fds: [wakeup.fd], timeoutMs: waiting ? 0 : driver.pollTimeoutMs))
                ?? Array(repeating: false, count: sockets.count + 1)
            if ready[sockets.count] { wakeup.drain() }
            let (posted, closed) = inbox.withLock { inbox in
                defer { inbox.posted.removeAll(keepingCapacity: true) }
                return (inbox.posted, inbox.closed)
            }
            if closed {
                driver.finish(posted: posted)
                return
            }
            driver.turn(posted: posted, readable: Array(ready.prefix(sockets.count)))
            // Tasks that prefer this loop and were woken (by answers of that turn, or from other
            // threads): what they post goes out in the turn just below.
            runJobs(driver)
            // What that turn posted to the loop itself (a server's replies, made as it read its
            // requests) goes at once, in one more turn with nothing readable, rather than after
            // another poll: a reply to a get went out one poll later (the poll asks each socket
            // for its events, a dozen system calls with the gateway's seven).
            let own = inbox.withLock { inbox -> [Posted] in
                guard !inbox.closed else { return [] }
                defer { inbox.posted.removeAll(keepingCapacity: true) }
                return inbox.posted
            }
            if !own.isEmpty { driver.turn(posted: own, readable: Array(repeating: false, count: driver.sockets.count)) }
        }
    }

    /// The loop has ended: whoever waits for it goes on.
    private func markEnded() {
        let waiters = ending.withLock { ending in
            defer { ending = nil }
            return ending ?? []
        }
        for waiter in waiters { waiter.resume() }
    }
}
