public import SofaCore
internal import SofaQL
public import Foundation
internal import SofaFiles
internal import Synchronization

/// Database files read beside storage, on read-only connections (as query workers read them):
/// plain document gets, and the raw entries of a database's `info` store (its security object).
/// Used by the gateway and by sofa-http, each of which answers the common get itself instead of
/// sending it on; storage stays the only writer, and a write it has acknowledged is committed,
/// so a read that starts after it sees it.
///
/// Only the common case is read: the current or a given revision (with or without its history)
/// of a document of at most `maxRowBytes` in the default collection of a revision-tree
/// database. Anything else (a database that does not exist or is being made, a version-vector
/// database, a large document, any error but "not found") is nil: the caller sends the request
/// on to storage, which answers as it always did. Answers found here are made by the same code as
/// storage's (`DocumentRow`).
public final class DocumentFiles: Sendable {
    /// A lane's open files (`ReadConnections`: one per database, reopened when the file is
    /// another, at most 64), and whether each keeps revision trees (read when it is opened).
    private struct Files {
        var reads = ReadConnections(options: DocumentFiles.options)
        var trees: [String: Bool] = [:]
    }

    /// A get: which document, which revision (nil: the current one), with its history or not.
    public struct Get: Sendable {
        public let document: String
        public let rev: DocumentVersion?
        public let history: Bool

        public init(document: String, rev: DocumentVersion?, history: Bool) {
            self.document = document
            self.rev = rev
            self.history = history
        }

        /// Whether a get of `id` in `collection` ("" or `_default`) can be read here at all.
        public static func isReadable(id: String, collection: String) -> Bool {
            !LocalDocuments.isLocal(id) && DocumentID.isValid(id)
                && (collection.isEmpty || (try? CollectionName(parsing: collection)) == .default)
        }
    }

    /// One database's file while it is being read (inside `read`).
    public struct Reader {
        let connection: SQLiteConnection

        /// The answer to `get`: the document or not found; nil when storage should answer it.
        public func get(_ get: Get) -> Result<DocumentRecord, SofaError>? {
            do throws(SofaError) {
                let table = CollectionName.default.table
                if let row = try DocumentFiles.smallRow(connection, table: table, id: get.document) {
                    if get.rev == nil, !get.history, let record = row.currentRecord(id: get.document) { return .success(record) }
                    guard let tree = try row.revisionTree() else { return .failure(DocumentRow.notFound(get.document)) }
                    return .success(try row.record(id: get.document, tree: tree, rev: get.rev, history: get.history))
                }
                // Large, or not there: a large one goes to storage (its reply is paced there).
                return try DocumentFiles.exists(connection, table: table, id: get.document)
                    ? nil : .failure(DocumentRow.notFound(get.document))
            } catch where error.is(.notFound) {
                return .failure(error)
            } catch {
                return nil
            }
        }

        /// The body of `key` in the database's `info` store (empty: there is none); nil when it
        /// cannot be read.
        public func info(_ key: String) -> [UInt8]? {
            var body: [UInt8] = []
            do {
                try connection.run(Statement.info, { "SELECT body FROM \(CollectionName.table(forKeyStore: "info")) WHERE key = ?" },
                                   [.text(key)]) { row in body = row.blob(0) }
            } catch {
                return nil
            }
            return body
        }
    }

    /// One set of open files on its own queue: a reader takes a lane no other is using, so
    /// threads reading at once neither wait for each other nor wake each other.
    private final class Lane: Sendable {
        let files: Confined<Files>
        let busy = Atomic<Bool>(false)

        init(label: String) { files = Confined(Files(), label: label) }
    }

    private let dataDirectory: URL
    private let lanes: [Lane]
    private let nextLane = Atomic<UInt>(0)
    /// The largest document (its stored revisions) read here. Larger ones go to storage: reading
    /// and encoding megabytes would hold up the reading thread, and storage's answers are paced.
    public static let maxRowBytes = 64 << 10
    /// How the files are opened: read-only, and only for this type's own statements (and the
    /// transaction around them). A file locked by another connection is waited for at most
    /// `busyTimeoutMs`, then left to storage: the readers' threads (the gateway's socket thread,
    /// sofa-http's event loops) serve every other client meanwhile, and must not wait SQLite's
    /// usual seconds for one file.
    static let options = SQLiteConnection.Options(readOnly: true, queryOnly: true, busyTimeoutMs: busyTimeoutMs)
    public static let busyTimeoutMs: Int32 = 50

