internal import SofaCore
internal import SofaClient
internal import Foundation

/// A document as an HTTP client sends it, split into what Sofa stores apart: the ID, the revision,
/// the deletion flag, the ancestry (`_revisions`), and the body without CouchDB's special members.
struct IncomingDocument: Sendable {
    var id: String?
    var rev: String?
    var deleted: Bool
    /// `_revisions` as full revision IDs, newest first (nil: none given).
    var history: [String]?
    /// Why `_revisions` could not be read: only a write that takes its ancestry from it
    /// (`new_edits=false`) fails for it. CouchDB's replicator writes its `_local` checkpoints
    /// with `"_revisions": {"start": 0, "ids": ["1"]}`, which a new edit leaves alone.
    var historyError: CouchError?
    var body: JSONObject

    /// The members CouchDB reserves that are not stored in the body.
    static let special: Set<String> = ["_id", "_rev", "_deleted", "_revisions", "_conflicts", "_deleted_conflicts",
                                       "_local_seq", "_revs_info"]

    init(_ object: JSONObject) throws(CouchError) {
        var body = JSONObject()
        var id: String?, rev: String?, deleted = false, history: [String]?, historyError: CouchError?
        for (key, value) in object {
            switch key {
            case "_id":
                guard let text = value.stringValue else { throw CouchError(.badRequest, "illegal_docid", "Document id must be a string") }
                id = text
            case "_rev":
                guard let text = value.stringValue else { throw CouchError(.badRequest, "bad_request", "Invalid rev format") }
                rev = text
            case "_deleted": deleted = value.boolValue ?? false
            case "_revisions":
                do throws(CouchError) { history = try Self.history(value) } catch { historyError = error }
            case "_attachments": body[key] = value
            // A replication document's state, as CouchDB's replicator writes it (kept, as there).
            case _ where ReplicationDocument.stateMembers.contains(key): body[key] = value
            case _ where Self.special.contains(key): break
            case _ where key.hasPrefix("_"):
                throw CouchError(.badRequest, "doc_validation", "Bad special document member: \(key)")
            default: body[key] = value
            }
        }
        self.id = id
        self.rev = rev
        self.deleted = deleted
        self.history = history
        self.historyError = historyError
        self.body = body
    }

    /// `{"start": N, "ids": ["abc", …]}` → `["N-abc", "N-1-…", …]`.
    static func history(_ value: JSON) throws(CouchError) -> [String] {
        guard let start = value["start"]?.intValue, let ids = value["ids"]?.arrayValue, start >= Int64(ids.count) else {
            throw CouchError(.badRequest, "bad_request", "_revisions must be {\"start\": N, \"ids\": [...]}")
        }
        var history: [String] = []
        for (offset, id) in ids.enumerated() {
            guard let digest = id.stringValue else { throw CouchError(.badRequest, "bad_request", "_revisions ids must be strings") }
            history.append("\(start - Int64(offset))-\(digest)")
        }
        return history
    }

    /// A write's ancestry for `new_edits=false`: `_revisions`, else the one revision given.
    func ancestry() throws(CouchError) -> [String] {
        if let historyError { throw historyError }
        if let history, !history.isEmpty {
            if let rev, rev != history[0] { throw CouchError(.badRequest, "bad_request", "_rev does not match _revisions") }
            return history
        }
        guard let rev else { throw CouchError(.badRequest, "bad_request", "new_edits=false needs _rev") }
        return [rev]
    }
}

/// A stored document in CouchDB's shape: `_id` and `_rev` first, then the body, then the members
/// asked for. The body's bytes are spliced in as stored (compact JSON), not parsed again.
struct OutgoingDocument {
    var extras: [(String, JSON)] = []

    static func bytes(_ document: StoredDocument, extras: [(String, JSON)] = []) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(document.body.count + document.id.utf8.count + 96)
        out += Array("{\"_id\":".utf8) + JSON.string(document.id).compactBytes()
        out += Array(",\"_rev\":".utf8) + JSON.string(document.rev).compactBytes()
        if document.deleted { out += Array(",\"_deleted\":true".utf8) }
        for (key, value) in extras {
            out += Array(",".utf8) + JSON.string(key).compactBytes() + [0x3A] + value.compactBytes()
        }
        // The stored body is a compact object: its members follow ours.
        let body = document.body
        if body.count > 2, body.first == 0x7B {
            out.append(0x2C)
            out += body[1...]
        } else {
            out.append(0x7D)
        }
        return out
    }

    /// CouchDB's `_revisions` from a revision's ancestry (newest first).
    static func revisions(_ history: [String]) -> JSON? {
        guard let first = history.first, let dash = first.firstIndex(of: "-"), let start = Int64(first[..<dash]) else { return nil }
        let ids = history.map { rev -> JSON in .string(rev.firstIndex(of: "-").map { String(rev[rev.index(after: $0)...]) } ?? rev) }
        return ["start": .int(start), "ids": .array(ids)]
    }
}
