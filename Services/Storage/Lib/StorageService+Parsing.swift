internal import SofaQL
import SofaCore
import SofaWire

/// How wire values become engine values and back (part of the service: the only code of the
/// module that knows the wire).
extension StorageService {
    /// A put's fields: a JSON object whose `_id`, `_rev` and `_deleted` are metadata. The wire's
    /// id/rev win when given; the body's must then agree. An empty ID is generated.
    static func documentFields(id wireID: String, rev wireRev: String, body: [UInt8], deleted wireDeleted: Bool)
        throws(SofaError) -> DocumentFields {
        let (json, isCompact) = body.isEmpty ? (JSON.object(JSONObject()), false) : try JSON.parseNotingCompact(body)
        guard var object = json.objectValue else {
            throw SofaError(.badJSON, "a document body must be a JSON object, not \(json.kindName)")
        }
        var id = wireID
        if let bodyID = object.removeValue(forKey: "_id") {
            guard let text = bodyID.stringValue else { throw SofaError(.badDocID, "_id must be a string") }
            if id.isEmpty { id = text } else if id != text {
                throw SofaError(.badDocID, "_id '\(text)' in the body does not match the document ID '\(id)'")
            }
        }
        var rev = wireRev
        if let bodyRev = object.removeValue(forKey: "_rev") {
            guard let text = bodyRev.stringValue else { throw SofaError(.badRevisionID, "_rev must be a string") }
            if rev.isEmpty { rev = text } else if rev != text {
                throw SofaError(.badRevisionID, "_rev '\(text)' in the body does not match the revision '\(rev)'")
            }
        }
        var deleted = wireDeleted
        if let flag = object.removeValue(forKey: "_deleted") {
            guard let value = flag.boolValue else { throw SofaError(.invalidParameter, "_deleted must be true or false") }
            deleted = deleted || value
        }
        if id.isEmpty { id = DocumentID.generate() }
        try DocumentID.validate(id)
        // The bytes sent are the compact form when nothing was taken out of them.
        let untouched = isCompact && object.count == json.objectValue?.count
        return DocumentFields(id: id, rev: rev, body: object, deleted: deleted, compactBody: untouched ? body : nil)
    }

    /// A document write as sent: ID, parent revision, body without the reserved keys, and the
    /// body's compact bytes when the request already carried them.
    struct DocumentFields {
        var id: String
        var rev: String
        var body: JSONObject
        var deleted: Bool
        var compactBody: [UInt8]?
    }

    static func documentWrite(_ f: DocumentFields) throws(SofaError) -> DocumentWrite {
        DocumentWrite(id: f.id, parent: f.rev.isEmpty ? nil : try DocumentVersion.parse(ascii: f.rev), body: .object(f.body),
                      deleted: f.deleted, compactBody: f.compactBody)
    }

    static func documentWrite(id: String, rev: String, body: [UInt8], deleted: Bool) throws(SofaError) -> DocumentWrite {
        // The common case without a tree: a compact object with nothing to take out of it (no
        // top-level `_` key) and no "digest" key (so no blob to check).
        if let scan = JSON.scanCompactObject(body), !scan.hasUnderscoreTopLevelKey, !scan.hasDigestKey {
            let docID = id.isEmpty ? DocumentID.generate() : id
            try DocumentID.validate(docID)
            return DocumentWrite(id: docID, parent: rev.isEmpty ? nil : try DocumentVersion.parse(ascii: rev),
                                 compactBody: body, canonicalBody: scan.canonical, deleted: deleted)
        }
        return try documentWrite(try documentFields(id: id, rev: rev, body: body, deleted: deleted))
    }

    /// A body sent raw (insert with history, merged bodies): a JSON object without `_id`, `_rev`
    /// or `_deleted` (those travel beside it; one inside is LiteCore's corrupt revision data, as
    /// its c4DatabaseTest "Reject invalid top-level keys" has it). An empty body is `{}`.
    static func strictBody(_ body: [UInt8], id: String) throws(SofaError) -> JSONObject {
        let json = body.isEmpty ? JSON.object(JSONObject()) : try JSON.parse(body)
        guard let object = json.objectValue else {
            throw SofaError(.badJSON, "document '\(id)': a body must be a JSON object, not \(json.kindName)")
        }
        for key in ["_id", "_rev", "_deleted"] where object[key] != nil {
            throw SofaError(.corruptRevisionData, "document '\(id)': the reserved key \(key) is not allowed inside a body sent raw")
        }
        return object
    }

