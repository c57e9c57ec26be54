internal import SofaRows
public import SofaCore
public import SofaFiles
internal import Foundation
internal import CPosix

/// The blobs a document body references, as LiteCore recognises them:
///
/// * any dictionary, at any depth, with `"@type":"blob"` and a `"digest"` string, e.g.
///   `{"photo":{"@type":"blob","digest":"sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=","length":37}}`;
/// * every value with a `"digest"` in the top-level CouchDB-style `_attachments` dictionary, e.g.
///   `{"_attachments":{"a.txt":{"digest":"sha1-…","length":37,"stub":true}}}`.
///
/// A digest is a `BlobKey` (SofaFiles: `sha1-` + the 28-character padded base64 of 20 bytes, and
/// the name of its file in `<db>.sofa/Attachments/`); anything else is refused with
/// `.invalidParameter` naming the path.
///
/// Storage reads bodies here only for this: a revision that references a blob the store lacks is
/// refused, and compaction must know which blob files are still referenced.
public typealias BlobReference = BlobKey

extension BlobKey {
    /// Parses a digest found in a body at `path`; `.invalidParameter` naming the path otherwise.
    public static func parse(_ digest: String, path: String) throws(SofaError) -> BlobKey {
        guard let key = tryParse(digest) else {
            throw SofaError.invalid("invalid blob digest \(String(reflecting: digest)) at \(path): expected \"sha1-\" followed by the 28-character base64 of a SHA-1 digest")
        }
        return key
    }

    /// Every blob `body` references, with the first malformed digest refused.
    public static func find(in body: JSON) throws(SofaError) -> Set<BlobReference> {
        guard hasDigestKey(body) else { return [] }
        var found: Set<BlobReference> = []
        try collect(body, path: "", topLevel: true, into: &found)
        return found
    }

    /// Cheap pre-check on stored compact JSON: a body without the bytes `"digest"` references
    /// nothing, so it need not be parsed.
    static func mayReference(_ compactBody: [UInt8]) -> Bool {
        compactBody.withUnsafeBytes { body in
            guard let base = body.baseAddress else { return false }
            return digestNeedle.withUnsafeBytes { needle in memmem(base, body.count, needle.baseAddress!, needle.count) != nil }
        }
    }

    private static let digestNeedle: [UInt8] = Array("\"digest\"".utf8)

    /// Whether any object in `value` has a "digest" key: a body without one references nothing
    /// (the walk allocates nothing, unlike collecting with paths).
    static func hasDigestKey(_ value: JSON) -> Bool {
        switch value {
        case .object(let object):
            for (key, child) in object where key == "digest" || hasDigestKey(child) { return true }
            return false
        case .array(let array):
            return array.contains(where: hasDigestKey)
        default:
            return false
        }
    }

    /// The references of a stored body; a body that does not parse, or has a malformed digest,
    /// counts for what it validly references (compaction must not fail over one odd revision, and
    /// keeping a file is always safe).
    static func tolerantFind(inStored body: [UInt8]) -> Set<BlobReference> {
        guard mayReference(body), let json = JSON.tryParse(body) else { return [] }
        var found: Set<BlobReference> = []
        collectTolerant(json, topLevel: true, into: &found)
        return found
    }

    private static func collect(_ value: JSON, path: String, topLevel: Bool, into found: inout Set<BlobReference>) throws(SofaError) {
        switch value {
        case .object(let object):
            if object["@type"]?.stringValue == "blob", case .string(let digest)? = object["digest"] {
                found.insert(try parse(digest, path: path + ".digest"))
            }
            for (key, child) in object {
                let childPath = path.isEmpty ? key : "\(path).\(key)"
                if topLevel, key == "_attachments", case .object(let attachments) = child {
                    for (name, stub) in attachments {
                        if case .string(let digest)? = stub.objectValue?["digest"] {
                            found.insert(try parse(digest, path: "_attachments.\(name).digest"))
                        }
                    }
                }
                try collect(child, path: childPath, topLevel: false, into: &found)
            }
        case .array(let array):
            for (index, child) in array.enumerated() {
                try collect(child, path: "\(path)[\(index)]", topLevel: false, into: &found)
            }
        default:
            break
        }
    }

    private static func collectTolerant(_ value: JSON, topLevel: Bool, into found: inout Set<BlobReference>) {
        switch value {
        case .object(let object):
            if object["@type"]?.stringValue == "blob", let digest = object["digest"]?.stringValue,
               let reference = tryParse(digest) {
                found.insert(reference)
            }
            for (key, child) in object {
                if topLevel, key == "_attachments", case .object(let attachments) = child {
                    for (_, stub) in attachments {
                        if let digest = stub.objectValue?["digest"]?.stringValue, let reference = tryParse(digest) {
                            found.insert(reference)
                        }
                    }
                }
                collectTolerant(child, topLevel: false, into: &found)
            }
        case .array(let array):
            for child in array { collectTolerant(child, topLevel: false, into: &found) }
        default:
            break
        }
    }
}

