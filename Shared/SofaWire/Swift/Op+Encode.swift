internal import CProtobufC
internal import SofaWireC
internal import SofaCore

// Operations into the protobuf-c request (see Request+Wire for the envelope).
extension Op {
    /// Sets the request's `op` oneof.
    func encode(into message: UnsafeMutablePointer<Sofa__Wire__Request>, _ arena: Arena) {
        switch self {
        case .health(let service):
            let op: UnsafeMutablePointer<Sofa__Wire__Health> = arena.message { sofa__wire__health__init($0) }
            op.pointee.service = arena.string(service)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_HEALTH
            message.pointee.health = op
        case .clusterStatus:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CLUSTER_STATUS
            message.pointee.cluster_status = arena.message { sofa__wire__cluster_status__init($0) }
        case .createDatabase(let versioning, let key):
            let op: UnsafeMutablePointer<Sofa__Wire__CreateDatabase> = arena.message { sofa__wire__create_database__init($0) }
            op.pointee.versioning = arena.string(versioning.rawValue)
            op.pointee.encryption_key = arena.bytes(key?.rawBytes ?? [])
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CREATE_DATABASE
            message.pointee.create_database = op
        case .deleteDatabase:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_DATABASE
            message.pointee.delete_database = arena.message { sofa__wire__delete_database__init($0) }
        case .listDatabases:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_LIST_DATABASES
            message.pointee.list_databases = arena.message { sofa__wire__list_databases__init($0) }
        case .databaseInfo:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DATABASE_INFO
            message.pointee.database_info = arena.message { sofa__wire__database_info_request__init($0) }
        case .createCollection:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CREATE_COLLECTION
            message.pointee.create_collection = arena.message { sofa__wire__create_collection__init($0) }
        case .deleteCollection:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_COLLECTION
            message.pointee.delete_collection = arena.message { sofa__wire__delete_collection__init($0) }
        case .listCollections:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_LIST_COLLECTIONS
            message.pointee.list_collections = arena.message { sofa__wire__list_collections__init($0) }
        case .putDocument(let docID, let rev, let body, let deleted):
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_PUT_DOCUMENT
            message.pointee.put_document = Self.put(docID, rev, body, deleted, arena)
        case .getDocument(let docID, let rev, let history, let openLeaves):
            let op: UnsafeMutablePointer<Sofa__Wire__GetDocument> = arena.message { sofa__wire__get_document__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            op.pointee.history = history ? 1 : 0
            op.pointee.open_leaves = openLeaves ? 1 : 0
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_GET_DOCUMENT
            message.pointee.get_document = op
        case .deleteDocument(let docID, let rev):
            let op: UnsafeMutablePointer<Sofa__Wire__DeleteDocument> = arena.message { sofa__wire__delete_document__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_DOCUMENT
            message.pointee.delete_document = op
        case .insertRevision(let insert):
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_INSERT_REVISION
            message.pointee.insert_revision = Self.insert(insert, arena)
        case .bulkWrite(let items):
            let op: UnsafeMutablePointer<Sofa__Wire__BulkWrite> = arena.message { sofa__wire__bulk_write__init($0) }
            let encoded = items.map { item -> UnsafeMutablePointer<Sofa__Wire__BulkItem> in
                let wire: UnsafeMutablePointer<Sofa__Wire__BulkItem> = arena.message { sofa__wire__bulk_item__init($0) }
                switch item {
                case .put(let docID, let rev, let body, let deleted):
                    wire.pointee.item_case = SOFA__WIRE__BULK_ITEM__ITEM_PUT
                    wire.pointee.put = Self.put(docID, rev, body, deleted, arena)
                case .insert(let insert):
                    wire.pointee.item_case = SOFA__WIRE__BULK_ITEM__ITEM_INSERT
                    wire.pointee.insert = Self.insert(insert, arena)
                }
                return wire
            }
            op.pointee.n_items = encoded.count
            op.pointee.items = arena.array(encoded)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BULK_WRITE
            message.pointee.bulk_write = op
        case .conflicts(let docID):
            let op: UnsafeMutablePointer<Sofa__Wire__ConflictsRequest> = arena.message { sofa__wire__conflicts_request__init($0) }
            op.pointee.id = arena.bytes(docID)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CONFLICTS
            message.pointee.conflicts = op
        case .resolveConflict(let resolution):
            let op: UnsafeMutablePointer<Sofa__Wire__ResolveConflict> = arena.message { sofa__wire__resolve_conflict__init($0) }
            op.pointee.id = arena.bytes(resolution.id)
            op.pointee.winner = arena.string(resolution.winner)
            op.pointee.loser = arena.string(resolution.loser)
            op.pointee.merge = resolution.merge ? 1 : 0
            op.pointee.merged_body = arena.bytes(resolution.mergedBody)
            op.pointee.merged_deleted = resolution.mergedDeleted ? 1 : 0
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_RESOLVE_CONFLICT
            message.pointee.resolve_conflict = op
        case .purge(let docID, let rev):
            let op: UnsafeMutablePointer<Sofa__Wire__Purge> = arena.message { sofa__wire__purge__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_PURGE
            message.pointee.purge = op
        case .setExpiration(let docID, let expiration):
            let op: UnsafeMutablePointer<Sofa__Wire__SetExpiration> = arena.message { sofa__wire__set_expiration__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.expiration = expiration
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_SET_EXPIRATION
            message.pointee.set_expiration = op
        case .getExpiration(let docID):
            let op: UnsafeMutablePointer<Sofa__Wire__GetExpiration> = arena.message { sofa__wire__get_expiration__init($0) }
            op.pointee.id = arena.bytes(docID)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_GET_EXPIRATION
            message.pointee.get_expiration = op
        case .nextExpiration:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_NEXT_EXPIRATION
            message.pointee.next_expiration = arena.message { sofa__wire__next_expiration__init($0) }
        case .changes(let query):
            let op: UnsafeMutablePointer<Sofa__Wire__ChangesRequest> = arena.message { sofa__wire__changes_request__init($0) }
            op.pointee.since = query.since
            op.pointee.descending = query.descending ? 1 : 0
            op.pointee.limit = query.limit
            op.pointee.include_bodies = query.includeBodies ? 1 : 0
            op.pointee.all_leaves = query.allLeaves ? 1 : 0
            op.pointee.include_deleted = query.includeDeleted ? 1 : 0
            (op.pointee.n_doc_ids, op.pointee.doc_ids) = arena.byteArrays(query.docIDs.map { Array($0.utf8) })
            op.pointee.wait_ms = query.waitMs
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CHANGES
            message.pointee.changes = op
        case .allDocs(let query):
            let op: UnsafeMutablePointer<Sofa__Wire__AllDocsRequest> = arena.message { sofa__wire__all_docs_request__init($0) }
            op.pointee.include_bodies = query.includeBodies ? 1 : 0
            op.pointee.include_deleted = query.includeDeleted ? 1 : 0
            op.pointee.limit = query.limit
            op.pointee.skip = query.skip
            op.pointee.descending = query.descending ? 1 : 0
            op.pointee.start_key = arena.bytes(query.startKey)
            op.pointee.end_key = arena.bytes(query.endKey)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_ALL_DOCS
            message.pointee.all_docs = op
        case .rawPut(let store, let key, let version, let body):
            let op: UnsafeMutablePointer<Sofa__Wire__RawPut> = arena.message { sofa__wire__raw_put__init($0) }
            op.pointee.store = arena.string(store)
            op.pointee.key = arena.bytes(key)
            op.pointee.version = arena.bytes(version)
            op.pointee.body = arena.bytes(body)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_RAW_PUT
            message.pointee.raw_put = op
        case .rawGet(let store, let key):
            let op: UnsafeMutablePointer<Sofa__Wire__RawGet> = arena.message { sofa__wire__raw_get__init($0) }
            op.pointee.store = arena.string(store)
            op.pointee.key = arena.bytes(key)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_RAW_GET
            message.pointee.raw_get = op
        case .rawDelete(let store, let key):
            let op: UnsafeMutablePointer<Sofa__Wire__RawDelete> = arena.message { sofa__wire__raw_delete__init($0) }
            op.pointee.store = arena.string(store)
            op.pointee.key = arena.bytes(key)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_RAW_DELETE
            message.pointee.raw_delete = op
        case .query(let spec):
            let op: UnsafeMutablePointer<Sofa__Wire__QueryRequest> = arena.message { sofa__wire__query_request__init($0) }
            op.pointee.text = arena.string(spec.text)
            op.pointee.n1ql = spec.isN1QL ? 1 : 0
            op.pointee.parameters = arena.bytes(spec.parameters.isEmpty ? [] : JSON.object(spec.parameters).typedCompactBytes())
            op.pointee.explain = spec.explain ? 1 : 0
            op.pointee.skip = spec.skip
            op.pointee.page_rows = spec.pageRows
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_QUERY
            message.pointee.query = op
        case .createIndex(let index):
            let op: UnsafeMutablePointer<Sofa__Wire__CreateIndex> = arena.message { sofa__wire__create_index__init($0) }
            op.pointee.name = arena.string(index.name)
            op.pointee.kind = index.kind
            op.pointee.descriptor = arena.bytes(index.descriptor.compactBytes())
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CREATE_INDEX
            message.pointee.create_index = op
        case .deleteIndex(let name):
            let op: UnsafeMutablePointer<Sofa__Wire__DeleteIndex> = arena.message { sofa__wire__delete_index__init($0) }
            op.pointee.name = arena.string(name)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_INDEX
            message.pointee.delete_index = op
        case .listIndexes:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_LIST_INDEXES
            message.pointee.list_indexes = arena.message { sofa__wire__list_indexes__init($0) }
        case .compact:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_COMPACT
            message.pointee.compact = arena.message { sofa__wire__compact__init($0) }
        case .authenticate(let name, let password):
            let op: UnsafeMutablePointer<Sofa__Wire__Authenticate> = arena.message { sofa__wire__authenticate__init($0) }
            op.pointee.name = arena.string(name)
            op.pointee.password = arena.string(password)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_AUTHENTICATE
            message.pointee.authenticate = op
        case .session:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_SESSION
            message.pointee.session = arena.message { sofa__wire__session_request__init($0) }
        case .getSecurity:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_GET_SECURITY
            message.pointee.get_security = arena.message { sofa__wire__get_security__init($0) }
        case .setSecurity(let json):
            let op: UnsafeMutablePointer<Sofa__Wire__SetSecurity> = arena.message { sofa__wire__set_security__init($0) }
            op.pointee.json = arena.bytes(json.compactBytes())
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_SET_SECURITY
            message.pointee.set_security = op
        case .viewQuery(let design, let view, let options):
            let op: UnsafeMutablePointer<Sofa__Wire__ViewQuery> = arena.message { sofa__wire__view_query__init($0) }
            op.pointee.design = arena.string(design)
            op.pointee.view = arena.string(view)
            op.pointee.options = arena.bytes(options.compactBytes())
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_VIEW_QUERY
            message.pointee.view_query = op
        case .designCall(let call):
            let op: UnsafeMutablePointer<Sofa__Wire__DesignCall> = arena.message { sofa__wire__design_call__init($0) }
            op.pointee.kind = arena.string(call.kind.rawValue)
            op.pointee.design = arena.string(call.design)
            op.pointee.name = arena.string(call.name)
            op.pointee.documents = arena.bytes(JSON.array(call.documents).compactBytes())
            op.pointee.context = arena.bytes(call.context.compactBytes())
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DESIGN_CALL
            message.pointee.design_call = op
        case .echo(let payload, let delayMs, let service):
            let op: UnsafeMutablePointer<Sofa__Wire__Echo> = arena.message { sofa__wire__echo__init($0) }
            op.pointee.payload = arena.bytes(payload)
            op.pointee.delay_ms = delayMs
            op.pointee.service = arena.string(service)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_ECHO
            message.pointee.echo = op
        case .blobWriteBegin(let expectedKey):
            let op: UnsafeMutablePointer<Sofa__Wire__BlobWriteBegin> = arena.message { sofa__wire__blob_write_begin__init($0) }
            op.pointee.expected_key = arena.string(expectedKey)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_WRITE_BEGIN
            message.pointee.blob_write_begin = op
        case .blobWriteChunk(let writeID, let offset, let bytes):
            Self.encodeBlobWriteChunk(writeID, offset, arena.bytes(bytes), into: message, arena)
        case .blobWriteEnd(let writeID, let length):
            let op: UnsafeMutablePointer<Sofa__Wire__BlobWriteEnd> = arena.message { sofa__wire__blob_write_end__init($0) }
            op.pointee.write_id = writeID
            op.pointee.length = length
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_WRITE_END
            message.pointee.blob_write_end = op
        case .blobWriteAbort(let writeID):
            let op: UnsafeMutablePointer<Sofa__Wire__BlobWriteAbort> = arena.message { sofa__wire__blob_write_abort__init($0) }
            op.pointee.write_id = writeID
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_WRITE_ABORT
            message.pointee.blob_write_abort = op
        case .blobRead(let key, let offset, let length):
            let op: UnsafeMutablePointer<Sofa__Wire__BlobRead> = arena.message { sofa__wire__blob_read__init($0) }
            op.pointee.key = arena.string(key)
            op.pointee.offset = offset
            op.pointee.length = length
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_READ
            message.pointee.blob_read = op
        case .blobStat(let key):
            let op: UnsafeMutablePointer<Sofa__Wire__BlobStat> = arena.message { sofa__wire__blob_stat__init($0) }
            op.pointee.key = arena.string(key)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_STAT
            message.pointee.blob_stat = op
        case .rekeyDatabase(let currentKey, let newKey):
            let op: UnsafeMutablePointer<Sofa__Wire__RekeyDatabase> = arena.message { sofa__wire__rekey_database__init($0) }
            op.pointee.current_key = arena.bytes(currentKey?.rawBytes ?? [])
            op.pointee.new_key = arena.bytes(newKey?.rawBytes ?? [])
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_REKEY_DATABASE
            message.pointee.rekey_database = op
        case .deleteBlobs(let keys):
            let op: UnsafeMutablePointer<Sofa__Wire__DeleteBlobs> = arena.message { sofa__wire__delete_blobs__init($0) }
            (op.pointee.n_keys, op.pointee.keys) = arena.strings(keys)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_BLOBS
            message.pointee.delete_blobs = op
        case .dropBlobs:
            let op: UnsafeMutablePointer<Sofa__Wire__DropBlobs> = arena.message { sofa__wire__drop_blobs__init($0) }
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DROP_BLOBS
            message.pointee.drop_blobs = op
        case .setRevsLimit(let limit):
            let op: UnsafeMutablePointer<Sofa__Wire__SetRevsLimit> = arena.message { sofa__wire__set_revs_limit__init($0) }
            op.pointee.limit = limit
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_SET_REVS_LIMIT
            message.pointee.set_revs_limit = op
        case .revsDiff(let entries):
            let op: UnsafeMutablePointer<Sofa__Wire__RevsDiffRequest> = arena.message { sofa__wire__revs_diff_request__init($0) }
            (op.pointee.n_docs, op.pointee.docs) = ReplicationWire.entries(entries, arena)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_REVS_DIFF
            message.pointee.revs_diff = op
        case .startReplication(let spec):
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_START_REPLICATION
            message.pointee.start_replication = ReplicationWire.start(spec, arena)
        case .stopReplication(let id):
            let op: UnsafeMutablePointer<Sofa__Wire__StopReplication> = arena.message { sofa__wire__stop_replication__init($0) }
            op.pointee.replication_id = arena.string(id)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_STOP_REPLICATION
            message.pointee.stop_replication = op
        case .listReplications(let id, let afterVersion, let waitMs):
            let op: UnsafeMutablePointer<Sofa__Wire__ListReplications> = arena.message { sofa__wire__list_replications__init($0) }
            op.pointee.replication_id = arena.string(id)
            op.pointee.after_version = afterVersion
            op.pointee.wait_ms = waitMs
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_LIST_REPLICATIONS
            message.pointee.list_replications = op
        }
    }

    private static func put(_ docID: String, _ rev: String, _ body: [UInt8], _ deleted: Bool, _ arena: Arena)
        -> UnsafeMutablePointer<Sofa__Wire__PutDocument> {
        let op: UnsafeMutablePointer<Sofa__Wire__PutDocument> = arena.message { sofa__wire__put_document__init($0) }
        op.pointee.id = arena.bytes(docID)
        op.pointee.rev = arena.string(rev)
        op.pointee.body = arena.bytes(body)
        op.pointee.deleted = deleted ? 1 : 0
        return op
    }

    private static func insert(_ insert: RevisionInsert, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__InsertRevision> {
        let op: UnsafeMutablePointer<Sofa__Wire__InsertRevision> = arena.message { sofa__wire__insert_revision__init($0) }
        op.pointee.id = arena.bytes(insert.id)
        (op.pointee.n_history, op.pointee.history) = arena.strings(insert.history)
        op.pointee.body = arena.bytes(insert.body)
        op.pointee.deleted = insert.deleted ? 1 : 0
        op.pointee.winner_by_rev_id = insert.winnerByRevID ? 1 : 0
        return op
    }
}

extension Op {
    /// A `blobWriteChunk` whose bytes are `data` (borrowed by the message, not copied).
    static func encodeBlobWriteChunk(_ writeID: UInt64, _ offset: UInt64, _ data: ProtobufCBinaryData,
                                     into message: UnsafeMutablePointer<Sofa__Wire__Request>, _ arena: Arena) {
        let op: UnsafeMutablePointer<Sofa__Wire__BlobWriteChunk> = arena.message { sofa__wire__blob_write_chunk__init($0) }
        op.pointee.write_id = writeID
        op.pointee.offset = offset
        op.pointee.bytes = data
        message.pointee.op_case = SOFA__WIRE__REQUEST__OP_BLOB_WRITE_CHUNK
        message.pointee.blob_write_chunk = op
    }
}
