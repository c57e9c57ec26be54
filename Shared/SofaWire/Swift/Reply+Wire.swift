internal import CProtobufC
internal import SofaWireC
internal import SofaCore

extension Reply {
    /// Sets the response's `result` oneof.
    func encode(into message: UnsafeMutablePointer<Sofa__Wire__Response>, _ arena: Arena) {
        switch self {
        case .none:
            break
        case .health(let info):
            let r: UnsafeMutablePointer<Sofa__Wire__HealthInfo> = arena.message { sofa__wire__health_info__init($0) }
            r.pointee.service = arena.string(info.service)
            r.pointee.version = arena.string(info.version)
            r.pointee.pid = info.pid
            r.pointee.uptime_ms = info.uptimeMs
            r.pointee.instance = arena.string(info.instance)
            r.pointee.batches = info.batches ? 1 : 0
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_HEALTH
            message.pointee.health = r
        case .cluster(let services):
            let r: UnsafeMutablePointer<Sofa__Wire__ClusterInfo> = arena.message { sofa__wire__cluster_info__init($0) }
            let items = services.map { service -> UnsafeMutablePointer<Sofa__Wire__ServiceStatus> in
                let s: UnsafeMutablePointer<Sofa__Wire__ServiceStatus> = arena.message { sofa__wire__service_status__init($0) }
                s.pointee.name = arena.string(service.name)
                s.pointee.healthy = service.healthy ? 1 : 0
                s.pointee.detail = arena.string(service.detail)
                s.pointee.instances = service.instances
                return s
            }
            r.pointee.n_services = items.count
            r.pointee.services = arena.array(items)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_CLUSTER
            message.pointee.cluster = r
        case .databases(let names):
            let r: UnsafeMutablePointer<Sofa__Wire__DatabaseList> = arena.message { sofa__wire__database_list__init($0) }
            (r.pointee.n_names, r.pointee.names) = arena.strings(names)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DATABASES
            message.pointee.databases = r
        case .document(let doc):
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DOCUMENT
            message.pointee.document = Self.document(doc, arena)
        case .documents(let docs):
            let r: UnsafeMutablePointer<Sofa__Wire__DocumentList> = arena.message { sofa__wire__document_list__init($0) }
            let items = docs.map { Self.document($0, arena) }
            r.pointee.n_documents = items.count
            r.pointee.documents = arena.array(items)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DOCUMENTS
            message.pointee.documents = r
        case .revision(let docID, let rev, let sequence):
            let r: UnsafeMutablePointer<Sofa__Wire__Revision> = arena.message { sofa__wire__revision__init($0) }
            r.pointee.id = arena.bytes(docID)
            r.pointee.rev = arena.string(rev)
            r.pointee.sequence = sequence
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_REVISION
            message.pointee.revision = r
        case .echo(let payload, let instance):
            let r: UnsafeMutablePointer<Sofa__Wire__EchoReply> = arena.message { sofa__wire__echo_reply__init($0) }
            r.pointee.payload = arena.bytes(payload)
            r.pointee.instance = arena.string(instance)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_ECHO
            message.pointee.echo = r
        case .databaseInfo(let info):
            let r: UnsafeMutablePointer<Sofa__Wire__DatabaseInfo> = arena.message { sofa__wire__database_info__init($0) }
            r.pointee.name = arena.string(info.name)
            r.pointee.document_count = info.documentCount
            r.pointee.last_sequence = info.lastSequence
            r.pointee.update_sequence = info.updateSequence
            r.pointee.file_bytes = info.fileBytes
            r.pointee.wal_bytes = info.walBytes
            r.pointee.public_uuid = arena.string(info.publicUUID)
            r.pointee.private_uuid = arena.string(info.privateUUID)
            r.pointee.versioning = arena.string(info.versioning.rawValue)
            r.pointee.collections = info.collections
            r.pointee.deleted_count = info.deletedCount
            r.pointee.revs_limit = info.revsLimit
            r.pointee.purge_count = info.purgeCount
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DATABASE_INFO
            message.pointee.database_info = r
        case .collections(let names):
            let r: UnsafeMutablePointer<Sofa__Wire__CollectionList> = arena.message { sofa__wire__collection_list__init($0) }
            (r.pointee.n_names, r.pointee.names) = arena.strings(names)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_COLLECTIONS
            message.pointee.collections = r
        case .bulk(let results):
            let r: UnsafeMutablePointer<Sofa__Wire__BulkResult> = arena.message { sofa__wire__bulk_result__init($0) }
            let items = results.map { result -> UnsafeMutablePointer<Sofa__Wire__BulkItemResult> in
                let item: UnsafeMutablePointer<Sofa__Wire__BulkItemResult> = arena.message {
                    sofa__wire__bulk_item_result__init($0)
                }
                item.pointee.id = arena.bytes(result.id)
                item.pointee.rev = arena.string(result.rev)
                item.pointee.sequence = result.sequence
                item.pointee.error = result.error.map { encodeError($0, arena) }
                item.pointee.conflict = result.conflict ? 1 : 0
                return item
            }
            r.pointee.n_results = items.count
            r.pointee.results = arena.array(items)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_BULK
            message.pointee.bulk = r
        case .query(let result):
            let r: UnsafeMutablePointer<Sofa__Wire__QueryResult> = arena.message { sofa__wire__query_result__init($0) }
            (r.pointee.n_columns, r.pointee.columns) = arena.strings(result.columns)
            (r.pointee.n_collections, r.pointee.collections) = arena.strings(result.collections)
            var rows: [[UInt8]] = []
            var masks: [UInt64] = []
            rows.reserveCapacity(result.rows.count)
            masks.reserveCapacity(result.rows.count)
            for row in result.rows {
                var mask: UInt64 = 0
                // (`case .none`, not `== nil`: JSON is ExpressibleByNilLiteral, so `nil` could mean JSON null.)
                for (i, column) in row.enumerated() where i < 64 { if case .none = column { mask |= 1 << UInt64(i) } }
                rows.append(JSON.array(row.map { $0 ?? .null }).compactBytes())
                masks.append(mask)
            }
            (r.pointee.n_rows, r.pointee.rows) = arena.byteArrays(rows)
            r.pointee.n_missing = masks.count
            r.pointee.missing = arena.uint64s(masks)
            r.pointee.explain = arena.string(result.explain)
            r.pointee.more = result.more ? 1 : 0
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_QUERY
            message.pointee.query = r
        case .revsDiff(let entries):
            let r: UnsafeMutablePointer<Sofa__Wire__RevsDiffResult> = arena.message { sofa__wire__revs_diff_result__init($0) }
            (r.pointee.n_missing, r.pointee.missing) = ReplicationWire.entries(entries, arena)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_REVS_DIFF
            message.pointee.revs_diff = r
        case .replications(let list):
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_REPLICATIONS
            message.pointee.replications = ReplicationWire.list(list, arena)
        case .indexes(let list):
            let r: UnsafeMutablePointer<Sofa__Wire__IndexList> = arena.message { sofa__wire__index_list__init($0) }
            (r.pointee.n_indexes, r.pointee.indexes) = arena.byteArrays(list.map { $0.json.compactBytes() })
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_INDEXES
            message.pointee.indexes = r
        case .conflicts(let revs):
            let r: UnsafeMutablePointer<Sofa__Wire__RevisionList> = arena.message { sofa__wire__revision_list__init($0) }
            (r.pointee.n_revs, r.pointee.revs) = arena.strings(revs)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_CONFLICTS
            message.pointee.conflicts = r
        case .expiration(let expiration):
            let r: UnsafeMutablePointer<Sofa__Wire__ExpirationInfo> = arena.message { sofa__wire__expiration_info__init($0) }
            r.pointee.expiration = expiration
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_EXPIRATION
            message.pointee.expiration = r
        case .changes(let batch):
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_CHANGES
            message.pointee.changes = Self.changesBatch(batch, arena)
        case .session(let name, let roles):
            let r: UnsafeMutablePointer<Sofa__Wire__SessionInfo> = arena.message { sofa__wire__session_info__init($0) }
            r.pointee.name = arena.string(name)
            (r.pointee.n_roles, r.pointee.roles) = arena.strings(roles)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_SESSION
            message.pointee.session = r
        case .json(let json):
            let r: UnsafeMutablePointer<Sofa__Wire__JsonValue> = arena.message { sofa__wire__json_value__init($0) }
            r.pointee.json = arena.bytes(json.compactBytes())
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_JSON
            message.pointee.json = r
        case .raw(let version, let body):
            let r: UnsafeMutablePointer<Sofa__Wire__RawValue> = arena.message { sofa__wire__raw_value__init($0) }
            r.pointee.version = arena.bytes(version)
            r.pointee.body = arena.bytes(body)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_RAW
            message.pointee.raw = r
        case .inserted(let result):
            let r: UnsafeMutablePointer<Sofa__Wire__InsertResult> = arena.message { sofa__wire__insert_result__init($0) }
            r.pointee.id = arena.bytes(result.id)
            r.pointee.rev = arena.string(result.rev)
            r.pointee.sequence = result.sequence
            r.pointee.added = result.added
            r.pointee.conflict = result.conflict ? 1 : 0
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_INSERTED
            message.pointee.inserted = r
        case .blobWriteStarted(let writeID):
            let r: UnsafeMutablePointer<Sofa__Wire__BlobWriteStarted> = arena.message { sofa__wire__blob_write_started__init($0) }
            r.pointee.write_id = writeID
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_BLOB_WRITE_STARTED
            message.pointee.blob_write_started = r
        case .blob(let info):
            let r: UnsafeMutablePointer<Sofa__Wire__BlobInfo> = arena.message { sofa__wire__blob_info__init($0) }
            r.pointee.key = arena.string(info.key)
            r.pointee.length = info.length
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_BLOB
            message.pointee.blob = r
        case .blobData(let bytes, let totalLength):
            Self.encodeBlobData(arena.bytes(bytes), totalLength, into: message, arena)
        }
    }

