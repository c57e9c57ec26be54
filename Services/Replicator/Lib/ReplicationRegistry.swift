internal import SofaCore
internal import SofaWire

/// Every replication of this replicator: its status (with a version bumped by every change), its
/// task, the blobs it already copied, and the callers waiting for a newer status.
///
/// Each start of a replication anew is a *run* with its own number: a replication started again
/// after it ended reuses its ID, so whatever acts on one run (its task's status updates, a stop
/// because its record was deleted) names the run, and leaves a later run of the same ID alone.
actor ReplicationRegistry {
    private var statuses: [String: ReplicationStatus] = [:]
    private var order: [String] = []
    private var tasks: [String: Task<Void, Never>] = [:]
    /// The current run of each replication started since launch.
    private var runs: [String: UInt64] = [:]
    private var lastRun: UInt64 = 0
    private var blobs: [String: Set<String>] = [:]
    private var waiters: [UInt64: (versions: [String: UInt64], continuation: CheckedContinuation<Void, Never>)] = [:]
    private var nextWaiter: UInt64 = 0
    /// Whether the replications recorded in `_replicator` have been read since launch: until
    /// then, an unknown ID may be one of them.
    private(set) var loaded = false
    private var loadWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

    func status(_ id: String) -> ReplicationStatus? { statuses[id] }
    var all: [ReplicationStatus] { order.compactMap { statuses[$0] } }
    /// The number of the current run of `id` (nil: not started since launch).
    func run(of id: String) -> UInt64? { runs[id] }

    /// Registers a replication and starts a new run of it (`run` gets the run's number), unless
    /// it is running already (then its status is answered as it is). One that ended runs anew.
    func start(_ initial: ReplicationStatus, run: @escaping @Sendable (_ number: UInt64) async -> Void) -> ReplicationStatus {
        if let existing = statuses[initial.id], !existing.state.isFinal { return existing }
        var status = initial
        status.version = (statuses[initial.id]?.version ?? 0) + 1
        if statuses[initial.id] == nil { order.append(initial.id) }
        statuses[initial.id] = status
        lastRun += 1
        runs[initial.id] = lastRun
        tasks[initial.id] = Task { [number = lastRun] in await run(number) }
        wake(initial.id)
        return status
    }

    /// Lists a replication that ended before the replicator restarted, as it ended.
    func restore(_ status: ReplicationStatus) {
        guard statuses[status.id] == nil, status.state.isFinal else { return }
        var restored = status
        restored.version = 1
        order.append(status.id)
        statuses[status.id] = restored
        wake(status.id)
    }

    /// Stops `id`; with `run`, only while that run is the current one (a later run is left alone).
    func stop(_ id: String, run: UInt64? = nil) throws(SofaError) -> ReplicationStatus {
        guard let status = statuses[id] else { throw SofaError.notFound("no replication '\(id)'") }
        if let run, runs[id] != run { return status }
        tasks[id]?.cancel()
        tasks[id] = nil
        if !status.state.isFinal { update(id) { $0.state = .stopped } }
        return statuses[id] ?? status
    }

    /// Cancels every replication as the replicator shuts down. They are recorded (in
    /// `_replicator`), so they are not stopped: the restarted replicator resumes them.
    func stopAll() {
        for (id, task) in tasks {
            task.cancel()
            update(id) {
                $0.state = .retrying
                $0.lastError = "the replicator is shutting down: the replication resumes from its checkpoint when it restarts"
            }
        }
        tasks.removeAll()
    }

    /// The replications recorded in `_replicator` have all been started (or there are none).
    func markLoaded() {
        loaded = true
        for waiter in loadWaiters.values { waiter.resume() }
        loadWaiters.removeAll()
    }

    /// Waits until `markLoaded`, or `timeout` runs out; answers whether it was loaded.
    func waitUntilLoaded(timeout: Duration) async -> Bool {
        guard !loaded else { return true }
        nextWaiter += 1
        let key = nextWaiter
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)  // the wait's deadline, not a poll
            await self?.expireLoadWaiter(key)
        }
        await withCheckedContinuation { continuation in
            loadWaiters[key] = continuation
        }
        timer.cancel()
        return loaded
    }

    private func expireLoadWaiter(_ key: UInt64) {
        loadWaiters.removeValue(forKey: key)?.resume()
    }

    /// Changes the status of run `run` of `id` (a stopped replication's state stays stopped); a
    /// run that is no longer the current one changes nothing.
    func update(_ id: String, run: UInt64, _ change: (inout ReplicationStatus) -> Void) {
        guard runs[id] == run else { return }
        update(id, change)
    }

    private func update(_ id: String, _ change: (inout ReplicationStatus) -> Void) {
        guard var status = statuses[id] else { return }
        let wasFinal = status.state.isFinal
        let before = status
        change(&status)
        if wasFinal { status.state = before.state }
        guard status != before else { return }
        status.version = before.version + 1
        statuses[id] = status
        if status.state.isFinal { tasks[id] = nil }
        wake(id)
    }

    /// Waits until the status of `id` is newer than `version`, or `timeout` runs out.
    func waitForChange(_ id: String, after version: UInt64, timeout: Duration) async {
        await waitForChange([id: version], timeout: timeout)
    }

    /// Waits until one of the statuses is newer than the version given for it, or `timeout`
    /// runs out.
    func waitForChange(_ versions: [String: UInt64], timeout: Duration) async {
        guard !versions.contains(where: { (statuses[$0.key]?.version ?? 0) > $0.value }) else { return }
        nextWaiter += 1
        let key = nextWaiter
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)  // the wait's deadline, not a poll
            await self?.expire(key)
        }
        await withCheckedContinuation { continuation in
            waiters[key] = (versions, continuation)
        }
        timer.cancel()
    }

    private func expire(_ key: UInt64) {
        waiters.removeValue(forKey: key)?.continuation.resume()
    }

    private func wake(_ id: String) {
        guard let version = statuses[id]?.version else { return }
        for (key, waiter) in waiters where (waiter.versions[id] ?? .max) < version {
            waiters.removeValue(forKey: key)?.continuation.resume()
        }
    }

    func needsBlob(_ id: String, _ digest: String) -> Bool { !(blobs[id]?.contains(digest) ?? false) }
    func blobCopied(_ id: String, _ digest: String) { blobs[id, default: []].insert(digest) }
    /// The target may have lost it since (a compaction there deletes a blob nothing references).
    func forgetBlob(_ id: String, _ digest: String) { blobs[id]?.remove(digest) }
}
