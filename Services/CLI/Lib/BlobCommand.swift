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
        static let configuration = CommandConfiguration(
            commandName: "put", abstract: "Upload a file as a blob; prints its key and length.",
            discussion: """
                Until a document references the blob (a value {"@type":"blob","digest":KEY} at any \
                depth, or an entry of _attachments with "digest":KEY), the next compaction deletes \
                it; a note on stderr says so. On a terminal, stderr shows the progress.
                """)
        @Argument var db: String
        @Argument var file: String
        @Option(name: .customLong("expect"), help: "The key the content must have (sha1-…); a mismatch stores nothing.")
        var expect: String?
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                let url = URL(fileURLWithPath: file)
                let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.uint64Value
                let progress = ProgressLine("blob put", total: size, unit: .bytes)
                let info = try await progress.around {
                    try await client.database(db).putBlob(contentsOf: url, expectedKey: expect) { progress.update(done: $0) }
                }
                printJSON(.object(JSONObject([("key", .string(info.key)), ("length", .int(Int64(info.length)))])))
                FileHandle.standardError.write(Data(Self.unreferencedNote(info.key).utf8))
            }
        }

        /// What stderr says after an upload.
        static func unreferencedNote(_ key: String) -> String {
            "\(toolName): note: until a document references \(key) ({\"@type\":\"blob\",\"digest\":\"\(key)\"}), "
                + "the next compaction deletes it\n"
        }
    }

    /// `sofa blob get DB KEY [-o FILE]`: the bytes to FILE, or to stdout.
    struct GetBlob: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get", abstract: "Download a blob to a file, or to stdout.",
            discussion: "On a terminal, stderr shows the progress.")
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
                let progress = ProgressLine("blob get", unit: .bytes)
                try await progress.around {
                    if let output {
                        try await database.downloadBlob(key, to: URL(fileURLWithPath: output)) { done, total in
                            progress.update(total: total)
                            progress.update(done: done)
                        }
                    } else {
                        if ProgressLine.stderrIsTerminal { progress.update(total: try await database.blobInfo(key).length) }
                        let stdout = FileHandle.standardOutput
                        for try await chunk in database.blobChunks(key) {
                            stdout.write(Data(chunk))
                            progress.advance(by: UInt64(chunk.count))
                        }
                    }
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
