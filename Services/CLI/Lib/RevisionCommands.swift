internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a document's conflicting leaf revisions: {\"id\",\"rev\",\"conflicts\":[…]}.",
        discussion: "rev is the current (winning) revision, as CouchDB's _rev beside _conflicts.")
    @Argument var db: String
    @Argument var id: String
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            let current = try await store.get(id: id)
            let conflicts = try await store.conflicts(id: id)
            printJSON(.object(JSONObject([("id", .string(id)), ("rev", .string(current.rev)),
                                          ("conflicts", .array(conflicts.map { .string($0) }))])))
        }
    }
}

struct Resolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resolve a conflict: keep --winner (or write --merged as its child), close --loser's branch.")
    @Argument var db: String
    @Argument var id: String
    @Option(help: "The revision that stays.") var winner: String
    @Option(help: "The conflicting revision whose branch is closed with a tombstone.") var loser: String
    @Option(help: "A merged JSON body written as the winner's child (- reads it from stdin).") var merged: String?
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            let result: DocumentRevision
            if let merged {
                let body = merged == "-" ? Array(FileHandle.standardInput.readDataToEndOfFile()) : Array(merged.utf8)
                result = try await store.resolve(id: id, winner: winner, loser: loser, merged: body)
            } else {
                result = try await store.resolve(id: id, winner: winner, loser: loser)
            }
            printJSON(.object(JSONObject([("id", .string(result.id)), ("rev", .string(result.rev))])))
        }
    }
}

struct Purge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Purge a document (every revision) or, with --rev, one leaf revision. Not replicated.")
    @Argument var db: String
    @Argument var id: String
    @Option(help: "One leaf revision to remove.") var rev: String?
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            try await target.store(client, db).purge(id: id, rev: rev)
            var result = JSONObject([("ok", true), ("id", .string(id))])
            if let rev { result["rev"] = .string(rev) }
            printJSON(.object(result))
        }
    }
}

struct Expire: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set, cancel or show when a document expires (ms since the epoch).",
        discussion: "With no option it prints {\"id\",\"expiration\"} (null when none); with --next and no ID, the collection's next expiration.")
    @Argument var db: String
    @Argument var id: String?
    @Option(help: "When, in ms since the Unix epoch.") var at: Int64?
    @Option(name: .customLong("in"), help: "In this many seconds from now.") var inSeconds: Double?
    @Flag(help: "Remove the expiration.") var cancel = false
    @Flag(help: "Show the collection's next expiration.") var next = false
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        let actions = [at != nil, inSeconds != nil, cancel].filter { $0 }.count
        if actions > 1 { throw ValidationError("give one of --at, --in and --cancel") }
        if next && (id != nil || actions > 0) { throw ValidationError("--next takes no ID and no other option") }
        if !next && id == nil { throw ValidationError("missing the document ID (or --next)") }
    }

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            guard let id else {
                let next = try await store.nextExpirationMs()
                printJSON(.object(JSONObject([("next_expiration", next.map { .int($0) } ?? .null)])))
                return
            }
            if cancel {
                try await store.cancelExpiration(id: id)
            } else if let at {
                try await store.setExpiration(id: id, at: at)
            } else if let inSeconds {
                try await store.setExpiration(id: id, at: Date().addingTimeInterval(inSeconds))
            }
            let current = try await store.expirationMs(id: id)
            printJSON(.object(JSONObject([("id", .string(id)), ("expiration", current.map { .int($0) } ?? .null)])))
        }
    }
}
