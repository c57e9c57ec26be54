public import SofaWire
public import SofaCore
internal import Foundation
internal import Synchronization

/// Long-poll waiters of the changes feed, keyed by database and collection, woken by the commit
/// notices storage publishes. A waiter waits for a notice whose last sequence is beyond the one it
/// has seen, or for its timeout; it then reads the changes from storage itself, so a lost notice
/// costs at most a timeout and never a change.
public final class ChangeWaiters: Sendable {
    struct Key: Hashable {
        var database: String
        var collection: String
    }

    private struct State {
        var lastSequence: [Key: UInt64] = [:]
        var waiters: [Key: [UInt64: (threshold: UInt64, continuation: CheckedContinuation<Void, Never>)]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// "" → `_default._default`; "name" → `_default.name`.
    public static func normalize(collection: String) -> String {
        if collection.isEmpty { return "_default._default" }
        return collection.contains(".") ? collection : "_default.\(collection)"
    }

    public func notify(_ notice: CommitNotice) {
        notify(CommitNotice.Summary(database: notice.database, collection: notice.collection,
                                    lastSequence: max(notice.batch.lastSequence, notice.batch.changes.map(\.sequence).max() ?? 0)))
    }

    public func notify(_ notice: CommitNotice.Summary) {
        let key = Key(database: notice.database, collection: Self.normalize(collection: notice.collection))
        let sequence = notice.lastSequence
        let woken: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.lastSequence[key] = max(state.lastSequence[key] ?? 0, sequence)
            guard var waiting = state.waiters[key] else { return [] }
            let ready = waiting.filter { $0.value.threshold < sequence }
            for id in ready.keys { waiting.removeValue(forKey: id) }
            state.waiters[key] = waiting.isEmpty ? nil : waiting
            return ready.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Waits until a notice shows a sequence beyond `threshold`, or `timeout` passes.
    public func wait(database: String, collection: String, beyond threshold: UInt64, timeout: Duration) async {
        let key = Key(database: database, collection: Self.normalize(collection: collection))
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = state.withLock { state -> Bool in
                if (state.lastSequence[key] ?? 0) > threshold { return true }
                state.waiters[key, default: [:]][id] = (threshold, continuation)
                return false
            }
            if already {
                continuation.resume()
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                self.cancel(key, id)
            }
        }
    }

    private func cancel(_ key: Key, _ id: UInt64) {
        let continuation = state.withLock { state in
            state.waiters[key]?.removeValue(forKey: id)?.continuation
        }
        continuation?.resume()
    }
}
