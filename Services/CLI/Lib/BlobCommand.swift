internal import ArgumentParser
internal import SofaClient
internal import Foundation
internal import SofaCluster

/// `sofa blob put|get|stat`: a database's blobs (attachments), streamed in chunks.
struct BlobCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blob", abstract: "Store and read a database's blobs (attachments).",
        subcommands: [PutBlob.self, GetBlob.self, StatBlob.self])

    /// `sofa blob put DB FILE [--expect KEY]`: prints {"key","length"}.
    struct PutBlob: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "put", abstract: "Upload a file as a blob; prints its key and length.")
        @Argument var db: String
        @Argument var file: String
        @Option(name: .customLong("expect"), help: "The key the content must have (sha1-…); a mismatch stores nothing.")
        var expect: String?
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let info = try await client.database(db).putBlob(contentsOf: URL(fileURLWithPath: file), expectedKey: expect)
                printJSON(.object(JSONObject([("key", .string(info.key)), ("length", .int(Int64(info.length)))])))
            }
        }
    }

    /// `sofa blob get DB KEY [-o FILE]`: the bytes to FILE, or to stdout.
    struct GetBlob: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Download a blob to a file, or to stdout.")
        @Argument var db: String
        @Argument var key: String
        @Option(name: .shortAndLong, help: "Write to this file instead of stdout.")
        var output: String?
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let database = client.database(db)
                if let output {
                    try await database.downloadBlob(key, to: URL(fileURLWithPath: output))
                } else {
                    let stdout = FileHandle.standardOutput
                    for try await chunk in database.blobChunks(key) { stdout.write(Data(chunk)) }
                }
            }
        }
    }

    /// `sofa blob stat DB KEY`: prints {"key","length"}.
    struct StatBlob: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stat", abstract: "Print a blob's key and length.")
        @Argument var db: String
        @Argument var key: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let info = try await client.database(db).blobInfo(key)
                printJSON(.object(JSONObject([("key", .string(info.key)), ("length", .int(Int64(info.length)))])))
            }
        }
    }
}