extension DatabaseStore {
    /// `<db>.sofa/Attachments/`, shared with sofa-blob.
    var attachmentsDirectory: URL { StorageLayout.attachmentsDirectory(ofDatabaseDirectory: directory) }
}

extension Transaction {
    /// Checks a revision about to be written: its references must be well-formed and every blob
    /// must be in the store. Returns whether it references any (the hasAttachments flag), or the
    /// refusal — returned, not thrown, so only this write is refused and the batch goes on.
    func checkBlobReferences(_ body: JSON?, id: String) -> Result<Bool, SofaError> {
        guard let body else { return .success(false) }
        let references: Set<BlobReference>
        do throws(SofaError) {
            references = try BlobReference.find(in: body)
        } catch {
            return .failure(.invalid("document '\(id)': \(error.message)"))
        }
        guard !references.isEmpty else { return .success(false) }
        let folder = store.attachmentsDirectory
        for reference in references.sorted(by: { $0.base64 < $1.base64 }) {
            let path = folder.appendingPathComponent(reference.fileName).path
            guard FileManager.default.fileExists(atPath: path) else {
                return .failure(.notFound("document '\(id)' references blob \(reference) which is not in database '\(store.name)'; upload it first"))
            }
        }
        return .success(!references.isEmpty)
    }

    /// Every blob referenced by a revision still kept, in every collection: current bodies, the
    /// bodies kept in revision trees, and a version-vector document's conflicts.
    func referencedBlobs() throws(SofaError) -> Set<BlobReference> {
        var referenced: Set<BlobReference> = []
        for collection in store.liveCollections {
            var rows: [DocumentRow] = []
            try db.run("SELECT \(DocumentRow.columns) FROM \(collection.table)") { row throws(SofaError) in
                rows.append(try DocumentRow(row))
            }
            for row in rows where !row.isPurged {
                referenced.formUnion(BlobReference.tolerantFind(inStored: row.body))
                guard !row.extra.isEmpty else { continue }
                switch store.versioning {
                case .revisionTrees:
                    // Kept bodies live in the encoded tree; scanning the whole encoding for digest
                    // strings is not possible without decoding, so decode.
                    guard let tree = RevTree.tryDecode(row.extra, currentBody: row.body) else {
                        throw SofaError(.corruptRevisionData, "document '\(row.key)' has unreadable revisions; not deleting any blob")
                    }
                    for revision in tree.revisions {
                        if let body = revision.body { referenced.formUnion(BlobReference.tolerantFind(inStored: body)) }
                    }
                case .versionVectors:
                    guard let doc = try? VectorDocument(row: row) else {
                        throw SofaError(.corruptRevisionData, "document '\(row.key)' has unreadable conflicts; not deleting any blob")
                    }
                    for conflict in doc.conflicts {
                        referenced.formUnion(BlobReference.tolerantFind(inStored: conflict.body))
                    }
                }
            }
        }
        return referenced
    }
}

/// How storage asks sofa-blob, which alone deletes in `Attachments/`, to delete blobs of a
/// database (compaction). Called on the database's writer, which waits for the answer.
public typealias BlobDeleter = @Sendable (_ database: String, _ keys: [BlobKey]) -> Result<Void, SofaError>

/// How storage asks sofa-blob to delete every blob of a database it is deleting, with the
/// `Attachments/` folder. Called on storage's admin queue, which waits for the answer.
public typealias BlobDropper = @Sendable (_ database: String) -> Result<Void, SofaError>

extension DatabaseStore {
    /// Has sofa-blob delete every blob of `Attachments/` that no kept revision references,
    /// however recent (as LiteCore's compaction does: an upload whose document is not saved yet
    /// goes too, and saving that document afterwards is refused with `.notFound` — upload it
    /// again). The references are read in the writer's transaction and sofa-blob asked right
    /// after its COMMIT, still on the writer, which waits for the answer: no write can add a
    /// reference in between, and a transaction that fails (the revisions it pruned come back)
    /// deletes nothing. Crash-safe by construction: only unreferenced blobs are ever named;
    /// uploads in progress are temporary files, which are not compaction's business. If sofa-blob
    /// cannot be reached the blobs stay (logged), for the next compaction. Returns how many blobs
    /// it asks to delete.
    func removeUnreferencedBlobs(_ tx: Transaction) throws(SofaError) -> Int {
        guard let blobDeleter else { return 0 }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: attachmentsDirectory.path)
        } catch {
            return 0   // no Attachments folder: no blob was ever stored
        }
        let referenced = try tx.referencedBlobs()
        let unreferenced = names.compactMap(BlobReference.init(fileName:)).filter { !referenced.contains($0) }
        guard !unreferenced.isEmpty else { return 0 }
        let database = name
        tx.afterCommit.append {
            // In batches, so that no request grows with the store; the deleter logs a failure,
            // and the blobs it leaves go at the next compaction.
            var start = 0
            while start < unreferenced.count {
                let end = min(start + Self.blobDeletionBatch, unreferenced.count)
                guard case .success = blobDeleter(database, Array(unreferenced[start..<end])) else { return }
                start = end
            }
        }
        return unreferenced.count
    }

    static let blobDeletionBatch = 1000
}
