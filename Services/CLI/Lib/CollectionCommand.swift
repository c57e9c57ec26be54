internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

/// `--collection`, for the commands that work on documents.
struct CollectionOption: ParsableArguments {
    @Option(help: "The collection: scope.name, or name in scope _default (default: the default collection).")
    var collection: String = ""

    func store(_ client: SofaClient, _ database: String) -> Collection {
        client.database(database).collection(collection)
    }
}

extension DB {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a database: document count, sequences, sizes, UUIDs, versioning, collections.")
        @Argument var name: String
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let info = try await client.database(name).info()
                printJSON(.object(JSONObject([
                    ("db_name", .string(info.name)), ("doc_count", .int(Int64(info.documentCount))),
                    ("last_seq", .int(Int64(info.lastSequence))), ("update_seq", .int(Int64(info.updateSequence))),
                    ("sizes", .object(JSONObject([("file", .int(Int64(info.fileBytes))), ("wal", .int(Int64(info.walBytes)))]))),
                    ("uuid", .string(info.publicUUID)), ("private_uuid", .string(info.privateUUID)),
                    ("versioning", .string(info.versioning.rawValue)), ("collections", .int(Int64(info.collections))),
                ])))
            }
        }
    }
}

struct CollectionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collection", abstract: "Create, delete or list the collections of a database.",
        subcommands: [Create.self, Remove.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a collection (scope.name, or name in _default).")
        @Argument var db: String
        @Argument var collection: String
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await client.database(db).createCollection(collection)
                printJSON(.object(JSONObject([("ok", true), ("db", .string(db)), ("collection", .string(collection))])))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a collection and its documents.")
        @Argument var db: String
        @Argument var collection: String
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await client.database(db).deleteCollection(collection)
                printJSON(.object(JSONObject([("ok", true), ("db", .string(db)), ("collection", .string(collection))])))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a database's collections as scope.name.")
        @Argument var db: String
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                printJSON(.array(try await client.database(db).collections().map { .string($0) }))
            }
        }
    }
}
