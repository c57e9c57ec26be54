public import SofaCore
internal import SofaQL
public import Foundation
internal import SofaFiles
internal import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

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
    /// An open database file: the connection, which file it is (a database deleted and made
    /// again is another file), and whether it keeps revision trees.
    private struct OpenFile {
        let path: String
        let connection: SQLiteConnection
        let device: UInt64
        let inode: UInt64
        let trees: Bool
        var lastUse: UInt64
    }

    private struct Files {
        var open: [String: OpenFile] = [:]
        var uses: UInt64 = 0
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
    /// Open files kept at most (the least recently used is closed first).
    public static let maxOpenFiles = 64
    /// The largest document (its stored revisions) read here. Larger ones go to storage: reading
    /// and encoding megabytes would hold up the reading thread, and storage's answers are paced.
    public static let maxRowBytes = 64 << 10
    /// How the files are opened: read-only, and only for this type's own statements (and the
    /// transaction around them).
    static let options = SQLiteConnection.Options(readOnly: true, queryOnly: true)

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
            if connection.inTransaction { files.open[database] = nil }
            return result
        }
    }

    /// Closes the file of `database` if it is open (it was deleted).
    public func forget(_ database: String) {
        for lane in lanes { lane.files.async { files in files.open[database] = nil } }
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

    /// The open connection to `database`'s file, opened when it is not, or when the file is no
    /// longer the one open (it was deleted, and maybe made again); nil when it cannot be read here.
    private static func connection(_ files: inout Files, _ database: String, in dataDirectory: URL,
                                   queue: DispatchQueue) -> SQLiteConnection? {
        files.uses += 1
        let known = files.open[database]
        let path: String
        if let known {
            path = known.path
        } else {
            guard (try? StorageLayout.validate(databaseName: database)) != nil else { return nil }
            path = StorageLayout.databaseFile(of: database, in: dataDirectory).path
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            files.open[database] = nil
            return nil
        }
        let device = UInt64(status.st_dev), inode = UInt64(status.st_ino)
        if let known, known.device == device, known.inode == inode {
            files.open[database]?.lastUse = files.uses
            return known.trees ? known.connection : nil
        }
        files.open[database] = nil
        if files.open.count >= maxOpenFiles, let oldest = files.open.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            files.open[oldest] = nil
        }
        guard let connection = try? SQLiteConnection(path: path, queue: queue, options: options) else { return nil }
        var versioning: Versioning?
        guard (try? connection.run("SELECT body FROM kv_info WHERE key = 'versioning'", row: { row in
            versioning = Versioning(rawValue: String(decoding: row.blob(0), as: UTF8.self))
        })) != nil, let versioning else { return nil }
        files.open[database] = OpenFile(path: path, connection: connection, device: device, inode: inode,
                                        trees: versioning == .revisionTrees, lastUse: files.uses)
        return versioning == .revisionTrees ? connection : nil
    }
}
