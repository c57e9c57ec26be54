internal import SofaCore
internal import SofaRows
internal import Foundation
internal import NIOCore

/// `GET /db/id` read by this process itself from the database file, when it can reach the data
/// directory (`SOFA_DATA_DIR`), as the gateway reads plain gets (`DocumentFiles`, the same code):
/// the request then crosses no ZeroMQ leg and wakes neither the gateway nor any other process.
/// Measured with wrk (16 connections) on 2 cores: the gateway's leg cost sofa-http 50–80 µs of
/// CPU per GET and the gateway as much again, about two thirds of the machine's work per GET.
///
/// The security object is read in the same read transaction as the document, so a change to it
/// applies to the next request, as at the gateway. Only what is decided without a user's roles is
/// answered here: a server admin (the admins file, as the gateway has it), a database whose
/// members are empty (CouchDB: open to everyone), or a user named among its members or admins.
/// Roles only widen access, so anything else (a refusal included, which the gateway words and
/// audits) goes to the gateway, as do `_users` and `_replicator` (whose documents the gateway
/// rewrites), local documents and whatever `DocumentFiles` leaves to storage.
final class HTTPReads: Sendable {
    private let files: DocumentFiles
    private let admins: Set<String>

    init(dataDirectory: URL, admins: Set<String>) {
        // A lane per event-loop thread and as many again: requests read at once do not wait.
        files = DocumentFiles(dataDirectory: dataDirectory, label: "sofa.http.reads", lanes: 2 * System.coreCount)
        self.admins = admins
    }

    /// A document asked for: revision `rev` (nil: the current one), with its history when
    /// `history`, as `user` (nil: nobody signed in) may read it.
    struct Wanted {
        var id: String
        var rev: String? = nil
        var history = false
        var user: String?
    }

    /// The document `id` of `database` (revision `rev`, nil: the current one), with its history
    /// when `history`, as `user` (nil: nobody signed in) may read it; nil when the gateway should
    /// answer. Not found is thrown as the gateway would answer it.
    func get(database: String, id: String, rev: String?, history: Bool, user: String?) throws(SofaError) -> StoredDocument? {
        try get(database: database, [Wanted(id: id, rev: rev, history: history, user: user)])[0]?.get()
    }

    /// The documents `wanted` of `database`, read in one read transaction with its security
    /// object: each a document, an error as the gateway would answer it (not found), or nil when
    /// the gateway should answer.
    func get(database: String, _ wanted: [Wanted]) -> [Result<StoredDocument, SofaError>?] {
        var answers = [Result<StoredDocument, SofaError>?](repeating: nil, count: wanted.count)
        guard !database.hasPrefix("_") else { return answers }
        let gets = wanted.map { item -> DocumentFiles.Get? in
            guard DocumentFiles.Get.isReadable(id: item.id, collection: "") else { return nil }
            var version: DocumentVersion?
            if let rev = item.rev {
                guard let parsed = try? DocumentVersion.parse(ascii: rev) else { return nil }
                version = parsed
            }
            return DocumentFiles.Get(document: item.id, rev: version, history: item.history)
        }
        guard gets.contains(where: { $0 != nil }) else { return answers }
        _ = files.read(database, together: true) { reader in
            guard let stored = reader.info(SecurityObject.storeKey) else { return }
            let security: SecurityObject
            if stored.isEmpty {
                security = .adminOnly
            } else {
                guard let json = JSON.tryParse(stored), let parsed = try? SecurityObject(json: json) else { return }
                security = parsed
            }
            for (index, get) in gets.enumerated() {
                guard let get else { continue }
                let principal = wanted[index].user.map { Principal(name: $0, roles: admins.contains($0) ? [Principal.adminRole] : []) }
                guard security.access(of: principal) >= .member else { continue }
                answers[index] = reader.get(get).map { $0.map(\.stored) }
            }
        }
        return answers
    }
}