    private static func document(_ doc: StoredDocument, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__Document> {
        let r: UnsafeMutablePointer<Sofa__Wire__Document> = arena.message { sofa__wire__document__init($0) }
        r.pointee.id = arena.bytes(doc.id)
        r.pointee.rev = arena.string(doc.rev)
        r.pointee.body = arena.bytes(doc.body)
        r.pointee.deleted = doc.deleted ? 1 : 0
        r.pointee.sequence = doc.sequence
        (r.pointee.n_history, r.pointee.history) = arena.strings(doc.history)
        r.pointee.conflicted = doc.conflicted ? 1 : 0
        r.pointee.has_attachments = doc.hasAttachments ? 1 : 0
        return r
    }

    static func changesBatch(_ batch: ChangesBatch, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__ChangesBatch> {
        let r: UnsafeMutablePointer<Sofa__Wire__ChangesBatch> = arena.message { sofa__wire__changes_batch__init($0) }
        let items = batch.changes.map { change -> UnsafeMutablePointer<Sofa__Wire__Change> in
            let c: UnsafeMutablePointer<Sofa__Wire__Change> = arena.message { sofa__wire__change__init($0) }
            c.pointee.sequence = change.sequence
            c.pointee.id = arena.bytes(change.id)
            c.pointee.rev = arena.string(change.rev)
            c.pointee.deleted = change.deleted ? 1 : 0
            c.pointee.body = arena.bytes(change.body)
            (c.pointee.n_leaves, c.pointee.leaves) = arena.strings(change.leaves)
            return c
        }
        r.pointee.n_changes = items.count
        r.pointee.changes = arena.array(items)
        r.pointee.last_sequence = batch.lastSequence
        return r
    }

    static func decodeChangesBatch(_ r: Sofa__Wire__ChangesBatch) throws(SofaError) -> ChangesBatch {
        var changes: [Change] = []
        changes.reserveCapacity(r.n_changes)
        for index in 0..<r.n_changes {
            let c = try required(r.changes[index], "changes.change")
            changes.append(Change(sequence: c.sequence, id: try decodeText(c.id, "change.id"),
                                  rev: try decodeString(c.rev, "change.rev"), deleted: c.deleted != 0,
                                  body: decodeBytes(c.body), leaves: try decodeStrings(c.n_leaves, c.leaves, "change.leaves")))
        }
        return ChangesBatch(changes: changes, lastSequence: r.last_sequence)
    }

    private static func decodeDocument(_ r: Sofa__Wire__Document) throws(SofaError) -> StoredDocument {
        StoredDocument(id: try decodeText(r.id, "document.id"), rev: try decodeString(r.rev, "document.rev"),
                       body: decodeBytes(r.body), deleted: r.deleted != 0, sequence: r.sequence,
                       history: try decodeStrings(r.n_history, r.history, "document.history"),
                       conflicted: r.conflicted != 0, hasAttachments: r.has_attachments != 0)
    }

    /// The result of a decoded response.
    static func decode(_ m: Sofa__Wire__Response) throws(SofaError) -> Reply {
        switch m.result_case {
        case SOFA__WIRE__RESPONSE__RESULT_HEALTH:
            let r = try required(m.health, "health")
            return .health(HealthInfo(service: try decodeString(r.service, "health.service"),
                                      version: try decodeString(r.version, "health.version"), pid: r.pid,
                                      uptimeMs: r.uptime_ms, instance: try decodeString(r.instance, "health.instance"),
                                      batches: r.batches != 0))
        case SOFA__WIRE__RESPONSE__RESULT_CLUSTER:
            let r = try required(m.cluster, "cluster")
            var services: [ServiceStatus] = []
            for index in 0..<r.n_services {
                let s = try required(r.services[index], "cluster.service")
                services.append(ServiceStatus(name: try decodeString(s.name, "service.name"), healthy: s.healthy != 0,
                                              detail: try decodeString(s.detail, "service.detail"), instances: s.instances))
            }
            return .cluster(services)
        case SOFA__WIRE__RESPONSE__RESULT_DATABASES:
            let r = try required(m.databases, "databases")
            return .databases(try decodeStrings(r.n_names, r.names, "databases.names"))
        case SOFA__WIRE__RESPONSE__RESULT_DOCUMENT:
            return .document(try decodeDocument(required(m.document, "document")))
        case SOFA__WIRE__RESPONSE__RESULT_DOCUMENTS:
            let r = try required(m.documents, "documents")
            var docs: [StoredDocument] = []
            for index in 0..<r.n_documents { docs.append(try decodeDocument(required(r.documents[index], "documents.item"))) }
            return .documents(docs)
        case SOFA__WIRE__RESPONSE__RESULT_REVISION:
            let r = try required(m.revision, "revision")
            return .revision(id: try decodeText(r.id, "revision.id"), rev: try decodeString(r.rev, "revision.rev"),
                             sequence: r.sequence)
        case SOFA__WIRE__RESPONSE__RESULT_ECHO:
            let r = try required(m.echo, "echo")
            return .echo(payload: decodeBytes(r.payload), instance: try decodeString(r.instance, "echo.instance"))
        case SOFA__WIRE__RESPONSE__RESULT_DATABASE_INFO:
            let r = try required(m.database_info, "databaseInfo")
            return .databaseInfo(DatabaseInfo(
                name: try decodeString(r.name, "info.name"), documentCount: r.document_count, lastSequence: r.last_sequence,
                updateSequence: r.update_sequence, fileBytes: r.file_bytes, walBytes: r.wal_bytes,
                publicUUID: try decodeString(r.public_uuid, "info.publicUUID"),
                privateUUID: try decodeString(r.private_uuid, "info.privateUUID"),
                versioning: try Versioning.parse(decodeString(r.versioning, "info.versioning")), collections: r.collections,
                deletedCount: r.deleted_count, revsLimit: r.revs_limit, purgeCount: r.purge_count))
        case SOFA__WIRE__RESPONSE__RESULT_COLLECTIONS:
            let r = try required(m.collections, "collections")
            return .collections(try decodeStrings(r.n_names, r.names, "collections.names"))
        case SOFA__WIRE__RESPONSE__RESULT_BULK:
            let r = try required(m.bulk, "bulk")
            var results: [BulkItemResult] = []
            results.reserveCapacity(r.n_results)
            for index in 0..<r.n_results {
                let item = try required(r.results[index], "bulk.result")
                results.append(BulkItemResult(id: try decodeText(item.id, "bulk.id"), rev: try decodeString(item.rev, "bulk.rev"),
                                              sequence: item.sequence, error: try item.error.map { (e) throws(SofaError) in try decodeError(e.pointee) },
                                              conflict: item.conflict != 0))
            }
            return .bulk(results)
        case SOFA__WIRE__RESPONSE__RESULT_QUERY:
            let r = try required(m.query, "query")
            var rows: [[JSON?]] = []
            rows.reserveCapacity(r.n_rows)
            for i in 0..<r.n_rows {
                guard let array = JSON.tryParse(decodeBytes(r.rows[i]))?.arrayValue else {
                    throw SofaError(.malformedMessage, "malformed query row \(i)")
                }
                let mask = i < r.n_missing ? r.missing[i] : 0
                rows.append(array.enumerated().map { (index, value) -> JSON? in
                    index < 64 && mask & (1 << UInt64(index)) != 0 ? Optional<JSON>.none : Optional(value)
                })
            }
            return .query(QueryRows(columns: try decodeStrings(r.n_columns, r.columns, "query.columns"), rows: rows,
                                    explain: try decodeString(r.explain, "query.explain"), more: r.more != 0,
                                    collections: try decodeStrings(r.n_collections, r.collections, "query.collections")))
        case SOFA__WIRE__RESPONSE__RESULT_INDEXES:
            let r = try required(m.indexes, "indexes")
            var list: [IndexDefinition] = []
            for i in 0..<r.n_indexes {
                guard let json = JSON.tryParse(decodeBytes(r.indexes[i])) else { throw SofaError(.malformedMessage, "malformed index listing") }
                list.append(try IndexDefinition(json: json))
            }
            return .indexes(list)
        case SOFA__WIRE__RESPONSE__RESULT_CONFLICTS:
            let r = try required(m.conflicts, "conflicts")
            return .conflicts(try decodeStrings(r.n_revs, r.revs, "conflicts.revs"))
        case SOFA__WIRE__RESPONSE__RESULT_EXPIRATION:
            return .expiration(try required(m.expiration, "expiration").expiration)
        case SOFA__WIRE__RESPONSE__RESULT_CHANGES:
            return .changes(try decodeChangesBatch(required(m.changes, "changes")))
        case SOFA__WIRE__RESPONSE__RESULT_SESSION:
            let r = try required(m.session, "session")
            return .session(name: try decodeString(r.name, "session.name"), roles: try decodeStrings(r.n_roles, r.roles, "session.roles"))
        case SOFA__WIRE__RESPONSE__RESULT_JSON:
            let r = try required(m.json, "json")
            guard let json = JSON.tryParse(decodeBytes(r.json)) else { throw SofaError(.malformedMessage, "malformed JSON result") }
            return .json(json)
        case SOFA__WIRE__RESPONSE__RESULT_RAW:
            let r = try required(m.raw, "raw")
            return .raw(version: decodeBytes(r.version), body: decodeBytes(r.body))
        case SOFA__WIRE__RESPONSE__RESULT_REVS_DIFF:
            let r = try required(m.revs_diff, "revsDiff")
            return .revsDiff(try ReplicationWire.decodeEntries(r.n_missing, r.missing, "revsDiff.missing"))
        case SOFA__WIRE__RESPONSE__RESULT_REPLICATIONS:
            return .replications(try ReplicationWire.decodeList(required(m.replications, "replications")))
        case SOFA__WIRE__RESPONSE__RESULT_INSERTED:
            let r = try required(m.inserted, "inserted")
            return .inserted(InsertResult(id: try decodeText(r.id, "inserted.id"), rev: try decodeString(r.rev, "inserted.rev"),
                                          sequence: r.sequence, added: r.added, conflict: r.conflict != 0))
        case SOFA__WIRE__RESPONSE__RESULT_BLOB_WRITE_STARTED:
            return .blobWriteStarted(writeID: try required(m.blob_write_started, "blobWriteStarted").write_id)
        case SOFA__WIRE__RESPONSE__RESULT_BLOB:
            let r = try required(m.blob, "blob")
            return .blob(BlobInfo(key: try decodeString(r.key, "blob.key"), length: r.length))
        case SOFA__WIRE__RESPONSE__RESULT_BLOB_DATA:
            let r = try required(m.blob_data, "blobData")
            return .blobData(bytes: decodeBytes(r.bytes), totalLength: r.total_length)
        default:
            return .none
        }
    }
}

extension Reply {
    /// A `blobData` whose bytes are `data` (borrowed by the message, not copied).
    static func encodeBlobData(_ data: ProtobufCBinaryData, _ totalLength: UInt64,
                               into message: UnsafeMutablePointer<Sofa__Wire__Response>, _ arena: Arena) {
        let r: UnsafeMutablePointer<Sofa__Wire__BlobData> = arena.message { sofa__wire__blob_data__init($0) }
        r.pointee.bytes = data
        r.pointee.total_length = totalLength
        message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_BLOB_DATA
        message.pointee.blob_data = r
    }
}
