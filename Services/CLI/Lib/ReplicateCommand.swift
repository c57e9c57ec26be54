internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

/// `sofa replicate SOURCE TARGET`: starts a replication run by the cluster's sofa-replicator.
/// One-shot: waits until it has caught up and prints the final statuses (non-zero exit when it
/// failed); continuous: prints the started statuses and leaves it running.
struct Replicate: AsyncParsableCommand {
    enum Direction: String, EnumerableFlag { case push, pull, both }

    static let configuration = CommandConfiguration(
        abstract: "Replicate SOURCE to TARGET: a database name of this cluster, or tcp://host:port/db of another.",
        discussion: """
            The database that receives (TARGET; with --pull SOURCE, with --both either) must exist, \
            or --create-target creates it (with the versioning of the one that sends), as CouchDB's \
            create_target. A one-shot replication on a terminal shows its progress on stderr.
            """)
    @Argument(help: "The source database (\"db\" or \"tcp://host:port/db\").") var source: String
    @Argument(help: "The target database (\"db\" or \"tcp://host:port/db\").") var target: String
    @Flag(help: "Keep following the source's changes until stopped.") var continuous = false
    @Flag(help: "push: SOURCE → TARGET (default); pull: TARGET → SOURCE; both.") var direction: Direction = .push
    @Option(name: .customLong("doc-ids"), parsing: .upToNextOption, help: "Only these documents (space- or comma-separated).")
    var docIDs: [String] = []
    @Option(help: "Only documents matching this query WHERE expression.") var filter: String = ""
    @Option(help: "auto (resolve deterministically, the default), manual (leave conflicts, this side's revision current) or couchdb (leave them, CouchDB's choice of the current revision).")
    var conflicts: String = "auto"
    @Option(help: "Replicate this collection (\"scope.collection\"), the same on both sides.") var collection: String = ""
    @Flag(name: .customLong("no-wait"), help: "One-shot: return at once instead of waiting for the end.") var noWait = false
    @Option(name: .customLong("wait-seconds"), help: "One-shot: give up waiting after this many seconds.") var waitSeconds: Int = 3600
    @Flag(name: .customLong("create-target"), help: "Create the receiving database when it does not exist.") var createTarget = false
    @Option(name: .customLong("remote-server-key"),
            help: "The other cluster's public key, when it has its own: the replication reaches it as --remote-user.")
    var remoteServerKey: String?
    @Option(name: .customLong("remote-user"), help: "The user the replication is on the other cluster.") var remoteUser: String?
    @Option(name: .customLong("remote-password"),
            help: "That user's password (else SOFA_REMOTE_PASSWORD); stored with the replication, never shown.")
    var remotePassword: String?
    @OptionGroup var options: GatewayOptions

    /// How the side on another cluster is reached, when it has a key of its own.
    func remoteAccess() throws(SofaError) -> RemoteAccess? {
        guard let remoteServerKey else {
            if remoteUser != nil { throw SofaError(.invalidParameter, "--remote-user needs --remote-server-key") }
            return nil
        }
        guard let remoteUser, let password = remotePassword ?? ProcessInfo.processInfo.environment["SOFA_REMOTE_PASSWORD"] else {
            throw SofaError(.invalidParameter, "--remote-server-key needs --remote-user and --remote-password (or SOFA_REMOTE_PASSWORD)")
        }
        return RemoteAccess(serverKey: remoteServerKey, user: remoteUser, password: password)
    }

    func run() async throws {
        try await reporting {
            let access = try remoteAccess()
            let client = try await options.connect()
            defer { client.close() }
            let policy = try ConflictPolicy.parse(conflicts)
            let ids = docIDs.flatMap { $0.split(separator: ",").map(String.init) }.filter { !$0.isEmpty }
            let sides = try ReplicationSides(source: source, target: target, direction: direction)
            // With its own key, the other cluster's database is the replicator's to find and use.
            let sending = access == nil ? try await sides.prepareReceiving(create: createTarget, client: client, options: options) : nil
            let handle = try await client.replicate(
                from: source, to: target, direction: ReplicationDirection(rawValue: direction.rawValue) ?? .push,
                mode: continuous ? .continuous : .oneShot, filter: ReplicationFilter(docIDs: ids, expression: filter),
                conflicts: policy, collection: collection,
                sourceAccess: sides.source.gateway == nil ? nil : access, targetAccess: sides.target.gateway == nil ? nil : access)
            guard !continuous && !noWait else {
                printJSON(.array(handle.initial.map(replicationJSON)))
                return
            }
            let progress = ReplicationProgress(total: direction == .push ? sending?.documentCount : nil)
            let final = try await progress.line.around {
                try await handle.wait(timeout: .seconds(waitSeconds)) { status in
                    progress.update(status)
                    return status.state.isFinal
                }
            }
            printJSON(.array(final.map(replicationJSON)))
            if let failed = final.first(where: { $0.state != .completed }) {
                throw SofaError(.unexpectedError, "replication \(failed.id) \(failed.state.rawValue): \(failed.lastError)")
            }
        }
    }
}

/// `sofa replications`: every replication of the cluster with its status; `--stop ID` stops one.
struct Replications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List replications with their status, or stop one.")
    @Option(help: "Stop this replication.") var stop: String?
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            if let stop {
                try await client.stopReplication(stop)
                printJSON(replicationJSON(try await client.replicationStatus(stop)))
                return
            }
            printJSON(.array(try await client.replications().map(replicationJSON)))
        }
    }
}

func replicationJSON(_ status: ReplicationStatus) -> JSON {
    var object = JSONObject([
        ("id", .string(status.id)), ("source", .string(status.source)), ("target", .string(status.target)),
        ("continuous", .bool(status.continuous)), ("state", .string(status.state.rawValue)),
        ("docs_checked", .int(Int64(clamping: status.docsChecked))), ("docs_written", .int(Int64(clamping: status.docsWritten))),
        ("revisions_sent", .int(Int64(clamping: status.revisionsSent))),
        ("doc_write_failures", .int(Int64(clamping: status.docWriteFailures))),
        ("conflicts_resolved", .int(Int64(clamping: status.conflictsResolved))),
        ("blobs_transferred", .int(Int64(clamping: status.blobsTransferred))),
        ("checkpoint", .int(Int64(clamping: status.checkpoint))), ("conflicts", .string(status.conflicts.rawValue)),
    ])
    if !status.docIDs.isEmpty { object["doc_ids"] = .array(status.docIDs.map(JSON.string)) }
    if !status.filter.isEmpty { object["filter"] = .string(status.filter) }
    if !status.collection.isEmpty { object["collection"] = .string(status.collection) }
    if !status.lastError.isEmpty { object["last_error"] = .string(status.lastError) }
    return .object(object)
}
