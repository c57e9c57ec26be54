public import SofaCore
public import SofaWire
internal import Foundation

/// A named snapshot of a package, as listed.
public struct SnapshotInfo: Sendable, Equatable {
    public var name: String
    /// ISO 8601.
    public var createdAt: String
    public var objectCount: Int
}

/// Snapshots, in the package's snapshot database:
/// * a copy of each document revision snapshotted, immutable, `copy:<database>:<id>:<rev>` —
///   written once however many snapshots hold that revision;
/// * each attachment (a `digest` the copy references) stored there once per distinct digest:
///   one already there is not copied again;
/// * a record per snapshot, `snapshot:<name>`: its time and, per database, each document's
///   revision.
/// Restoring writes every object back to its snapshotted state as new revisions (so the restore
/// replicates and controllers announce it) and deletes the objects created since.
extension Package {
    static func recordID(_ name: String) -> String { "snapshot:" + name }
    static func copyID(_ member: String, _ id: String, _ rev: String) -> String { "copy:\(member):\(id):\(rev)" }

    /// Takes a snapshot of every document of every database of the package.
    @discardableResult
    public func takeSnapshot(_ snapshotName: String) async throws(SofaError) -> SnapshotInfo {
        guard !snapshotName.isEmpty else { throw SofaError(.invalidParameter, "a snapshot needs a name") }
        let store = snapshots
        var stored = Set<String>()
        var databases = JSONObject()
        var count = 0
        for member in try await databaseNames() {
            let db = database(member)
            var revisions = JSONObject()
            let documents = try await db.allDocs(includeBodies: true).filter { !$0.id.hasPrefix("_design/") && !$0.deleted }
            var copies: [BulkItem] = []
            for document in documents {
                revisions[document.id] = .string(document.rev)
                for key in Self.digests(in: document.body) where !stored.contains(key) {
                    try await Self.copyBlob(key, from: db, to: store)
                    stored.insert(key)
                }
                copies.append(.put(id: Self.copyID(member, document.id, document.rev), rev: "", body: document.body, deleted: false))
            }
            // A copy already there (an earlier snapshot of the same revision) answers a conflict: kept.
            for result in try await Self.write(copies, to: store) where result.error.map({ !$0.is(.conflict) }) ?? false {
                throw SofaError(.unexpectedError, "snapshot \(snapshotName): \(result.id): \(result.error!.message)")
            }
            count += documents.count
            databases[member] = .object(revisions)
        }
        let info = SnapshotInfo(name: snapshotName, createdAt: Date().ISO8601Format(), objectCount: count)
        let record: JSON = ["name": .string(snapshotName), "createdAt": .string(info.createdAt),
                            "objectCount": .int(Int64(count)), "databases": .object(databases)]
        do {
            _ = try await store.put(id: Self.recordID(snapshotName), body: record.compactBytes())
        } catch {
            throw error.is(.conflict) ? SofaError(.conflict, "package \(name) already has a snapshot '\(snapshotName)'") : error
        }
        return info
    }

    /// The package's snapshots, oldest first.
    public func listSnapshots() async throws(SofaError) -> [SnapshotInfo] {
        let records = try await snapshots.allDocs(startKey: "snapshot:", endKey: "snapshot:\u{10FFFF}", includeBodies: true)
        return records.compactMap { document -> SnapshotInfo? in
            guard !document.deleted, let body = try? document.json() else { return nil }
            return SnapshotInfo(name: body["name"]?.stringValue ?? "", createdAt: body["createdAt"]?.stringValue ?? "",
                                objectCount: Int(body["objectCount"]?.intValue ?? 0))
        }.sorted { ($0.createdAt, $0.name) < ($1.createdAt, $1.name) }
    }

    /// Brings every database of the snapshot back to its state: changed and deleted documents
    /// written back as new revisions, documents created since deleted. Answers how many
    /// documents were written and deleted.
    @discardableResult
    public func restoreSnapshot(_ snapshotName: String) async throws(SofaError) -> (written: Int, deleted: Int) {
        let store = snapshots
        let record: JSON
        do { record = try await store.get(id: Self.recordID(snapshotName)).json() } catch {
            throw error.is(.notFound) ? SofaError(.notFound, "package \(name) has no snapshot '\(snapshotName)'") : error
        }
        var written = 0, deleted = 0
        for (member, revisions) in record["databases"]?.objectValue ?? [:] {
            let db = database(member)
            let wanted = (revisions.objectValue ?? [:]).reduce(into: [String: String]()) { $0[$1.key] = $1.value.stringValue ?? "" }
            let current = try await db.allDocs(includeDeleted: true).filter { !$0.id.hasPrefix("_design/") }
            let prefix = "copy:\(member):"
            let copies = Dictionary(try await store.allDocs(startKey: prefix, endKey: prefix + "\u{10FFFF}", includeBodies: true)
                .map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var present = Set<String>()
            let currentByID = Dictionary(current.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var items: [BulkItem] = []
            for document in current where !document.deleted && wanted[document.id] == nil {
                items.append(.put(id: document.id, rev: document.rev, body: [], deleted: true))
                deleted += 1
            }
            for (id, rev) in wanted.sorted(by: { $0.key < $1.key }) {
                let now = currentByID[id]
                if let now, !now.deleted, now.rev == rev { continue }
                guard let copy = copies[Self.copyID(member, id, rev)] else {
                    throw SofaError(.corruptData, "snapshot \(snapshotName) lacks its copy of \(member)/\(id) \(rev)")
                }
                for key in Self.digests(in: copy.body) where !present.contains(key) {
                    try await Self.copyBlob(key, from: store, to: db)
                    present.insert(key)
                }
                items.append(.put(id: id, rev: now?.rev ?? "", body: copy.body, deleted: false))
                written += 1
            }
            for result in try await Self.write(items, to: db) {
                if let error = result.error { throw SofaError(error.domain, error.code, "restoring \(member)/\(result.id): \(error.message)") }
            }
        }
        return (written, deleted)
    }

    /// Writes in bulks of 500, four at a time; the results in the items' order.
    public static func write(_ items: [BulkItem], to db: Database) async throws(SofaError) -> [BulkItemResult] {
        let slices = stride(from: 0, to: items.count, by: 500).map { Array(items[$0..<min($0 + 500, items.count)]) }
        var results = [[BulkItemResult]](repeating: [], count: slices.count)
        do {
            try await withThrowingTaskGroup(of: [(Int, [BulkItemResult])].self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var done: [(Int, [BulkItemResult])] = []
                        for index in stride(from: lane, to: slices.count, by: 4) { done.append((index, try await db.bulk(slices[index]))) }
                        return done
                    }
                }
                for try await done in group {
                    for (index, written) in done { results[index] = written }
                }
            }
        } catch {
            throw (error as? SofaError) ?? SofaError(.unexpectedError, "\(error)")
        }
        return results.flatMap { $0 }
    }

    /// The blob keys a body references (objects with a `digest`, at any depth).
    static func digests(in body: [UInt8]) -> [String] {
        guard !body.isEmpty, let json = JSON.tryParse(body) else { return [] }
        var found: [String] = []
        func walk(_ value: JSON) {
            switch value {
            case .object(let members):
                if let digest = members["digest"]?.stringValue { found.append(digest) }
                for (_, member) in members { walk(member) }
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(json)
        return found
    }

    /// Streams one blob from a database's store to another's.
    static func copyBlob(_ key: String, from source: Database, to target: Database) async throws(SofaError) {
        if (try? await target.blobInfo(key)) != nil { return }
        _ = try await target.putBlob(source.blobChunks(key), expectedKey: key)
    }
}
