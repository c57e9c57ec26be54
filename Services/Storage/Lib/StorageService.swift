internal import SofaRows
internal import SofaQL
import SofaCore
public import SofaWire
import SofaBus
public import SofaServer
public import Logging
import Foundation
internal import Synchronization

/// `sofa-storage`: the engine served on the bus. This file is the only one of the module that
/// knows the wire: it turns requests into engine calls and results into replies.
public final class StorageService: Sendable {
    public let engine: StorageEngine
    let limits: WriteLimits
    private let started = ContinuousClock.now
    private let instance: String
    private let logger: Logger

    public init(engine: StorageEngine, instance: String, logger: Logger, limits: WriteLimits = .default) {
        self.engine = engine
        self.limits = limits
        self.instance = instance
        self.logger = logger
    }

    /// Starts storage as a process does: bind, serve, and return how to stop.
    /// Brings storage up; its parts, for the process's service group.
    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        // Every commit is announced on the PUB socket (the gateway wakes its long polls with it).
        let publisher = try await Publisher.bind(settings.changesEndpoint, name: "changes")
        // Encoded on a queue of their own, in commit order, so the single writer goes straight on
        // to the next transaction.
        let notices = DispatchQueue(label: "sofa.storage.commit-notices")
        // Only sofa-blob deletes blob files: compaction asks it to.
        let blob = try await BusClient.connect(settings.blobURL, peerName: "blob")
        let engine = try StorageEngine(dataDirectory: URL(fileURLWithPath: settings.dataDirectory), onCommit: { notice in
            notices.async {
                publisher.publish(topic: notice.topic, payload: notice.encoded())
            }
        }, maxRevTreeDepth: settings.maxRevTreeDepth, blobDeleter: blobDeleter(blob, logger: logger),
           blobDropper: blobDropper(blob))
        let limits = WriteLimits(maxBulkItems: settings.maxBulkItems, maxTransactionItems: settings.maxTransactionItems,
                                 commitMargin: .milliseconds(settings.commitMarginMs), maxDocumentBytes: settings.maxDocumentBytes)
        let service = StorageService(engine: engine, instance: settings.instance ?? ServiceRuntime.defaultInstance("storage"),
                                     logger: logger, limits: limits)
        let server = try await BusServer.bind(settings.storageEndpoint, name: "storage",
                                              maxRequestBytes: settings.maxRequestBytes, maxBulkItems: settings.maxBulkItems,
                                              logger: logger, direct: { request, reply in
            // A document get goes from the socket thread to a reader's queue and back, with no task.
            service.handleDirectly(request, reply: reply)
        }) { request in
            await service.handle(request)
        }
        logger.info("storage serving", metadata: ["endpoint": "\(server.endpoint)", "data": "\(settings.dataDirectory)"])
        // Stopped in reverse: the server first, then the engine (its last commits announced), then
        // the connection to sofa-blob and the publisher.
        return [SocketLoopService(publisher.socketLoop), SocketLoopService(blob.socketLoop), ShutdownStep { engine.close() },
                SocketLoopService(server.socketLoop)]
    }

    /// Compaction's way to sofa-blob: a `deleteBlobs` request, waited for on the writer (which
    /// must not take another write before the blobs are gone). A failure is logged.
    static func blobDeleter(_ blob: BusClient, logger: Logger) -> BlobDeleter {
        { database, keys in
            let result = ask(blob, Request(database: database, operation: .deleteBlobs(keys: keys.map(\.description))))
            if case .failure(let error) = result {
                logger.error("compaction could not have sofa-blob delete unreferenced blobs; the next compaction will",
                             metadata: ["database": "\(database)", "blobs": "\(keys.count)", "error": "\(error.message)"])
            }
            return result
        }
    }

    /// A database's deletion's way to sofa-blob: a `dropBlobs` request, waited for on the admin queue.
    static func blobDropper(_ blob: BusClient) -> BlobDropper {
        { database in ask(blob, Request(database: database, operation: .dropBlobs)) }
    }

    /// Sends `request` to sofa-blob and waits for its answer on this (non-pool) thread. While
    /// sofa-blob is not reachable (restarting: the request was not sent at all), it waits for the
    /// connection and asks again, within the same deadline.
    private static func ask(_ blob: BusClient, _ request: Request) -> Result<Void, SofaError> {
        let outcome = Mutex<Result<Void, SofaError>>(.failure(SofaError(.unexpectedError, "no answer")))
        let answered = DispatchSemaphore(value: 0)
        Task {
            let deadline = ContinuousClock.now + Self.blobDeletionTimeout
            var response = await blob.send(request, timeout: Self.blobDeletionTimeout)
            while case .failure(let error) = response.outcome, error.is(.unavailable), ContinuousClock.now < deadline,
                  await blob.waitUntilConnected(timeout: deadline - ContinuousClock.now) {
                try? await Task.sleep(for: .milliseconds(10))  // the socket may still be attaching its new pipe
                response = await blob.send(request, timeout: deadline - ContinuousClock.now)
            }
            outcome.withLock { $0 = response.outcome.map { _ in () } }
            answered.signal()
        }
        answered.wait()
        return outcome.withLock { $0 }
    }

    static let blobDeletionTimeout: Duration = .seconds(15)

    public func handle(_ request: Request) async -> Response {
        let outcome: Result<Reply, SofaError> = await WriteDeadline.$current.withValue(commitDeadline(request)) {
            do throws(SofaError) { return .success(try await perform(request)) } catch { return .failure(error) }
        }
        switch outcome {
        case .success(let reply):
            return .ok(request.id, reply)
        case .failure(let error):
            if error.sofaCode == nil || error.is(.unexpectedError) {
                logger.error("request failed", metadata: ["request": "\(request.id)", "op": "\(request.operation.name)",
                                                          "error": "\(error)"])
            }
            return .failure(request.id, error)
        }
    }

    /// Answers a plain document get of an open database without a task, from the server's socket
    /// thread to a reader's queue and back through `reply`; false (nothing done) for any other
    /// request, which `handle` then takes.
    public func handleDirectly(_ request: Request, reply: @escaping @Sendable (Response) -> Void) -> Bool {
        guard case .getDocument(let id, let rev, let history, false) = request.operation, !LocalDocuments.isLocal(id),
              let db = engine.openDatabase(request.database),
              let collection = try? CollectionName(parsing: request.collection) else { return false }
        let version: DocumentVersion?
        do throws(SofaError) {
            try DocumentID.validate(id)
            version = rev.isEmpty ? nil : try DocumentVersion.parse(ascii: rev)
        } catch {
            reply(.failure(request.id, error))
            return true
        }
        db.read(id: id, rev: version, history: history, in: collection) { result in
            switch result {
            case .success(let record): reply(.ok(request.id, .document(record.stored)))
            case .failure(let error): reply(.failure(request.id, error))
            }
        }
        return true
    }

    /// The instant by which the request's writes must have committed: its deadline (wall-clock
    /// milliseconds) less the commit margin; nil when it has none.
    func commitDeadline(_ request: Request) -> ContinuousClock.Instant? {
        guard request.deadline != 0 else { return nil }
        let remaining = Int64(clamping: request.deadline) - Int64(clamping: wallClockMs())
        return ContinuousClock.now + .milliseconds(remaining) - limits.commitMargin
    }

    private func perform(_ request: Request) async throws(SofaError) -> Reply {
        switch request.operation {
        case .health:
            return .health(ServiceRuntime.health(service: "storage", instance: instance, started: started))
        case .echo(let payload, _, _):
            return .echo(payload: payload, instance: instance)
        case .createDatabase(let versioning, let encryptionKey):
            // Keys belong to sofa-blob: the gateway strips them before forwarding here.
            guard encryptionKey == nil else {
                throw SofaError(.invalidParameter, "storage takes no encryption key: create encrypted databases through the gateway")
            }
            try await engine.createDatabase(request.database, versioning: versioning)
            return .none
        case .deleteDatabase:
            try await engine.deleteDatabase(request.database)
            return .none
        case .listDatabases:
            return .databases(try await engine.listDatabases())
        case .clusterStatus:
            throw SofaError(.unsupported, "storage does not answer clusterStatus; ask the gateway")
        default:
            let db = try await engine.database(request.database)
            let collection = try CollectionName(parsing: request.collection)
            return try await perform(request.operation, db, collection)
        }
    }

    private func perform(_ operation: Op, _ db: DatabaseStore, _ collection: CollectionName) async throws(SofaError) -> Reply {
        switch operation {
        case .databaseInfo:
            let stats = try await db.info(collection)
            return .databaseInfo(DatabaseInfo(
                name: db.name, documentCount: UInt64(stats.documents), lastSequence: stats.lastSequence,
                updateSequence: stats.updateSequence, fileBytes: stats.fileBytes, walBytes: stats.walBytes,
                publicUUID: stats.publicUUID, privateUUID: stats.privateUUID, versioning: stats.versioning,
                collections: UInt32(stats.collections), deletedCount: UInt64(stats.deleted),
                revsLimit: UInt32(clamping: stats.revsLimit), purgeCount: stats.purgeCount))
        case .createCollection:
            try await db.createCollection(collection)
            return .none
        case .deleteCollection:
            try await db.deleteCollection(collection)
            return .none
        case .listCollections:
            return .collections(db.listCollections())
        case .createIndex(let definition):
            try await db.createIndex(definition, in: collection)
            return .none
        case .deleteIndex(let name):
            try await db.deleteIndex(name, in: collection)
            return .none
        case .listIndexes:
            return .indexes(try await db.listIndexes(in: collection))
        case .putDocument(let id, let rev, let body, let deleted):
            try limits.checkDocument(id, bytes: body.count)
            let fields = try Self.documentFields(id: id, rev: rev, body: body, deleted: deleted)
            if LocalDocuments.isLocal(fields.id) {
                let newRev = try await db.writeLocal(id: fields.id, rev: fields.rev.isEmpty ? nil : fields.rev,
                                                     body: .object(fields.body), deleted: fields.deleted)
                return .revision(id: fields.id, rev: newRev, sequence: 0)
            }
            let result = try await db.write(try Self.documentWrite(fields), in: collection)
            return .revision(id: result.id, rev: result.rev.ascii, sequence: result.sequence)
        case .deleteDocument(let id, let rev):
            try DocumentID.validate(id)
            guard !rev.isEmpty else {
                throw SofaError(.conflict, "deleting document '\(id)' needs its current revision (_rev)")
            }
            if LocalDocuments.isLocal(id) {
                let newRev = try await db.writeLocal(id: id, rev: rev, body: .object(JSONObject()), deleted: true)
                return .revision(id: id, rev: newRev, sequence: 0)
            }
            let write = DocumentWrite(id: id, parent: try DocumentVersion.parse(ascii: rev), body: .object(JSONObject()),
                                      deleted: true)
            let result = try await db.write(write, in: collection)
            return .revision(id: result.id, rev: result.rev.ascii, sequence: result.sequence)
        case .getDocument(let id, let rev, let history, let openLeaves):
            try DocumentID.validate(id)
            if LocalDocuments.isLocal(id) {
                let local = try await db.readLocal(id: id)
                guard rev.isEmpty || rev == local.rev else { throw .notFound("local document '\(id)' has no revision \(rev)") }
                return .document(StoredDocument(id: id, rev: local.rev, body: local.body, deleted: false, sequence: 0))
            }
            if openLeaves {
                return .documents(try await db.openLeaves(id: id, history: history, in: collection).map(\.stored))
            }
            let version = rev.isEmpty ? nil : try DocumentVersion.parse(ascii: rev)
            return .document(try await db.read(id: id, rev: version, history: history, in: collection).stored)
        case .insertRevision(let insert):
            try limits.checkDocument(insert.id, bytes: insert.body.count)
            let outcome = try await db.insert(try Self.insertion(insert), in: collection)
            return .inserted(Self.wire(outcome))
        case .bulkWrite(let items):
            return .bulk(try await bulk(items, db, collection))
        case .conflicts(let id):
            return .conflicts(try await db.conflicts(id: id, in: collection))
        case .resolveConflict(let resolution):
            var merged: JSON?
            if resolution.merge && !resolution.mergedDeleted {
                merged = .object(try Self.strictBody(resolution.mergedBody, id: resolution.id))
            }
            let request = ConflictResolutionRequest(id: resolution.id, winner: resolution.winner, loser: resolution.loser,
                                                    mergedBody: merged, mergedDeleted: resolution.merge && resolution.mergedDeleted)
            let result = try await db.resolveConflict(request, in: collection)
            return .revision(id: result.id, rev: result.rev.ascii, sequence: result.sequence)
        case .purge(let id, let rev):
            let result = try await db.purge(id: id, rev: rev.isEmpty ? nil : rev, in: collection)
            return .revision(id: id, rev: result.rev, sequence: result.sequence)
        case .setExpiration(let id, let expiration):
            try await db.setExpiration(id: id, expiration, in: collection)
            return .none
        case .getExpiration(let id):
            return .expiration(try await db.expiration(id: id, in: collection))
        case .nextExpiration:
            return .expiration(try await db.nextExpiration(in: collection))
        case .changes(let query):
            return .changes(try await db.changes(query, in: collection))
        case .allDocs(let query) where LocalDocuments.isListing(query):
            return .documents(try await db.localDocs(query).map {
                StoredDocument(id: $0.id, rev: $0.rev, body: query.includeBodies ? $0.body : [], deleted: false, sequence: 0)
            })
        case .allDocs(let query):
            return .documents(try await db.allDocs(query, in: collection).map(\.stored))
        case .rawPut(let store, let key, let version, let body):
            try await db.rawPut(store: store, key: key, version: version, body: body)
            return .none
        case .rawGet(let store, let key):
            let value = try await db.rawGet(store: store, key: key)
            return .raw(version: value.version, body: value.body)
        case .rawDelete(let store, let key):
            try await db.rawDelete(store: store, key: key)
            return .none
        case .revsDiff(let entries):
            let outcomes = try await db.revsDiff(entries.map { ($0.id, $0.revs) }, in: collection)
            return .revsDiff(outcomes.map { RevsDiffEntry(id: $0.id, revs: $0.missing, possibleAncestors: $0.possibleAncestors) })
        case .setRevsLimit(let limit):
            let pruned = try await db.setRevsLimit(Int(limit))
            logger.info("revs limit set", metadata: ["database": "\(db.name)", "limit": "\(limit)", "pruned": "\(pruned)"])
            return .none
        case .compact:
            let outcome = try await db.compactWithBlobs()
            logger.info("compacted", metadata: ["database": "\(db.name)", "pruned": "\(outcome.pruned)",
                                                "blobsRemoved": "\(outcome.blobsRemoved)"])
            return .none
        default:
            throw SofaError(.unimplemented, "sofa-storage does not serve \(operation.name)")
        }
    }
}

extension JSON {
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
