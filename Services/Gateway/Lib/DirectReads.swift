internal import SofaCore
internal import SofaWire
internal import SofaQL
internal import SofaRows
internal import SofaFiles
internal import Foundation
internal import Synchronization
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
///
/// Gets that arrive together are read together. While the server takes up the messages waiting
/// on its socket (between `beginBatch` and `endBatch`), the gets are held; then each database's
/// are read in one read transaction, after one look at which file is open. Every get held was
/// received before that transaction began, so each still sees every write acknowledged before it
/// was sent. Measured on the gateway's thread with 64 gets in flight: the file check (a `stat`)
/// and SQLite's locking at the start and end of each read (`fcntl` on the file and its
/// shared-memory index) were a third of the thread's time per get.
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

    /// A get taken here: what it asks for, and where its answer goes (nil: to storage instead).
    struct Read: Sendable {
        let id: UInt64
        let database: String
        let document: String
        let rev: DocumentVersion?
        let history: Bool
        let reply: @Sendable (EncodedMessage?) -> Void
    }

    /// The gets held while a batch is open.
    private struct Batch {
        var open = false
        var held: [Read] = []
    }

    private let dataDirectory: URL
    private let files: Confined<Files>
    private let batch = Mutex(Batch())
    /// Open files kept at most (the least recently used is closed first).
    static let maxOpenFiles = 64
    /// The largest document (its stored revisions) read here. Larger ones go to storage: reading
    /// and encoding megabytes would hold up this thread, which every client's requests cross, and
    /// storage's answers are paced by the gateway's fair forwarding and reply budgets.
    static let maxRowBytes = 64 << 10
    /// Gets held at most: past it they are read at once, and the batch goes on holding the next.
    static let maxHeld = 128
    /// How the files are opened: read-only, and only for this type's own statements (and the
    /// transaction around them).
    static let options = SQLiteConnection.Options(readOnly: true, queryOnly: true)

    init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
        files = Confined(Files(), label: "sofa.gateway.direct-reads")
    }

    /// Takes `request` when it is a get read here, and answers it through `reply` (now, or when
    /// the open batch ends); `reply` gets nil when storage should answer after all. False when
    /// the request is not one read here (`reply` is then never called).
    func take(_ request: ForwardedRequest, reply: @escaping @Sendable (EncodedMessage?) -> Void) -> Bool {
        guard request.operationField == OperationKind.getDocument.rawValue,
              let decoded = try? Request.decode(request.bytes(id: request.id, deadline: request.deadline)),
              case .getDocument(let id, let revText, let history, false) = decoded.operation,
              !LocalDocuments.isLocal(id), decoded.collection.isEmpty || (try? CollectionName(parsing: decoded.collection)) == .default,
              DocumentID.isValid(id) else { return false }
        let rev: DocumentVersion?
        if revText.isEmpty {
            rev = nil
        } else {
            guard let parsed = try? DocumentVersion.parse(ascii: revText) else { return false }
            rev = parsed
        }
        let read = Read(id: request.id, database: decoded.database, document: id, rev: rev, history: history, reply: reply)
        let (held, full) = batch.withLock { batch -> (Bool, Bool) in
            guard batch.open else { return (false, false) }
            batch.held.append(read)
            return (true, batch.held.count >= Self.maxHeld)
        }
        if !held {
            deliver([read], answer([read]))
        } else if full {
            readHeld(closing: false)
        }
        return true
    }

    /// The server starts taking up the messages waiting on its socket: gets are held from now.
    func beginBatch() {
        batch.withLock { $0.open = true }
    }

    /// It has taken them all up: the gets held are read, with any that answering them let go on
    /// (a client's next requests, waiting their turn), and the batch ends.
    func endBatch() {
        readHeld(closing: true)
    }

    /// Reads the gets held until none are left; with `closing`, ends the batch then (in the same
    /// step as finding none left, so a get taken meanwhile is read here too, not stranded).
    private func readHeld(closing: Bool) {
        while true {
            let reads = batch.withLock { batch -> [Read] in
                let reads = batch.held
                batch.held.removeAll(keepingCapacity: true)
                if reads.isEmpty && closing { batch.open = false }
                return reads
            }
            if reads.isEmpty { return }
            deliver(reads, answer(reads))
        }
    }

    /// Hands each read its answer, outside the files' queue: a reply may start the next request
    /// of its client, which may be a get taken here.
    private func deliver(_ reads: [Read], _ answers: [EncodedMessage?]) {
        for (read, answer) in zip(reads, answers) { read.reply(answer) }
    }

    /// The answers to `reads` (nil for one storage should answer), each database's read in one
    /// read transaction.
    private func answer(_ reads: [Read]) -> [EncodedMessage?] {
        let (queue, dataDirectory) = (files.queue, dataDirectory)
        return files.sync { files in
            var answers = [EncodedMessage?](repeating: nil, count: reads.count)
            var databases: [String: [Int]] = [:]
            var order: [String] = []
            for (index, read) in reads.enumerated() {
                if databases[read.database] == nil { order.append(read.database) }
                databases[read.database, default: []].append(index)
            }
            for database in order {
                let indices = databases[database]!
                guard let connection = Self.connection(&files, database, in: dataDirectory, queue: queue) else { continue }
                let together = indices.count > 1 && (try? connection.run(Statement.begin, { "BEGIN" }, [])) != nil
                for index in indices { answers[index] = Self.answer(reads[index], connection) }
                if together && (try? connection.run(Statement.commit, { "COMMIT" }, [])) == nil {
                    try? connection.execute("ROLLBACK")
                }
                // A transaction left open would hold every later read to its snapshot: the
                // connection is closed instead (the next read opens a new one).
                if connection.inTransaction { files.open[database] = nil }
            }
            return answers
        }
    }

    /// The answer to `read` from `connection`, or nil when storage should answer it.
    private static func answer(_ read: Read, _ connection: SQLiteConnection) -> EncodedMessage? {
        let outcome: Result<DocumentRecord, SofaError>?
        do throws(SofaError) {
            let table = CollectionName.default.table
            if let row = try smallRow(connection, table: table, id: read.document) {
                if let tree = try row.revisionTree() {
                    outcome = .success(try row.record(id: read.document, tree: tree, rev: read.rev, history: read.history))
                } else {
                    outcome = .failure(DocumentRow.notFound(read.document))
                }
            } else {
                // Large, or not there: a large one goes to storage (its reply is paced there).
                outcome = try exists(connection, table: table, id: read.document) ? nil : .failure(DocumentRow.notFound(read.document))
            }
        } catch where error.is(.notFound) {
            outcome = .failure(error)
        } catch {
            outcome = nil
        }
        switch outcome {
        case .success(let record)?: return Response.ok(read.id, .document(record.stored)).encodedMessage()
        case .failure(let error)?: return Response.failure(read.id, error).encodedMessage()
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

    private enum Statement: Hashable, Sendable { case smallRow, exists, begin, commit }

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
