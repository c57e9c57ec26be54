internal import ArgumentParser
internal import SofaClient
internal import SofaCluster
internal import SofaCore

/// `sofa dump DB`: documents as JSON lines (`_id` and `_rev` first).
struct Dump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump", abstract: "Print a database's documents as JSON lines.",
        discussion: "Each line is a document with its _id and _rev (and _deleted for a deleted one).")
    @Argument var db: String
    @Flag(help: "Every stored revision of each document (its open leaves and the bodies its history still holds), not only the current one.")
    var all = false
    @Option(help: "Only the document with this ID.") var id: String?
    @Option(help: "Only these properties (comma-separated), beside _id and _rev.") var keys: String?
    @Option(help: "Only objects whose objectType is this.") var type: String?
    @Flag(help: "Deleted documents too.") var deleted = false
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let database = client.database(db)
            let documents: [Document]
            if let id {
                documents = [try await database.get(id: id)]
            } else {
                documents = try await database.allDocs(includeBodies: true, includeDeleted: deleted)
            }
            let only = keys.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
            for document in documents where deleted || !document.deleted {
                for revision in all ? try await Self.revisions(of: document, in: database) : [document] {
                    guard let line = Self.line(revision, keys: only, type: type) else { continue }
                    print(line)
                }
            }
        }
    }

    /// A document's stored revisions: its open leaves, then the bodies of its history that are still kept.
    static func revisions(of document: Document, in database: Database) async throws(SofaError) -> [Document] {
        var found = try await database.openLeaves(id: document.id)
        var seen = Set(found.map(\.rev))
        for rev in try await database.get(id: document.id, history: true).history where !seen.contains(rev) {
            seen.insert(rev)
            if let old = try? await database.get(id: document.id, rev: rev), !old.body.isEmpty || old.deleted { found.append(old) }
        }
        return found
    }

    static func line(_ document: Document, keys: Set<String>?, type: String?) -> String? {
        var object = JSONObject([("_id", .string(document.id)), ("_rev", .string(document.rev))])
        if document.deleted { object["_deleted"] = true }
        let body = (try? document.json().objectValue) ?? [:]
        if let type, body["objectType"]?.stringValue != type { return nil }
        for (key, value) in body where keys.map({ $0.contains(key) }) ?? true { object[key] = value }
        return JSON.object(object).compactString
    }
}

/// `sofa package create|list|delete|replicate`.
struct PackageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "package", abstract: "Packages: databases named PACKAGE+NAME managed together.",
        subcommands: [Create.self, List.self, Delete.self, Replicate.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a package (and databases in it).")
        @Argument var package: String
        @Argument(help: "Databases to create in it.") var databases: [String] = []
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await Package(client: client, name: package).create(databases: databases)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the packages, or one package's databases.")
        @Argument var package: String?
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let names = if let package { try await Package(client: client, name: package).databaseNames() } else {
                    try await Package.list(client)
                }
                for name in names { print(name) }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a package: every database of it, its snapshots too.")
        @Argument var package: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await Package(client: client, name: package).delete()
            }
        }
    }

    struct Replicate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replicate every database of a package with the same-named ones of another cluster.",
            discussion: "REMOTE is the other cluster's gateway, tcp://host:port. Waits until every replication ends.")
        @Argument var package: String
        @Argument var remote: String
        @Option(help: "push, pull or both.") var direction: String = "push"
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                guard let given = ReplicationDirection(rawValue: direction) else {
                    throw SofaError(.invalidParameter, "--direction is push, pull or both, not \(direction)")
                }
                let client = try await options.connect()
                defer { client.close() }
                for status in try await Package(client: client, name: package).replicate(with: remote, direction: given) {
                    print("\(status.source) → \(status.target): \(status.state.rawValue), \(status.docsWritten) written")
                }
            }
        }
    }
}

/// `sofa snapshot create|list|restore PACKAGE NAME`.
struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot", abstract: "Snapshots of a package: every object, attachments stored once.",
        subcommands: [Create.self, List.self, Restore.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a named snapshot of a package.")
        @Argument var package: String
        @Argument var name: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let info = try await Package(client: client, name: package).takeSnapshot(name)
                print("\(info.name)\t\(info.createdAt)\t\(info.objectCount) objects")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a package's snapshots: name, time, object count.")
        @Argument var package: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                for info in try await Package(client: client, name: package).listSnapshots() {
                    print("\(info.name)\t\(info.createdAt)\t\(info.objectCount) objects")
                }
            }
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bring a package back to a snapshot's state.")
        @Argument var package: String
        @Argument var name: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let done = try await Package(client: client, name: package).restoreSnapshot(name)
                print("restored \(name): \(done.written) written, \(done.deleted) deleted")
            }
        }
    }
}
