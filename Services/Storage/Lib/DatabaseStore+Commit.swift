internal import SofaQL
import SofaCore
internal import Foundation

/// A unit of work for the writer: `run` applies it inside the open transaction and returns how to
/// answer its caller once the transaction committed; `fail` answers it when the transaction could
/// not commit. `run` must either change nothing and return a refusal, or make all its changes.
/// Work whose `deadline` has passed is never committed: it fails with `WriteDeadline.passed`.
struct PendingWork: Sendable {
    var run: @Sendable (Transaction) throws(SofaError) -> @Sendable () -> Void
    var fail: @Sendable (SofaError) -> Void
    var deadline: ContinuousClock.Instant? = nil

    var expired: Bool { WriteDeadline.hasPassed(deadline) }
}

/// The state of one write transaction, on the writer queue only: sequences handed out, changes
/// made, and what to do after COMMIT. Thrown away on ROLLBACK.
final class Transaction {
    let db: SQLiteConnection
    let store: DatabaseStore
    private var sequences: [String: Int64] = [:]
    private var purgeCounts: [String: Int64] = [:]
    var updates: Int64 = 0
    var events: [(collection: CollectionName, events: [Change])] = []
    var expirationsChanged = false
    var afterCommit: [() -> Void] = []

    init(db: SQLiteConnection, store: DatabaseStore) {
        self.db = db
        self.store = store
    }

    /// The next sequence of `collection`'s key store.
    func nextSequence(_ collection: CollectionName) throws(SofaError) -> UInt64 {
        let store = collection.keyStore
        var last: Int64
        if let cached = sequences[store] {
            last = cached
        } else {
            last = 0
            try db.run("SELECT lastSeq FROM kvmeta WHERE name = ?", [.text(store)]) { last = $0.integer(0) }
        }
        last += 1
        sequences[store] = last
        return UInt64(last)
    }

    /// Gives back the sequence `nextSequence` just handed out, when nothing was written with it.
    func returnSequence(_ collection: CollectionName) {
        sequences[collection.keyStore]? -= 1
    }

    /// Records a change for the hook and the update sequence.
    func changed(_ collection: CollectionName, _ event: Change, purge: Bool = false) {
        updates += 1
        if purge { purgeCounts[collection.keyStore, default: 0] += 1 }
        if let i = events.firstIndex(where: { $0.collection == collection }) {
            events[i].events.append(event)
        } else {
            events.append((collection, [event]))
        }
    }

    /// Writes the counters back before COMMIT.
    func finish() throws(SofaError) {
        for (store, last) in sequences {
            try db.run("""
                INSERT INTO kvmeta (name, lastSeq) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET lastSeq = excluded.lastSeq
                """, [.text(store), .integer(last)])
        }
        for (store, count) in purgeCounts {
            try db.run("UPDATE kvmeta SET purgeCnt = purgeCnt + ? WHERE name = ?", [.integer(count), .text(store)])
        }
        if updates > 0 {
            try db.run("""
                INSERT INTO kv_info (key, sequence) VALUES ('updateSequence', ?)
                ON CONFLICT(key) DO UPDATE SET sequence = sequence + excluded.sequence
                """, [.integer(updates)])
        }
    }
}

extension DatabaseStore {
    /// Queues `body` for the next group commit and waits until it is durable. `body` returns a
    /// refusal as `.failure` (nothing changed); a thrown error rolls the batch back. The work is
    /// committed only before `WriteDeadline.current` (when one is set).
    func perform<T: Sendable>(
        _ body: @escaping @Sendable (Transaction) throws(SofaError) -> Result<T, SofaError>
    ) async throws(SofaError) -> T {
        let deadline = WriteDeadline.current
        if WriteDeadline.hasPassed(deadline) { throw WriteDeadline.passed }
        let result: Result<T, SofaError> = await withCheckedContinuation { continuation in
            let work = PendingWork(
                run: { (tx: Transaction) throws(SofaError) -> @Sendable () -> Void in
                    let outcome = try body(tx)
                    return { continuation.resume(returning: outcome) }
                },
                fail: { error in continuation.resume(returning: .failure(error)) },
                deadline: deadline)
            enqueue(work)
        }
        return try result.get()
    }

    func enqueue(_ work: PendingWork) {
        let (schedule, closed) = pending.withLock { state -> (Bool, Bool) in
            if state.closed { return (false, true) }
            state.items.append(work)
            defer { state.scheduled = true }
            return (!state.scheduled, false)
        }
        if closed {
            work.fail(.notFound("database '\(name)' was deleted or closed"))
        } else if schedule {
            writer.async { connection in self.commitPending(connection) }
        }
    }

    private func commitPending(_ db: SQLiteConnection) {
        let taken = pending.withLock { state in
            defer {
                state.items.removeAll()
                state.scheduled = false
            }
            return state.items
        }
        var items = Self.failExpired(taken)
        while !items.isEmpty {
            do {
                let answers = try commit(db, items)
                for answer in answers { answer() }
                return
            } catch {
                try? db.execute("ROLLBACK")
                // Work whose deadline passed while the batch ran: it fails alone, the rest commits.
                guard items.contains(where: \.expired) else {
                    commitOneByOne(db, items, error)
                    return
                }
                items = Self.failExpired(items)
            }
        }
    }

    /// Answers the work whose deadline has passed (nothing of it was written) and returns the rest.
    private static func failExpired(_ items: [PendingWork]) -> [PendingWork] {
        guard items.contains(where: \.expired) else { return items }
        var kept: [PendingWork] = []
        for item in items {
            if item.expired { item.fail(WriteDeadline.passed) } else { kept.append(item) }
        }
        return kept
    }

    /// One write broke the batch: the others are committed one by one so only it fails.
    private func commitOneByOne(_ db: SQLiteConnection, _ items: [PendingWork], _ error: SofaError) {
        if items.count == 1 {
            items[0].fail(error)
            return
        }
        for item in items {
            do {
                try commit(db, [item])[0]()
            } catch {
                try? db.execute("ROLLBACK")
                item.fail(error)
            }
        }
    }

    /// One transaction for the batch; after COMMIT, the hook hears of every change, then the
    /// answers are returned (to be sent in order).
    private func commit(_ db: SQLiteConnection, _ items: [PendingWork]) throws(SofaError) -> [@Sendable () -> Void] {
        try db.execute("BEGIN IMMEDIATE")
        let tx = Transaction(db: db, store: self)
        var answers: [@Sendable () -> Void] = []
        answers.reserveCapacity(items.count)
        for item in items {
            answers.append(try item.run(tx))
        }
        if items.contains(where: \.expired) { throw WriteDeadline.passed }
        try tx.finish()
        try db.execute("COMMIT")
        for action in tx.afterCommit { action() }
        if let onCommit {
            for (collection, events) in tx.events {
                let batch = ChangesBatch(changes: events, lastSequence: events.map(\.sequence).max() ?? 0)
                onCommit(CommitNotice(database: name, collection: collection.description, batch: batch))
            }
        }
        if tx.expirationsChanged { rescheduleExpiry(db) }
        return answers
    }
}
