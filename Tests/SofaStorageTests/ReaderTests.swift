import Foundation
import SofaCore
@testable import SofaStorage
import Testing

/// A database's reads run on several reader connections at once (WAL lets them), each read on
/// the least busy: one long read does not hold the others up.
@Suite struct ReaderTests {
    @Test func aLongReadDoesNotHoldUpAnother() async throws {
        try await withDatabase { _, db in
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            // Holds its reader until released (or 60 s): true when it was released.
            async let long: Bool = db.read { _ in
                entered.signal()
                return release.wait(timeout: .now() + 60) == .success
            }
            await onOwnThread { entered.wait() }
            // Another read, and a document read, while the first holds its reader.
            let count = try await db.read { reader throws(SofaError) -> Int64 in
                var count: Int64 = -1
                try reader.run("SELECT count(*) FROM kv_default") { count = $0.integer(0) }
                return count
            }
            #expect(count == 0)
            await expectError(.notFound) { try await db.read(id: "missing") }
            release.signal()
            #expect(try await long, "the second read waited for the first")
        }
    }
}

/// Runs a blocking wait on a thread of its own, not on the cooperative pool.
private func onOwnThread(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { continuation in
        Thread {
            body()
            continuation.resume()
        }.start()
    }
}