    static func insertion(_ insert: RevisionInsert) throws(SofaError) -> RevisionInsertion {
        try DocumentID.validate(insert.id)
        guard !insert.history.isEmpty else { throw .invalid("document '\(insert.id)': the history is empty") }
        var insertion: RevisionInsertion
        if let scan = JSON.scanCompactObject(insert.body), !scan.hasUnderscoreTopLevelKey, !scan.hasDigestKey {
            insertion = RevisionInsertion(id: insert.id, history: insert.history, content: .compact(insert.body), deleted: insert.deleted)
        } else {
            insertion = RevisionInsertion(id: insert.id, history: insert.history, body: .object(try strictBody(insert.body, id: insert.id)),
                                          deleted: insert.deleted)
        }
        insertion.winnerByRevID = insert.winnerByRevID
        return insertion
    }

    static func wire(_ outcome: InsertOutcome) -> InsertResult {
        InsertResult(id: outcome.id, rev: outcome.rev, sequence: outcome.sequence, added: UInt32(clamping: outcome.added),
                     conflict: outcome.conflict)
    }

    /// Parses every item; those that parse go to storage in transactions of at most
    /// `maxTransactionItems`, one after the other, each before the request's deadline. A bulk
    /// over `maxBulkItems` is refused whole. When the first transaction cannot commit, the call
    /// fails (nothing was written); when a later one cannot, the items already committed keep
    /// their results and each item not written says why.
    func bulk(_ items: [BulkItem], _ db: DatabaseStore, _ collection: CollectionName) async throws(SofaError) -> [BulkItemResult] {
        try limits.checkBulk(items.count)
        var results = [BulkItemResult?](repeating: nil, count: items.count)
        var operations: [BulkOperation] = []
        var positions: [Int] = []
        for (index, item) in items.enumerated() {
            do throws(SofaError) {
                switch item {
                case .put(let id, let rev, let body, let deleted):
                    try limits.checkDocument(id, bytes: body.count)
                    operations.append(.write(try Self.documentWrite(id: id, rev: rev, body: body, deleted: deleted)))
                case .insert(let insert):
                    try limits.checkDocument(insert.id, bytes: insert.body.count)
                    operations.append(.insert(try Self.insertion(insert)))
                }
                positions.append(index)
            } catch {
                results[index] = BulkItemResult(id: Self.itemID(item), rev: "", sequence: 0, error: error)
            }
        }
        var written = 0
        for start in stride(from: 0, to: operations.count, by: limits.maxTransactionItems) {
            let range = start..<min(operations.count, start + limits.maxTransactionItems)
            let outcomes: [Result<BulkOutcome, SofaError>]
            do {
                outcomes = try await db.bulk(Array(operations[range]), in: collection)
            } catch {
                guard start > 0 else { throw error }
                let why = error.is(.timeout)
                    ? "the request's deadline passed before storage committed this item's transaction" : error.message
                let reason = SofaError(error.domain, error.code, "not written: \(why); the items before #\(written) "
                                       + "were committed by earlier transactions of this bulk (see their results)")
                for position in positions[range.lowerBound...] {
                    results[position] = BulkItemResult(id: Self.itemID(items[position]), rev: "", sequence: 0, error: reason)
                }
                break
            }
            for (offset, outcome) in outcomes.enumerated() {
                let position = positions[start + offset]
                switch outcome {
                case .success(.written(let w)):
                    results[position] = BulkItemResult(id: w.id, rev: w.rev.ascii, sequence: w.sequence)
                case .success(.inserted(let i)):
                    results[position] = BulkItemResult(id: i.id, rev: i.rev, sequence: i.sequence, conflict: i.conflict)
                case .failure(let error):
                    results[position] = BulkItemResult(id: Self.itemID(items[position]), rev: "", sequence: 0, error: error)
                }
            }
            written = positions[range.upperBound - 1] + 1
        }
        return results.map { $0! }
    }

    /// The ID an item names ("" for a put whose ID storage generates).
    static func itemID(_ item: BulkItem) -> String {
        switch item {
        case .put(let id, _, _, _): id
        case .insert(let insert): insert.id
        }
    }
}
