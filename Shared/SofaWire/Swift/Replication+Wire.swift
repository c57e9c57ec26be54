internal import CProtobufC
internal import SofaWireC
internal import SofaCore

/// Conversions of the replication messages (revs-diff, replication control).
enum ReplicationWire {
    static func entries(_ entries: [RevsDiffEntry], _ arena: Arena) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<Sofa__Wire__RevsDiffEntry>?>?) {
        let items = entries.map { entry -> UnsafeMutablePointer<Sofa__Wire__RevsDiffEntry> in
            let e: UnsafeMutablePointer<Sofa__Wire__RevsDiffEntry> = arena.message { sofa__wire__revs_diff_entry__init($0) }
            e.pointee.id = arena.bytes(entry.id)
            (e.pointee.n_revs, e.pointee.revs) = arena.strings(entry.revs)
            (e.pointee.n_possible_ancestors, e.pointee.possible_ancestors) = arena.strings(entry.possibleAncestors)
            return e
        }
        return (items.count, arena.array(items))
    }

    static func decodeEntries(_ count: Int, _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Sofa__Wire__RevsDiffEntry>?>?,
                              _ field: String) throws(SofaError) -> [RevsDiffEntry] {
        var result: [RevsDiffEntry] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let e = try required(pointer?[index], field)
            result.append(RevsDiffEntry(id: try decodeText(e.id, "\(field).id"),
                                        revs: try decodeStrings(e.n_revs, e.revs, "\(field).revs"),
                                        possibleAncestors: try decodeStrings(e.n_possible_ancestors, e.possible_ancestors,
                                                                             "\(field).possibleAncestors")))
        }
        return result
    }

    static func start(_ spec: ReplicationSpec, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__StartReplication> {
        let op: UnsafeMutablePointer<Sofa__Wire__StartReplication> = arena.message { sofa__wire__start_replication__init($0) }
        op.pointee.source = arena.string(spec.source)
        op.pointee.target = arena.string(spec.target)
        op.pointee.direction = arena.string(spec.direction.rawValue)
        op.pointee.continuous = spec.continuous ? 1 : 0
        (op.pointee.n_doc_ids, op.pointee.doc_ids) = arena.byteArrays(spec.docIDs.map { Array($0.utf8) })
        op.pointee.filter = arena.string(spec.filter)
        op.pointee.conflicts = arena.string(spec.conflicts.rawValue)
        op.pointee.collection = arena.string(spec.collection)
        op.pointee.owner = arena.string(spec.owner)
        op.pointee.source_access = spec.sourceAccess.map { access($0, arena) }
        op.pointee.target_access = spec.targetAccess.map { access($0, arena) }
        op.pointee.design_filter = arena.string(spec.designFilter)
        if !spec.queryParams.isEmpty { op.pointee.query_params = arena.bytes(JSON.object(spec.queryParams).compactBytes()) }
        op.pointee.since = spec.since
        return op
    }

    static func access(_ access: RemoteAccess, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__RemoteAccess> {
        let m: UnsafeMutablePointer<Sofa__Wire__RemoteAccess> = arena.message { sofa__wire__remote_access__init($0) }
        m.pointee.server_key = arena.string(access.serverKey)
        m.pointee.user = arena.string(access.user)
        m.pointee.password = arena.string(access.password)
        return m
    }

    static func decodeAccess(_ m: UnsafeMutablePointer<Sofa__Wire__RemoteAccess>?, _ field: String) throws(SofaError) -> RemoteAccess? {
        guard let m else { return nil }
        return RemoteAccess(serverKey: try decodeString(m.pointee.server_key, "\(field).serverKey"),
                            user: try decodeString(m.pointee.user, "\(field).user"),
                            password: try decodeString(m.pointee.password, "\(field).password"))
    }

    static func decodeStart(_ op: Sofa__Wire__StartReplication) throws(SofaError) -> ReplicationSpec {
        ReplicationSpec(source: try decodeString(op.source, "startReplication.source"),
                        target: try decodeString(op.target, "startReplication.target"),
                        direction: try ReplicationDirection.parse(try decodeString(op.direction, "startReplication.direction")),
                        continuous: op.continuous != 0,
                        docIDs: try decodeTexts(op.n_doc_ids, op.doc_ids, "startReplication.docIDs"),
                        filter: try decodeString(op.filter, "startReplication.filter"),
                        conflicts: try ConflictPolicy.parse(try decodeString(op.conflicts, "startReplication.conflicts")),
                        collection: try decodeString(op.collection, "startReplication.collection"),
                        owner: try decodeString(op.owner, "startReplication.owner"),
                        sourceAccess: try decodeAccess(op.source_access, "startReplication.sourceAccess"),
                        targetAccess: try decodeAccess(op.target_access, "startReplication.targetAccess"),
                        designFilter: try decodeString(op.design_filter, "startReplication.designFilter"),
                        queryParams: try decodeQueryParams(op.query_params), since: op.since)
    }

    /// `query_params`: empty, or a JSON object.
    static func decodeQueryParams(_ bytes: ProtobufCBinaryData) throws(SofaError) -> JSONObject {
        guard bytes.len > 0 else { return [:] }
        guard let object = JSON.tryParse(Array(UnsafeBufferPointer(start: bytes.data, count: bytes.len)))?.objectValue else {
            throw SofaError(.malformedMessage, "malformed request: startReplication.queryParams is not a JSON object")
        }
        return object
    }

    static func list(_ statuses: [ReplicationStatus], _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__ReplicationList> {
        let r: UnsafeMutablePointer<Sofa__Wire__ReplicationList> = arena.message { sofa__wire__replication_list__init($0) }
        let items = statuses.map { s -> UnsafeMutablePointer<Sofa__Wire__ReplicationInfo> in
            let i: UnsafeMutablePointer<Sofa__Wire__ReplicationInfo> = arena.message { sofa__wire__replication_info__init($0) }
            i.pointee.id = arena.string(s.id)
            i.pointee.source = arena.string(s.source)
            i.pointee.target = arena.string(s.target)
            i.pointee.continuous = s.continuous ? 1 : 0
            i.pointee.state = arena.string(s.state.rawValue)
            i.pointee.docs_checked = s.docsChecked
            i.pointee.docs_written = s.docsWritten
            i.pointee.conflicts_resolved = s.conflictsResolved
            i.pointee.blobs_transferred = s.blobsTransferred
            i.pointee.last_error = arena.string(s.lastError)
            i.pointee.checkpoint = s.checkpoint
            i.pointee.version = s.version
            (i.pointee.n_doc_ids, i.pointee.doc_ids) = arena.byteArrays(s.docIDs.map { Array($0.utf8) })
            i.pointee.filter = arena.string(s.filter)
            i.pointee.conflicts = arena.string(s.conflicts.rawValue)
            i.pointee.collection = arena.string(s.collection)
            i.pointee.revisions_sent = s.revisionsSent
            i.pointee.design_filter = arena.string(s.designFilter)
            i.pointee.doc_write_failures = s.docWriteFailures
            return i
        }
        r.pointee.n_replications = items.count
        r.pointee.replications = arena.array(items)
        return r
    }

    static func decodeList(_ r: Sofa__Wire__ReplicationList) throws(SofaError) -> [ReplicationStatus] {
        var result: [ReplicationStatus] = []
        for index in 0..<r.n_replications {
            let i = try required(r.replications?[index], "replications")
            let stateText = try decodeString(i.state, "replication.state")
            guard let state = ReplicationStatus.State(rawValue: stateText) else {
                throw SofaError(.malformedMessage, "malformed response: unknown replication state '\(stateText)'")
            }
            result.append(ReplicationStatus(
                id: try decodeString(i.id, "replication.id"), source: try decodeString(i.source, "replication.source"),
                target: try decodeString(i.target, "replication.target"), continuous: i.continuous != 0, state: state,
                docsChecked: i.docs_checked, docsWritten: i.docs_written, conflictsResolved: i.conflicts_resolved,
                blobsTransferred: i.blobs_transferred, lastError: try decodeString(i.last_error, "replication.lastError"),
                checkpoint: i.checkpoint, version: i.version,
                docIDs: try decodeTexts(i.n_doc_ids, i.doc_ids, "replication.docIDs"),
                filter: try decodeString(i.filter, "replication.filter"),
                conflicts: try ConflictPolicy.parse(try decodeString(i.conflicts, "replication.conflicts")),
                collection: try decodeString(i.collection, "replication.collection"),
                revisionsSent: i.revisions_sent,
                designFilter: try decodeString(i.design_filter, "replication.designFilter"),
                docWriteFailures: i.doc_write_failures))
        }
        return result
    }
}
