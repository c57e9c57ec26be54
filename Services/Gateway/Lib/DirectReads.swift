internal import SofaCore
internal import SofaWire
internal import SofaRows
internal import Foundation
internal import Synchronization

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
/// made by the same code as storage's (`SofaRows`). The files are read by `DocumentFiles`, which
/// sofa-http uses for its own gets too.
///
/// Gets that arrive together are read together. While the server takes up the messages waiting
/// on its socket (between `beginBatch` and `endBatch`), the gets are held; then each database's
/// are read in one read transaction, after one look at which file is open. Every get held was
/// received before that transaction began, so each still sees every write acknowledged before it
/// was sent. Measured on the gateway's thread with 64 gets in flight: the file check (a `stat`)
/// and SQLite's locking at the start and end of each read (`fcntl` on the file and its
/// shared-memory index) were a third of the thread's time per get.
final class DirectReads: Sendable {
    /// A get taken here: what it asks for, and where its answer goes (nil: to storage instead).
    struct Read: Sendable {
        let id: UInt64
        let database: String
        let get: DocumentFiles.Get
        let reply: @Sendable (EncodedMessage?) -> Void
    }

    /// The gets held while a batch is open.
    private struct Batch {
        var open = false
        var held: [Read] = []
    }

    private let files: DocumentFiles
    private let batch = Mutex(Batch())
    /// Gets held at most: past it they are read at once, and the batch goes on holding the next.
    static let maxHeld = 128

    init(dataDirectory: URL) {
        files = DocumentFiles(dataDirectory: dataDirectory, label: "sofa.gateway.direct-reads")
    }

    /// Takes `request` when it is a get read here, and answers it through `reply` (now, or when
    /// the open batch ends); `reply` gets nil when storage should answer after all. False when
    /// the request is not one read here (`reply` is then never called).
    func take(_ request: ForwardedRequest, reply: @escaping @Sendable (EncodedMessage?) -> Void) -> Bool {
        guard let get = request.documentGet ?? Self.decodedGet(request), !get.openLeaves,
              DocumentFiles.Get.isReadable(id: get.id, collection: get.collection) else { return false }
        let rev: DocumentVersion?
        if get.rev.isEmpty {
            rev = nil
        } else {
            guard let parsed = try? DocumentVersion.parse(ascii: get.rev) else { return false }
            rev = parsed
        }
        let read = Read(id: request.id, database: request.database, get: .init(document: get.id, rev: rev, history: get.history),
                        reply: reply)
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

    /// The get of a request that walking its fields did not read (`documentGet`), decoded whole.
    private static func decodedGet(_ request: ForwardedRequest) -> ForwardedRequest.DocumentGet? {
        guard request.operationField == OperationKind.getDocument.rawValue,
              let decoded = try? Request.decode(request.bytes(id: request.id, deadline: request.deadline)),
              case .getDocument(let id, let rev, let history, let openLeaves) = decoded.operation else { return nil }
        return .init(collection: decoded.collection, id: id, rev: rev, history: history, openLeaves: openLeaves)
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
        var answers = [EncodedMessage?](repeating: nil, count: reads.count)
        for (database, indices) in DocumentFiles.byDatabase(reads.map(\.database)) {
            _ = files.read(database, together: indices.count > 1) { reader in
                for index in indices {
                    switch reader.get(reads[index].get) {
                    case .success(let record)?: answers[index] = Response.ok(reads[index].id, .document(record.stored)).encodedMessage()
                    case .failure(let error)?: answers[index] = Response.failure(reads[index].id, error).encodedMessage()
                    case nil: break
                    }
                }
            }
        }
        return answers
    }

    /// Closes the file of `database` if it is open (it was deleted).
    func forget(_ database: String) {
        files.forget(database)
    }
}
