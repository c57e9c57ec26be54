import SofaFiles
internal import SofaCore
public import SofaWire
public import Foundation
internal import Synchronization

/// sofa-blob's bus operations: uploads as write sessions, ranged reads, stat, and the database
/// key (encrypting a new database's store, rekey).
///
/// Each database's store (`<data>/<db>.sofa/Attachments/`, plain, or encrypted with the key its
/// `KeyFile` keeps) has its own serial
/// DispatchQueue, and every file operation of that store (open, write, install, read) runs there,
/// bridged to Swift concurrency by a continuation, so the cooperative pool never blocks.
///
/// The gateway handles each request in its own task, so chunks of one upload may arrive out of
/// order. A session keeps a reorder buffer: a chunk at `nextOffset` is queued for writing at once
/// (with any buffered chunks that follow it), a chunk further ahead waits in the buffer (at most
/// `maxBufferedBytes`, beyond which the chunk is refused as `.busy`), and a chunk at an offset
/// already received is `.invalidParameter`. Because decisions are taken on the actor and the
/// write is enqueued before the actor is left, the serial queue sees chunks in offset order.
/// Sessions idle longer than `idleTimeout` are cancelled by a reaper: their file goes.
public actor BlobTransfer {
    public static let maxBufferedBytes = 64 << 20
    /// The largest range one `blobRead` answers (larger requests get this much).
    public static let maxReadLength = 4 << 20

    private struct Session {
        let database: String
        let expected: BlobKey?
        let writer: Confined<BlobWriter>
        let store: StoreSlot
        var nextOffset: UInt64 = 0
        var buffered: [UInt64: [UInt8]] = [:]
        var bufferedBytes = 0
        var lastActivity = ContinuousClock.now
        /// The first write error; every later call of the session gets it.
        var failure: SofaError?
    }

    private let dataDirectory: URL
    private let idleTimeout: Duration
    /// The largest blob taken (`SOFA_MAX_BLOB_BYTES`): a chunk that would go beyond it ends the
    /// upload with an error, and nothing of the blob stays.
    private let maxBlobBytes: UInt64
    private var stores: [String: StoreSlot] = [:]
    private var sessions: [UInt64: Session] = [:]
    private var reaper: Task<Void, Never>?
    /// The ids of the sessions the reaper cancelled for idleness, each once its file is gone.
    public nonisolated let expired: AsyncStream<UInt64>
    private nonisolated let expiredContinuation: AsyncStream<UInt64>.Continuation

    public init(dataDirectory: URL, idleTimeout: Duration = .seconds(30), maxBlobBytes: UInt64 = 4 << 30) {
        self.maxBlobBytes = maxBlobBytes
        self.dataDirectory = dataDirectory
        self.idleTimeout = idleTimeout
        (expired, expiredContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// Starts the idle-session reaper in a task of its own (see `runReaper`).
    public func start() {
        guard reaper == nil else { return }
        reaper = Task { [weak self] in await self?.runReaper() }
    }

    /// The idle-session reaper: cancels sessions idle for longer than the idle timeout, checking a
    /// few times per timeout, until cancelled (sofa-blob runs it as a lifecycle service).
    public nonisolated func runReaper() async {
        let period = max(idleTimeout / 4, .milliseconds(10))
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            await reapIdleSessions()
        }
    }

    /// Cancels every session (their files go) and stops the reaper.
    public func stop() async {
        reaper?.cancel()
        reaper = nil
        for id in Array(sessions.keys) { await abort(id) }
    }

    /// How many uploads are open (for tests and stats).
    public var openSessions: Int { sessions.count }

    /// Answers a blob operation; nil when `operation` is not one.
    public func handle(_ request: Request) async -> Response? {
        do {
            let reply: Reply
            switch request.operation {
            case .blobWriteBegin(let expectedKey):
                reply = try await begin(request.database, expectedKey: expectedKey)
            case .blobWriteChunk(let writeID, let offset, let bytes):
                reply = try await chunk(request.database, writeID, offset, bytes)
            case .blobWriteEnd(let writeID, let length):
                reply = try await end(request.database, writeID, length)
            case .blobWriteAbort(let writeID):
                _ = try session(writeID, request.database)
                await abort(writeID)
                reply = .none
            case .blobRead(let keyText, let offset, let length):
                let key = try Self.parseKey(keyText)
                let slot = try slot(for: request.database)
                let count = Int(min(length, UInt32(Self.maxReadLength)))
                let (bytes, total) = try await slot.run { store in
                    let reader = try store.reader(for: key)
                    guard offset <= reader.size else {
                        throw SofaError.invalid("offset \(offset) is beyond the end of blob \(key) (\(reader.size) bytes)")
                    }
                    return (try reader.read(at: offset, length: count), reader.size)
                }
                reply = .blobData(bytes: bytes, totalLength: total)
            case .blobStat(let keyText):
                let key = try Self.parseKey(keyText)
                let size = try await slot(for: request.database).run { store in try store.size(of: key) }
                reply = .blob(BlobInfo(key: key.description, length: size))
            case .createDatabase(_, let key?):
                // Storage has just created the database; its blobs are to be encrypted.
                try await slot(for: request.database).setUp(key: key)
                reply = .none
            case .deleteBlobs(let texts):
                // Compaction (sofa-storage): every key is checked before any file goes.
                var parsed: [BlobKey] = []
                parsed.reserveCapacity(texts.count)
                for text in texts { parsed.append(try Self.parseKey(text)) }
                let keys = parsed
                _ = try await slot(for: request.database).run { store in try store.delete(keys) }
                reply = .none
            case .dropBlobs:
                // The database is being deleted (sofa-storage): its uploads end, its blobs go.
                for (id, session) in sessions where session.database == request.database { await abort(id) }
                try await slot(for: request.database).drop()
                reply = .none
            case .rekeyDatabase(let current, let new):
                try await slot(for: request.database).rekey(current: current, new: new)
                reply = .none
            default:
                return nil
            }
            return .ok(request.id, reply)
        } catch {
            return .failure(request.id, error)
        }
    }

    // MARK: Uploads

    private func begin(_ database: String, expectedKey: String) async throws(SofaError) -> Reply {
        let expected = expectedKey.isEmpty ? nil : try Self.parseKey(expectedKey)
        let slot = try slot(for: database)
        let writer = try await slot.run { store in Confined(try store.writer(), queue: slot.queue) }
        var id = UInt64.random(in: 1 ... .max)
        while sessions[id] != nil { id = UInt64.random(in: 1 ... .max) }
        sessions[id] = Session(database: database, expected: expected, writer: writer, store: slot)
        return .blobWriteStarted(writeID: id)
    }

    private func chunk(_ database: String, _ id: UInt64, _ offset: UInt64, _ bytes: [UInt8]) async throws(SofaError) -> Reply {
        var session = try session(id, database)
        session.lastActivity = .now
        if let failure = session.failure { throw failure }
        let end = offset + UInt64(bytes.count)
        guard end <= maxBlobBytes else {
            await abort(id)
            throw SofaError(.messageTooLarge, "blob write \(id): the blob would be over \(maxBlobBytes) bytes, the limit "
                            + "(SOFA_MAX_BLOB_BYTES); the upload was dropped and nothing of it kept")
        }
        guard offset >= session.nextOffset else {
            throw SofaError.invalid("blob write \(id): bytes at offset \(offset) were already received (next expected offset \(session.nextOffset))")
        }
        if offset > session.nextOffset {
            for (start, other) in session.buffered where start < end && offset < start + UInt64(other.count) || start == offset {
                throw SofaError.invalid("blob write \(id): the chunk at \(offset) overlaps the one received at \(start)")
            }
            guard session.bufferedBytes + bytes.count <= Self.maxBufferedBytes else {
                throw SofaError(.busy, "blob write \(id): more than \(Self.maxBufferedBytes >> 20) MiB of chunks wait ahead of offset \(session.nextOffset); send fewer at once")
            }
            session.buffered[offset] = bytes
            session.bufferedBytes += bytes.count
            sessions[id] = session
            return .none
        }
        // In order: write it and every buffered chunk that now follows.
        var run = [bytes]
        session.nextOffset = end
        while let next = session.buffered.removeValue(forKey: session.nextOffset) {
            session.bufferedBytes -= next.count
            session.nextOffset += UInt64(next.count)
            run.append(next)
        }
        if let (start, _) = session.buffered.first(where: { $0.key < session.nextOffset }) {
            session.failure = SofaError.invalid("blob write \(id): the chunk at \(start) overlaps earlier bytes")
        }
        sessions[id] = session
        let writer = session.writer
        let pieces = run
        let written: Result<Void, SofaError> = await inOrder(session.store) { _ in
            try writer.withValue { writer in
                for piece in pieces { try writer.write(piece) }
            }
        }
        if case .failure(let error) = written {
            sessions[id]?.failure = error
            throw error
        }
        return .none
    }

    private func end(_ database: String, _ id: UInt64, _ length: UInt64) async throws(SofaError) -> Reply {
        let session = try session(id, database)
        sessions[id] = nil
        let writer = session.writer
        let cancel: @Sendable (BlobStore) throws -> Void = { _ in writer.withValue { $0.cancel() } }
        if let failure = session.failure {
            _ = await inOrder(session.store, cancel)
            throw failure
        }
        guard session.buffered.isEmpty, session.nextOffset == length else {
            _ = await inOrder(session.store, cancel)
            let missing = session.buffered.isEmpty ? "" : " (a gap before the \(session.buffered.count) chunk(s) waiting)"
            throw SofaError.invalid("blob write \(id): \(length) bytes announced but \(session.nextOffset) received in order\(missing); nothing installed")
        }
        let expected = session.expected
        let key = try await inOrder(session.store) { _ in try writer.withValue { try $0.install(expected: expected) } }.get()
        return .blob(BlobInfo(key: key.description, length: length))
    }

    private func abort(_ id: UInt64) async {
        guard let session = sessions.removeValue(forKey: id) else { return }
        let writer = session.writer
        _ = await inOrder(session.store) { _ in writer.withValue { $0.cancel() } }
    }

    /// Runs a session's job on its store's queue. The job is enqueued before this actor is left
    /// (the slot's `run` takes the caller's isolation), so jobs reach the serial queue in the
    /// order the actor decided them: chunks in offset order, then install or cancel.
    private func inOrder<T: Sendable>(_ slot: StoreSlot, _ body: @escaping @Sendable (BlobStore) throws -> T) async
        -> Result<T, SofaError> {
        await slot.runResult(body)
    }

    private func reapIdleSessions() async {
        let now = ContinuousClock.now
        for (id, session) in sessions where now - session.lastActivity > idleTimeout {
            await abort(id)
            expiredContinuation.yield(id)
        }
    }

    private func session(_ id: UInt64, _ database: String) throws(SofaError) -> Session {
        guard let session = sessions[id], session.database == database else {
            throw SofaError.notFound("no blob write \(id) in database '\(database)': it ended, was aborted, or expired while idle")
        }
        return session
    }

    // MARK: Stores

    private func slot(for database: String) throws(SofaError) -> StoreSlot {
        try Self.validate(databaseName: database)
        if let slot = stores[database] { return slot }
        let slot = StoreSlot(databaseDirectory: StorageLayout.directory(of: database, in: dataDirectory),
                             name: database)
        stores[database] = slot
        return slot
    }

    /// `BlobKey.parse` with its typed error: `.invalidParameter` for anything but `sha1-` + 28
    /// base64 characters, so no key can name a path outside the store.
    static func parseKey(_ text: String) throws(SofaError) -> BlobKey {
        do { return try BlobKey.parse(text) } catch let error as SofaError { throw error } catch {
            throw SofaError.invalid("invalid blob key: \(error)")
        }
    }

    /// The storage service's rule for names (`StorageLayout`'s: no `.` or `%` in a name, and its
    /// folder writes `/` as `%2F`, so no name leads out of the data directory).
    static func validate(databaseName name: String) throws(SofaError) {
        try StorageLayout.validate(databaseName: name)
    }
}
