internal import CProtobufC
internal import SofaWireC
internal import SofaCore

// Operations out of a decoded protobuf-c request; every field checked, a missing one named.
extension Op {
    /// The operation of a decoded request.
    static func decode(_ m: Sofa__Wire__Request) throws(SofaError) -> Op {
        switch m.op_case {
        case SOFA__WIRE__REQUEST__OP_HEALTH:
            return .health(service: try decodeString(required(m.health, "health").service, "health.service"))
        case SOFA__WIRE__REQUEST__OP_CLUSTER_STATUS: return .clusterStatus
        case SOFA__WIRE__REQUEST__OP_CREATE_DATABASE:
            let name = try decodeString(m.create_database?.pointee.versioning, "createDatabase.versioning")
            guard let versioning = Versioning(rawValue: name.isEmpty ? Versioning.revisionTrees.rawValue : name) else {
                throw SofaError(.invalidParameter, "unknown versioning '\(name)': use 'trees' or 'vectors'")
            }
            let key = try decodeKey(m.create_database.map { decodeBytes($0.pointee.encryption_key) } ?? [], "createDatabase.encryptionKey")
            return .createDatabase(versioning: versioning, encryptionKey: key)
        case SOFA__WIRE__REQUEST__OP_DELETE_DATABASE: return .deleteDatabase
        case SOFA__WIRE__REQUEST__OP_LIST_DATABASES: return .listDatabases
        case SOFA__WIRE__REQUEST__OP_DATABASE_INFO: return .databaseInfo
        case SOFA__WIRE__REQUEST__OP_CREATE_COLLECTION: return .createCollection
        case SOFA__WIRE__REQUEST__OP_DELETE_COLLECTION: return .deleteCollection
        case SOFA__WIRE__REQUEST__OP_LIST_COLLECTIONS: return .listCollections
        case SOFA__WIRE__REQUEST__OP_PUT_DOCUMENT:
            let op = try required(m.put_document, "putDocument")
            return .putDocument(id: try decodeText(op.id, "putDocument.id"), rev: try decodeString(op.rev, "putDocument.rev"),
                                body: decodeBytes(op.body), deleted: op.deleted != 0)
        case SOFA__WIRE__REQUEST__OP_GET_DOCUMENT:
            let op = try required(m.get_document, "getDocument")
            return .getDocument(id: try decodeText(op.id, "getDocument.id"), rev: try decodeString(op.rev, "getDocument.rev"),
                                history: op.history != 0, openLeaves: op.open_leaves != 0)
        case SOFA__WIRE__REQUEST__OP_DELETE_DOCUMENT:
            let op = try required(m.delete_document, "deleteDocument")
            return .deleteDocument(id: try decodeText(op.id, "deleteDocument.id"),
                                   rev: try decodeString(op.rev, "deleteDocument.rev"))
        case SOFA__WIRE__REQUEST__OP_INSERT_REVISION:
            return .insertRevision(try decodeInsert(required(m.insert_revision, "insertRevision")))
        case SOFA__WIRE__REQUEST__OP_BULK_WRITE:
            let op = try required(m.bulk_write, "bulkWrite")
            var items: [BulkItem] = []
            items.reserveCapacity(op.n_items)
            for index in 0..<op.n_items {
                let item = try required(op.items[index], "bulkWrite.item")
                switch item.item_case {
                case SOFA__WIRE__BULK_ITEM__ITEM_PUT:
                    let put = try required(item.put, "bulkWrite.put")
                    items.append(.put(id: try decodeText(put.id, "put.id"), rev: try decodeString(put.rev, "put.rev"),
                                      body: decodeBytes(put.body), deleted: put.deleted != 0))
                case SOFA__WIRE__BULK_ITEM__ITEM_INSERT:
                    items.append(.insert(try decodeInsert(required(item.insert, "bulkWrite.insert"))))
                default:
                    throw SofaError(.malformedMessage, "malformed request: bulk item \(index) has no write")
                }
            }
            return .bulkWrite(items)
        case SOFA__WIRE__REQUEST__OP_CONFLICTS:
            return .conflicts(id: try decodeText(required(m.conflicts, "conflicts").id, "conflicts.id"))
        case SOFA__WIRE__REQUEST__OP_RESOLVE_CONFLICT:
            let op = try required(m.resolve_conflict, "resolveConflict")
            return .resolveConflict(ConflictResolution(
                id: try decodeText(op.id, "resolveConflict.id"), winner: try decodeString(op.winner, "resolveConflict.winner"),
                loser: try decodeString(op.loser, "resolveConflict.loser"), merge: op.merge != 0,
                mergedBody: decodeBytes(op.merged_body), mergedDeleted: op.merged_deleted != 0))
        case SOFA__WIRE__REQUEST__OP_PURGE:
            let op = try required(m.purge, "purge")
            return .purge(id: try decodeText(op.id, "purge.id"), rev: try decodeString(op.rev, "purge.rev"))
        case SOFA__WIRE__REQUEST__OP_SET_EXPIRATION:
            let op = try required(m.set_expiration, "setExpiration")
            return .setExpiration(id: try decodeText(op.id, "setExpiration.id"), expiration: op.expiration)
        case SOFA__WIRE__REQUEST__OP_GET_EXPIRATION:
            return .getExpiration(id: try decodeText(required(m.get_expiration, "getExpiration").id, "getExpiration.id"))
        case SOFA__WIRE__REQUEST__OP_NEXT_EXPIRATION: return .nextExpiration
        case SOFA__WIRE__REQUEST__OP_CHANGES:
            let op = try required(m.changes, "changes")
            return .changes(ChangesQuery(since: op.since, descending: op.descending != 0, limit: op.limit,
                                         includeBodies: op.include_bodies != 0, allLeaves: op.all_leaves != 0,
                                         includeDeleted: op.include_deleted != 0,
                                         docIDs: try decodeTexts(op.n_doc_ids, op.doc_ids, "changes.docIDs"),
                                         waitMs: op.wait_ms))
        case SOFA__WIRE__REQUEST__OP_ALL_DOCS:
            let op = try required(m.all_docs, "allDocs")
            return .allDocs(AllDocsQuery(includeBodies: op.include_bodies != 0, includeDeleted: op.include_deleted != 0,
                                         limit: op.limit, skip: op.skip, descending: op.descending != 0,
                                         startKey: try decodeText(op.start_key, "allDocs.startKey"),
                                         endKey: try decodeText(op.end_key, "allDocs.endKey")))
        case SOFA__WIRE__REQUEST__OP_RAW_PUT:
            let op = try required(m.raw_put, "rawPut")
            return .rawPut(store: try decodeString(op.store, "rawPut.store"), key: try decodeText(op.key, "rawPut.key"),
                           version: decodeBytes(op.version), body: decodeBytes(op.body))
        case SOFA__WIRE__REQUEST__OP_RAW_GET:
            let op = try required(m.raw_get, "rawGet")
            return .rawGet(store: try decodeString(op.store, "rawGet.store"), key: try decodeText(op.key, "rawGet.key"))
        case SOFA__WIRE__REQUEST__OP_RAW_DELETE:
            let op = try required(m.raw_delete, "rawDelete")
            return .rawDelete(store: try decodeString(op.store, "rawDelete.store"), key: try decodeText(op.key, "rawDelete.key"))
        case SOFA__WIRE__REQUEST__OP_COMPACT: return .compact
        case SOFA__WIRE__REQUEST__OP_AUTHENTICATE:
            let op = try required(m.authenticate, "authenticate")
            return .authenticate(name: try decodeString(op.name, "authenticate.name"),
                                 password: try decodeString(op.password, "authenticate.password"))
        case SOFA__WIRE__REQUEST__OP_SESSION: return .session
        case SOFA__WIRE__REQUEST__OP_GET_SECURITY: return .getSecurity
        case SOFA__WIRE__REQUEST__OP_SET_SECURITY:
            let op = try required(m.set_security, "setSecurity")
            let bytes = decodeBytes(op.json)
            guard let json = JSON.tryParse(bytes) else {
                throw SofaError(.badJSON, "the security object is not JSON")
            }
            return .setSecurity(json)
        case SOFA__WIRE__REQUEST__OP_VIEW_QUERY:
            let op = try required(m.view_query, "viewQuery")
            let bytes = decodeBytes(op.options)
            guard let options = bytes.isEmpty ? JSON.object([:]) : JSON.tryParse(bytes), options.objectValue != nil else {
                throw SofaError(.badJSON, "a view query's options are a JSON object")
            }
            return .viewQuery(design: try decodeString(op.design, "viewQuery.design"), view: try decodeString(op.view, "viewQuery.view"),
                              options: options)
        case SOFA__WIRE__REQUEST__OP_DESIGN_CALL:
            let op = try required(m.design_call, "designCall")
            let kindName = try decodeString(op.kind, "designCall.kind")
            guard let kind = DesignCall.Kind(rawValue: kindName) else {
                throw SofaError(.invalidParameter, "unknown design call '\(kindName)': use "
                    + DesignCall.Kind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let documentBytes = decodeBytes(op.documents), contextBytes = decodeBytes(op.context)
            guard let documents = documentBytes.isEmpty ? [] : JSON.tryParse(documentBytes)?.arrayValue else {
                throw SofaError(.badJSON, "a design call's documents are a JSON array")
            }
            guard let context = contextBytes.isEmpty ? JSON.null : JSON.tryParse(contextBytes) else {
                throw SofaError(.badJSON, "a design call's context is not JSON")
            }
            return .designCall(DesignCall(kind, design: try decodeString(op.design, "designCall.design"),
                                          name: try decodeString(op.name, "designCall.name"), documents: documents, context: context))
        case SOFA__WIRE__REQUEST__OP_QUERY:
            let op = try required(m.query, "query")
            let parameterBytes = decodeBytes(op.parameters)
            var parameters = JSONObject()
            if !parameterBytes.isEmpty {
                let parsed: JSON
                do { parsed = try JSON.parse(parameterBytes) } catch {
                    throw SofaError(.invalidParameter, "query parameters must be a JSON object: \(error.message)")
                }
                guard let object = parsed.objectValue else {
                    throw SofaError(.invalidParameter, "query parameters must be a JSON object")
                }
                parameters = object
            }
            return .query(QuerySpec(text: try decodeString(op.text, "query.text"), isN1QL: op.n1ql != 0,
                                    parameters: parameters, explain: op.explain != 0, skip: op.skip, pageRows: op.page_rows))
        case SOFA__WIRE__REQUEST__OP_CREATE_INDEX:
            let op = try required(m.create_index, "createIndex")
            let descriptor: JSON
            do { descriptor = try JSON.parse(decodeBytes(op.descriptor)) } catch {
                throw SofaError(.invalidParameter, "an index descriptor must be JSON: \(error.message)")
            }
            return .createIndex(IndexDefinition(kind: op.kind, name: try decodeString(op.name, "createIndex.name"), descriptor: descriptor))
        case SOFA__WIRE__REQUEST__OP_DELETE_INDEX:
            return .deleteIndex(name: try decodeString(required(m.delete_index, "deleteIndex").name, "deleteIndex.name"))
        case SOFA__WIRE__REQUEST__OP_LIST_INDEXES: return .listIndexes
        case SOFA__WIRE__REQUEST__OP_ECHO:
            let op = try required(m.echo, "echo")
            return .echo(payload: decodeBytes(op.payload), delayMs: op.delay_ms, service: try decodeString(op.service, "echo.service"))
        case SOFA__WIRE__REQUEST__OP_BLOB_WRITE_BEGIN:
            let op = try required(m.blob_write_begin, "blobWriteBegin")
            return .blobWriteBegin(expectedKey: try decodeString(op.expected_key, "blobWriteBegin.expectedKey"))
        case SOFA__WIRE__REQUEST__OP_BLOB_WRITE_CHUNK:
            let op = try required(m.blob_write_chunk, "blobWriteChunk")
            return .blobWriteChunk(writeID: op.write_id, offset: op.offset, bytes: decodeBytes(op.bytes))
        case SOFA__WIRE__REQUEST__OP_BLOB_WRITE_END:
            let op = try required(m.blob_write_end, "blobWriteEnd")
            return .blobWriteEnd(writeID: op.write_id, length: op.length)
        case SOFA__WIRE__REQUEST__OP_BLOB_WRITE_ABORT:
            return .blobWriteAbort(writeID: try required(m.blob_write_abort, "blobWriteAbort").write_id)
        case SOFA__WIRE__REQUEST__OP_BLOB_READ:
            let op = try required(m.blob_read, "blobRead")
            return .blobRead(key: try decodeString(op.key, "blobRead.key"), offset: op.offset, length: op.length)
        case SOFA__WIRE__REQUEST__OP_BLOB_STAT:
            return .blobStat(key: try decodeString(required(m.blob_stat, "blobStat").key, "blobStat.key"))
        case SOFA__WIRE__REQUEST__OP_REKEY_DATABASE:
            let op = try required(m.rekey_database, "rekeyDatabase")
            return .rekeyDatabase(currentKey: try decodeKey(decodeBytes(op.current_key), "rekeyDatabase.currentKey"),
                                  newKey: try decodeKey(decodeBytes(op.new_key), "rekeyDatabase.newKey"))
        case SOFA__WIRE__REQUEST__OP_DELETE_BLOBS:
            let op = try required(m.delete_blobs, "deleteBlobs")
            return .deleteBlobs(keys: try decodeStrings(op.n_keys, op.keys, "deleteBlobs.keys"))
        case SOFA__WIRE__REQUEST__OP_DROP_BLOBS:
            _ = try required(m.drop_blobs, "dropBlobs")
            return .dropBlobs
        case SOFA__WIRE__REQUEST__OP_SET_REVS_LIMIT:
            return .setRevsLimit(try required(m.set_revs_limit, "setRevsLimit").limit)
        case SOFA__WIRE__REQUEST__OP_REVS_DIFF:
            let op = try required(m.revs_diff, "revsDiff")
            return .revsDiff(try ReplicationWire.decodeEntries(op.n_docs, op.docs, "revsDiff.docs"))
        case SOFA__WIRE__REQUEST__OP_START_REPLICATION:
            return .startReplication(try ReplicationWire.decodeStart(required(m.start_replication, "startReplication")))
        case SOFA__WIRE__REQUEST__OP_STOP_REPLICATION:
            let op = try required(m.stop_replication, "stopReplication")
            return .stopReplication(id: try decodeString(op.replication_id, "stopReplication.id"))
        case SOFA__WIRE__REQUEST__OP_LIST_REPLICATIONS:
            let op = try required(m.list_replications, "listReplications")
            return .listReplications(id: try decodeString(op.replication_id, "listReplications.id"),
                                     afterVersion: op.after_version, waitMs: op.wait_ms)
        default:
            throw SofaError(.malformedMessage, "malformed request \(m.id): no operation, or one this process does not know")
        }
    }

    /// An AES-256 key field: empty = none, 32 bytes = a key, anything else `.invalidParameter`.
    private static func decodeKey(_ bytes: [UInt8], _ field: String) throws(SofaError) -> EncryptionKey? {
        guard !bytes.isEmpty else { return nil }
        do { return try EncryptionKey(bytes: bytes) } catch { throw SofaError(.invalidParameter, "\(field): \(error.message)") }
    }

    private static func decodeInsert(_ op: Sofa__Wire__InsertRevision) throws(SofaError) -> RevisionInsert {
        RevisionInsert(id: try decodeText(op.id, "insertRevision.id"),
                       history: try decodeStrings(op.n_history, op.history, "insertRevision.history"),
                       body: decodeBytes(op.body), deleted: op.deleted != 0, winnerByRevID: op.winner_by_rev_id != 0)
    }
}
