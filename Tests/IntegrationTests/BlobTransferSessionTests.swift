import Foundation
import SofaBlob
import SofaWire
import Testing
import SofaTestSupport

/// The service's write sessions, in process: a session left idle is reaped and its temporary
/// file removed; a write beyond the reorder buffer's bound is refused as busy.
// Off the cooperative pool: it waits for `sha1sum` to read a whole file.
@Suite(.ownThreads) struct BlobTransferSessionTests {
    private func database() throws -> URL {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bt-\(UUID().uuidString.prefix(8))")
        let db = data.appendingPathComponent("app.sofa")
        try FileManager.default.createDirectory(at: db, withIntermediateDirectories: true)
        try #require(FileManager.default.createFile(atPath: db.appendingPathComponent("db.sqlite3").path, contents: nil))
        return data
    }

    private func temporaryFiles(_ data: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("app.sofa/Attachments").path)
            .filter { $0.hasSuffix(".tmp") }
    }

    @Test func idleSessionsAreReapedAndLeaveNoFile() async throws {
        let data = try database()
        defer { try? FileManager.default.removeItem(at: data) }
        let transfer = BlobTransfer(dataDirectory: data, idleTimeout: .seconds(2))
        await transfer.start()
        let begun = await transfer.handle(Request(id: 1, database: "app", operation: .blobWriteBegin(expectedKey: "")))
        guard case .success(.blobWriteStarted(let id))? = begun?.outcome else { Issue.record("\(String(describing: begun))"); return }
        let chunk = await transfer.handle(Request(id: 2, database: "app", operation: .blobWriteChunk(writeID: id, offset: 0, bytes: [1, 2, 3])))
        #expect(chunk?.outcome == .success(.none))
        #expect(try temporaryFiles(data).count == 1)
        // The reaper drops the session, then removes its file on the database's I/O queue, then
        // announces it. The deadline only guards against a hang: the reaper runs on the
        // cooperative pool, which the parallel suite keeps busy for up to 40 s at its start
        // (a synchronous state-machine test was measured waiting that long for a thread).
        let expired = try await withDeadline(.seconds(120)) { () async -> UInt64? in
            for await expired in transfer.expired where expired == id { return expired }
            return nil
        }
        #expect(expired == id)
        #expect(await transfer.openSessions == 0)
        #expect(try temporaryFiles(data).isEmpty)
        let late = await transfer.handle(Request(id: 3, database: "app", operation: .blobWriteEnd(writeID: id, length: 3)))
        guard case .failure(let error)? = late?.outcome else { Issue.record("\(String(describing: late))"); return }
        #expect(error.is(.notFound))
        await transfer.stop()
    }

    /// Many small chunks sent at once, in every order the scheduler picks, always make the same
    /// blob: chunks reach the file in offset order.
    @Test func concurrentChunksAreWrittenInOffsetOrder() async throws {
        let data = try database()
        defer { try? FileManager.default.removeItem(at: data) }
        let transfer = BlobTransfer(dataDirectory: data)
        let content = pseudoRandomBytes(256 * 1000, seed: 21)
        let expected = try sha1sumKey(of: content, in: data)
        for round in 0..<20 {
            let begun = await transfer.handle(Request(id: 1, database: "app", operation: .blobWriteBegin(expectedKey: expected)))
            guard case .success(.blobWriteStarted(let id))? = begun?.outcome else { Issue.record("\(String(describing: begun))"); return }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<256 {
                    let piece = Array(content[(index * 1000)..<((index + 1) * 1000)])
                    group.addTask {
                        let response = await transfer.handle(Request(id: 2, database: "app", operation: .blobWriteChunk(
                            writeID: id, offset: UInt64(index * 1000), bytes: piece)))
                        #expect(response?.outcome == .success(.none))
                    }
                }
            }
            let end = await transfer.handle(Request(id: 3, database: "app", operation: .blobWriteEnd(writeID: id, length: 256_000)))
            #expect(end?.outcome == .success(.blob(BlobInfo(key: expected, length: 256_000))), "round \(round)")
        }
        await transfer.stop()
    }

    /// A blob that would grow over `maxBlobBytes` ends its upload with the limit named; nothing
    /// of it is kept, and the session is gone.
    @Test func aBlobOverTheSizeLimitIsRefusedAndDropped() async throws {
        let data = try database()
        defer { try? FileManager.default.removeItem(at: data) }
        let transfer = BlobTransfer(dataDirectory: data, maxBlobBytes: 1000)
        let begun = await transfer.handle(Request(id: 1, database: "app", operation: .blobWriteBegin(expectedKey: "")))
        guard case .success(.blobWriteStarted(let id))? = begun?.outcome else { Issue.record("\(String(describing: begun))"); return }
        let first = await transfer.handle(Request(id: 2, database: "app", operation: .blobWriteChunk(
            writeID: id, offset: 0, bytes: Array(repeating: 1, count: 600))))
        #expect(first?.outcome == .success(.none))
        let second = await transfer.handle(Request(id: 3, database: "app", operation: .blobWriteChunk(
            writeID: id, offset: 600, bytes: Array(repeating: 2, count: 600))))
        guard case .failure(let error)? = second?.outcome else { Issue.record("an oversized blob was taken"); return }
        #expect(error.is(.messageTooLarge) && error.message.contains("SOFA_MAX_BLOB_BYTES"), "\(error)")
        #expect(await transfer.openSessions == 0)
        await transfer.stop()
    }

    @Test func theReorderBufferIsBounded() async throws {
        let data = try database()
        defer { try? FileManager.default.removeItem(at: data) }
        let transfer = BlobTransfer(dataDirectory: data)
        let begun = await transfer.handle(Request(id: 1, database: "app", operation: .blobWriteBegin(expectedKey: "")))
        guard case .success(.blobWriteStarted(let id))? = begun?.outcome else { Issue.record("\(String(describing: begun))"); return }
        let piece = [UInt8](repeating: 7, count: 8 << 20)
        // Eight 8 MiB chunks wait for the one at offset 0; the ninth would pass 64 MiB.
        for index in 1...8 {
            let response = await transfer.handle(Request(id: 2, database: "app", operation: .blobWriteChunk(
                writeID: id, offset: UInt64(index) * UInt64(piece.count), bytes: piece)))
            #expect(response?.outcome == .success(.none), "chunk \(index)")
        }
        let refused = await transfer.handle(Request(id: 3, database: "app", operation: .blobWriteChunk(
            writeID: id, offset: 9 * UInt64(piece.count), bytes: piece)))
        guard case .failure(let error)? = refused?.outcome else { Issue.record("\(String(describing: refused))"); return }
        #expect(error.is(.busy))
        // The missing first chunk drains the buffer; the session then completes.
        let first = await transfer.handle(Request(id: 4, database: "app", operation: .blobWriteChunk(writeID: id, offset: 0, bytes: piece)))
        #expect(first?.outcome == .success(.none))
        let end = await transfer.handle(Request(id: 5, database: "app", operation: .blobWriteEnd(writeID: id, length: 9 * UInt64(piece.count))))
        guard case .success(.blob(let info))? = end?.outcome else { Issue.record("\(String(describing: end))"); return }
        #expect(info.length == 9 * UInt64(piece.count))
        #expect(try temporaryFiles(data).isEmpty)
        await transfer.stop()
    }
}
