internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

/// `sofa changes`: one batch of the feed; with `--follow`, the live feed: one JSON line per
/// change as it is committed, until interrupted.
struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the changes feed: {\"results\":[{\"seq\",\"id\",\"changes\":[{\"rev\"}],…}],\"last_seq\"}.")
    @Argument var db: String
    @Option(help: "Only changes after this sequence; now: after the collection's last one (with --follow, the changes to come).")
    var since: String = "0"
    @Option(help: "At most this many (0 = all).") var limit: Int = 0
    @Flag(help: "Newest first.") var descending = false
    @Flag(help: "Include each document's body as \"doc\".") var bodies = false
    @Flag(name: .customLong("all-leaves"), help: "List every open leaf in \"changes\".") var allLeaves = false
    @Flag(name: .customLong("no-deleted"), help: "Leave deleted documents out.") var noDeleted = false
    @Option(name: .customLong("doc-id"), help: "Only this document (repeatable).") var docIDs: [String] = []
    @Flag(help: "Keep following: print each change (one JSON object a line) as it is committed.") var follow = false
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        if since != "now" && UInt64(since) == nil { throw ValidationError("--since takes a sequence number or now, not '\(since)'") }
    }

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            // `now`: the collection's last sequence, as the feed reports it.
            var since = UInt64(self.since) ?? 0
            if self.since == "now" { since = try await target.store(client, db).changes(since: 0, limit: 1, descending: true).lastSequence }
            if follow {
                let feed = target.store(client, db).liveChanges(
                    since: since, includeBodies: bodies, includeDeleted: !noDeleted, docIDs: docIDs,
                    batchLimit: limit > 0 ? limit : 1000)
                for try await batch in feed {
                    for change in batch.changes {
                        FileHandle.standardOutput.write(Data((changeJSON(change).compactString + "\n").utf8))
                    }
                }
                return
            }
            let batch = try await target.store(client, db).changes(
                since: since, limit: limit, descending: descending, includeBodies: bodies, allLeaves: allLeaves,
                includeDeleted: !noDeleted, docIDs: docIDs)
            printJSON(.object(JSONObject([
                ("results", .array(batch.changes.map(changeJSON))),
                ("last_seq", .int(Int64(batch.lastSequence))),
            ])))
        }
    }
}

/// One change as CouchDB shows it; a purge or an expiration has an empty `rev` and no "changes".
func changeJSON(_ change: Change) -> JSON {
    var object = JSONObject([("seq", .int(Int64(change.sequence))), ("id", .string(change.id))])
    let revs = change.leaves.isEmpty ? (change.rev.isEmpty ? [] : [change.rev]) : change.leaves
    object["changes"] = .array(revs.map { .object(JSONObject([("rev", .string($0))])) })
    if change.deleted { object["deleted"] = true }
    if change.rev.isEmpty { object["purged"] = true }
    if !change.body.isEmpty, let body = JSON.tryParse(change.body) { object["doc"] = body }
    return .object(object)
}

struct AllDocs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all-docs",
        abstract: "List documents in ID order: {\"total_rows\",\"offset\",\"rows\":[{\"id\",\"key\",\"value\":{\"rev\"},\"doc\"?}]}.",
        discussion: "total_rows counts the collection's documents (deleted ones not), whatever the options select.")
    @Argument var db: String
    @Option(help: "At most this many (0 = all).") var limit: Int = 0
    @Option(help: "Skip this many first.") var skip: Int = 0
    @Flag(help: "Include each body as \"doc\".") var bodies = false
    @Flag(help: "Reverse ID order.") var descending = false
    @Flag(name: .customLong("include-deleted"), help: "Include deleted documents.") var includeDeleted = false
    @Option(help: "The first ID (inclusive).") var start: String?
    @Option(help: "The last ID (inclusive).") var end: String?
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            let total = try await store.info().documentCount
            let docs = try await store.allDocs(
                limit: limit, skip: skip, descending: descending, startKey: start, endKey: end, includeBodies: bodies,
                includeDeleted: includeDeleted)
            printJSON(.object(JSONObject([
                ("total_rows", .int(Int64(clamping: total))), ("offset", .int(Int64(skip))),
                ("rows", .array(docs.map { doc in
                    var value = JSONObject([("rev", .string(doc.rev))])
                    if doc.deleted { value["deleted"] = true }
                    var row = JSONObject([("id", .string(doc.id)), ("key", .string(doc.id)), ("value", .object(value))])
                    if bodies { row["doc"] = doc.metadataObject() }
                    return .object(row)
                })),
            ])))
        }
    }
}
