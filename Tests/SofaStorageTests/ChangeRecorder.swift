import SofaTestSupport
import Foundation
import SofaCore
import SofaStorage
import Synchronization
import Testing

/// Records what the engine's onCommit hook reports and lets a test wait for it, with a deadline.
final class ChangeRecorder: Sendable {
    let received = Mutex<[CommitNotice]>([])
    let stream: AsyncStream<Void>
    let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    var hook: @Sendable (CommitNotice) -> Void {
        { changes in
            self.received.withLock { $0.append(changes) }
            self.continuation.yield()
        }
    }

    var all: [CommitNotice] { received.withLock { $0 } }
    var events: [Change] { all.flatMap(\.batch.changes) }

    /// Waits until `predicate` holds for what was received; false after `timeout`.
    func wait(timeout: Duration = .seconds(10), until predicate: @escaping @Sendable ([CommitNotice]) -> Bool) async -> Bool {
        if predicate(all) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in self.stream where predicate(self.all) { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)  // the deadline, not a wait for the event
                return predicate(self.all)
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

/// An engine with a recorder on its hook and a database "db" of the given versioning.
func withRecordedDatabase<T>(_ versioning: Versioning = .revisionTrees, maxRevTreeDepth: Int? = nil,
                             _ body: (StorageEngine, DatabaseStore, ChangeRecorder) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { url in
        let recorder = ChangeRecorder()
        let engine = try StorageEngine(dataDirectory: url, onCommit: recorder.hook, maxRevTreeDepth: maxRevTreeDepth)
        defer { engine.close() }
        try await engine.createDatabase("db", versioning: versioning)
        return try await body(engine, try await engine.database("db"), recorder)
    }
}
