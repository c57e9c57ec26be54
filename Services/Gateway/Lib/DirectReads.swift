internal import SofaCore
internal import SofaWire
internal import SofaQL
internal import SofaRows
internal import SofaFiles
internal import Foundation
#if canImport(Glibc)
internal import Glibc
#endif

/// Plain document gets answered by the gateway itself, from the database file on a read-only
/// connection (as query workers read it), on the thread that received the request: a get then
/// crosses one ZeroMQ leg instead of two and wakes no other thread or process (measured: the
/// storage leg was half of a get's round trip). Storage stays the only writer, and a write it
/// has acknowledged is committed, so a read that starts after it sees it.
///
/// Only the common case is taken: a get of the current or a given revision (with or without its
/// history) of a document of at most 64 KiB in the default collection of a revision-tree database, when the data
/// directory is reachable (`SOFA_DATA_DIR` given). Anything else (local documents, other
/// collections, version vectors, a database that does not exist or is being made, any error but
/// "not found") goes on to storage, which answers as it always did; answers found here are
/// made by the same code as storage's (`SofaRows`).
final class DirectReads: Sendable {
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

    private let dataDirectory: URL
    private let files: Confined<Files>
    /// Open files kept at most (the least recently used is closed first).
    static let maxOpenFiles = 64
    /// The largest document (its stored revisions) read here. Larger ones go to storage: reading
    /// and encoding megabytes would hold up this thread, which every client's requests cross, and
    /// storage's answers are paced by the gateway's fair forwarding and reply budgets.
    static let maxRowBytes = 64 << 10

    init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
        files = Confined(Files(), label: "sofa.gateway.direct-reads")
    }

    /// The answer to `request` read here, or nil when storage should answer it. Runs on the
    /// calling thread (a serial queue's `sync` with no one else queued runs in place).
    func answer(_ request: ForwardedRequest) -> EncodedMessage? {
        guard request.operationField == OperationKind.getDocument.rawValue,
              let decoded = try? Request.decode(request.bytes(id: request.id, deadline: request.deadline)),
              case .getDocument(let id, let revText, let history, false) = decoded.operation,
              !LocalDocuments.isLocal(id), decoded.collection.isEmpty || (try? CollectionName(parsing: decoded.collection)) == .default,
              DocumentID.isValid(id) else { return nil }
        let rev: DocumentVersion?
        if revText.isEmpty {
            rev = nil
        } else {
            guard let parsed = try? DocumentVersion.parse(ascii: revText) else { return nil }
            rev = parsed
        }
        let (queue, dataDirectory) = (files.queue, dataDirectory)
        let outcome: Result<DocumentRecord, SofaError>? = files.sync { files in
            guard let connection = Self.connection(&files, decoded.database, in: dataDirectory, queue: queue) else { return nil }
            do throws(SofaError) {
                let table = CollectionName.default.table
                guard let row = try Self.smallRow(connection, table: table, id: id) else {
                    // Large, or not there: a large one goes to storage (its reply is paced there).
                    return try Self.exists(connection, table: table, id: id) ? nil : .failure(DocumentRow.notFound(id))
                }
                guard let tree = try row.revisionTree() else { return .failure(DocumentRow.notFound(id)) }
                return .success(try row.record(id: id, tree: tree, rev: rev, history: history))
            } catch where error.is(.notFound) {
                return .failure(error)
            } catch {
                return nil
            }
        }
        switch outcome {
        case .success(let record)?: return Response.ok(request.id, .document(record.stored)).encodedMessage()
        case .failure(let error)?: return Response.failure(request.id, error).encodedMessage()
        case nil: return nil
        }
    }

    /// The row of `id` when its stored revisions take at most `maxRowBytes` (SQLite reads a
    /// blob's length without its content); nil when there is none, or it is larger.
    private static func smallRow(_ db: SQLiteConnection, table: String, id: String) throws(SofaError) -> DocumentRow? {
        var result: DocumentRow?
        try db.run(Statement.smallRow, { "SELECT \(DocumentRow.columns) FROM \(table) WHERE key = ?1 "
                                         + "AND length(body) + length(extra) <= ?2" },
                   [.text(id), .integer(Int64(maxRowBytes))]) { row throws(SofaError) in
            result = try DocumentRow(row)
        }
        return result
    }

    private static func exists(_ db: SQLiteConnection, table: String, id: String) throws(SofaError) -> Bool {
        var found = false
        try db.run(Statement.exists, { "SELECT 1 FROM \(table) WHERE key = ?" }, [.text(id)]) { _ in found = true }
        return found
    }

    private enum Statement: Hashable, Sendable { case smallRow, exists }

    /// Closes the file of `database` if it is open (it was deleted).
    func forget(_ database: String) {
        files.async { files in files.open[database] = nil }
    }

    /// The open connection to `database`'s file, opened when it is not, or when the file is no
    /// longer the one open (it was deleted, and maybe made again); nil when it cannot be read here
    /// (no such file, not a revision-tree database, or not readable yet).
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
        guard let connection = try? SQLiteConnection(path: path, queue: queue, options: .queryWorker) else { return nil }
        var versioning: Versioning?
        guard (try? connection.run("SELECT body FROM kv_info WHERE key = 'versioning'", row: { row in
            versioning = Versioning(rawValue: String(decoding: row.blob(0), as: UTF8.self))
        })) != nil, let versioning else { return nil }
        files.open[database] = OpenFile(path: path, connection: connection, device: device, inode: inode,
                                        trees: versioning == .revisionTrees, lastUse: files.uses)
        return versioning == .revisionTrees ? connection : nil
    }
}