    /// `lanes`: how many threads may read at once without waiting (each lane keeps its own
    /// connections; a thread finding every lane taken waits for one).
    public init(dataDirectory: URL, label: String, lanes: Int = 1) {
        self.dataDirectory = dataDirectory
        self.lanes = (0..<max(1, lanes)).map { Lane(label: "\(label).\($0)") }
    }

    /// Runs `body` on `database`'s file (in one read transaction when `together`); nil when the
    /// file cannot be read here (no such file, not a revision-tree database, not readable yet).
    public func read<T>(_ database: String, together: Bool, _ body: (Reader) -> T) -> T? {
        let start = Int(nextLane.add(1, ordering: .relaxed).oldValue % UInt(lanes.count))
        var lane = lanes[start], taken = false
        for offset in 0..<lanes.count {
            let candidate = lanes[(start + offset) % lanes.count]
            if candidate.busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
                (lane, taken) = (candidate, true)
                break
            }
        }
        defer { if taken { lane.busy.store(false, ordering: .releasing) } }
        let (files, dataDirectory) = (lane.files, dataDirectory)
        let queue = files.queue
        return files.sync { files -> T? in
            guard let connection = Self.connection(&files, database, in: dataDirectory, queue: queue) else { return nil }
            let begun = together && (try? connection.run(Statement.begin, { "BEGIN" }, [])) != nil
            let result = body(Reader(connection: connection))
            if begun && (try? connection.run(Statement.commit, { "COMMIT" }, [])) == nil {
                try? connection.execute("ROLLBACK")
            }
            // A transaction left open would hold every later read to its snapshot: the
            // connection is closed instead (the next read opens a new one).
            if connection.inTransaction { files.reads.forget(database) }
            return result
        }
    }

    /// The positions of `databases`' items grouped by database, databases in the order they first
    /// appear: reads that arrived together, each database's to be read in one `read`.
    public static func byDatabase(_ databases: [String]) -> [(database: String, indices: [Int])] {
        var groups: [(database: String, indices: [Int])] = []
        var position: [String: Int] = [:]
        for (index, database) in databases.enumerated() {
            if let at = position[database] {
                groups[at].indices.append(index)
            } else {
                position[database] = groups.count
                groups.append((database, [index]))
            }
        }
        return groups
    }

    /// Closes the file of `database` if it is open (it was deleted).
    public func forget(_ database: String) {
        for lane in lanes { lane.files.async { files in files.reads.forget(database) } }
    }

    /// The row of `id` when its stored revisions take at most `maxRowBytes` (SQLite reads a
    /// blob's length without its content); nil when there is none, or it is larger.
    fileprivate static func smallRow(_ db: SQLiteConnection, table: String, id: String) throws(SofaError) -> DocumentRow? {
        var result: DocumentRow?
        try db.run(Statement.smallRow, { "SELECT \(DocumentRow.columns) FROM \(table) WHERE key = ?1 "
                                         + "AND length(body) + length(extra) <= ?2" },
                   [.text(id), .integer(Int64(maxRowBytes))]) { row throws(SofaError) in
            result = try DocumentRow(row)
        }
        return result
    }

    fileprivate static func exists(_ db: SQLiteConnection, table: String, id: String) throws(SofaError) -> Bool {
        var found = false
        try db.run(Statement.exists, { "SELECT 1 FROM \(table) WHERE key = ?" }, [.text(id)]) { _ in found = true }
        return found
    }

    fileprivate enum Statement: Hashable, Sendable { case smallRow, exists, info, begin, commit }

    /// The open connection to `database`'s file (see `ReadConnections`) when it keeps revision
    /// trees; nil when it cannot be read here (no such file, another versioning, not readable yet).
    private static func connection(_ files: inout Files, _ database: String, in dataDirectory: URL,
                                   queue: DispatchQueue) -> SQLiteConnection? {
        guard let (connection, opened) = try? files.reads.connection(database, in: dataDirectory, queue: queue) else {
            files.trees[database] = nil
            return nil
        }
        if !opened, let trees = files.trees[database] { return trees ? connection : nil }
        var versioning: Versioning?
        guard (try? connection.run("SELECT body FROM kv_info WHERE key = 'versioning'", row: { row in
            versioning = Versioning(rawValue: String(decoding: row.blob(0), as: UTF8.self))
        })) != nil, let versioning else {
            files.reads.forget(database)  // not readable yet: looked at again next time
            return nil
        }
        // What is known of files closed to make room is forgotten with them.
        if files.trees.count >= files.reads.maxOpen {
            let reads = files.reads
            files.trees = files.trees.filter { reads.isOpen($0.key) }
        }
        files.trees[database] = versioning == .revisionTrees
        return versioning == .revisionTrees ? connection : nil
    }
}
