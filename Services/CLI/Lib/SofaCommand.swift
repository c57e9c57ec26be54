public import ArgumentParser
internal import SofaClient
internal import SofaCluster
internal import Foundation

/// `sofa`: the admin and data tool. JSON on stdout; errors on stderr with a non-zero exit.
public struct SofaCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sofa",
        abstract: "Sofa: a document database served by a cluster of processes.",
        subcommands: [Up.self, Status.self, Ping.self, DB.self, CollectionCommand.self, Put.self, Get.self, Delete.self, Compact.self,
                      Conflicts.self, Resolve.self, Purge.self, Expire.self, Changes.self, AllDocs.self, Import.self,
                      QueryCommand.self, IndexCommand.self, BlobCommand.self, Replicate.self, Replications.self,
                      WhoAmI.self, UserCommand.self, SecurityCommand.self, ViewCommand.self, Dump.self, PackageCommand.self,
                      SnapshotCommand.self])

    public init() {}

    /// The entry point of the `sofa` executable.
    public static func runMain() async {
        do {
            try await reporting { try validateArgumentEncoding() }
        } catch {
            exit(withError: error)
        }
        await runCommand(Self.self)
    }
}

extension SofaCommand {
    /// Refuses an argument that is not valid UTF-8 (the shell passed bytes, not text): read as a
    /// String it would become U+FFFD, and a document ID or name would silently be another one.
    static func validateArgumentEncoding() throws(SofaError) {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
            let shown = String(decoding: UnsafeBufferPointer(start: raw, count: strlen(raw)).map { UInt8(bitPattern: $0) },
                               as: UTF8.self)
            throw SofaError(.invalidParameter, "argument \(index) is not valid UTF-8 ('\(shown)', with U+FFFD for each bad byte)")
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show every service of the cluster.")
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let services = try await client.clusterStatus()
            printJSON(.object(JSONObject([
                ("gateway", .string(options.gateway)),
                // The key clients elsewhere pin (SOFA_SERVER_KEY), as this command pinned it.
                ("server_key", options.identity.serverKey.map(JSON.string) ?? .null),
                ("healthy", .bool(services.allSatisfy(\.healthy))),
                ("services", .array(services.map { service in
                    .object(JSONObject([("name", .string(service.name)), ("healthy", .bool(service.healthy)),
                                        ("instances", .int(Int64(service.instances))), ("detail", .string(service.detail))]))
                })),
            ])))
            if !services.allSatisfy(\.healthy) { throw ExitCode(1) }
        }
    }
}

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a health call straight to an endpoint (any Sofa process that binds one).")
    @Argument(help: "The endpoint, e.g. tcp://127.0.0.1:7421") var endpoint: String
    @Option(help: "Through a gateway: the service to ask (storage, query, blob, replicator).")
    var service: String = ""
    @Option(help: "Seconds to wait.") var timeout: Double = 5

    func run() async throws {
        if endpoint.hasPrefix("http://") {
            try await reporting {
                let status = try HTTPUp.check(endpoint, timeoutMs: Int(timeout * 1000))
                printJSON(.object(JSONObject([("service", "http"), ("status", .string(status))])))
            }
            return
        }
        try await reporting {
            // A service's own socket admits only the cluster's key: speak as the cluster when this
            // user can read its secrets (a health check on the service's host), else as anyone.
            let keys = GatewayOptions.localClusterKeys
            let client = try await SofaClient.connect(endpoint, serverKey: ProcessInfo.processInfo.environment["SOFA_SERVER_KEY"] ?? keys?.public,
                                                      clientSecretKey: keys?.secret, timeout: .milliseconds(Int(timeout * 1000)))
            defer { client.close() }
            let info = try await client.health(service: service)
            printJSON(.object(JSONObject([("service", .string(info.service)), ("instance", .string(info.instance)),
                                          ("pid", .int(Int64(info.pid))), ("version", .string(info.version)),
                                          ("uptime_ms", .int(Int64(info.uptimeMs)))])))
        }
    }
}

/// `GET /_up` of sofa-http (CouchDB's health endpoint), over a plain socket.
enum HTTPUp {
    static func check(_ url: String, timeoutMs: Int) throws(SofaError) -> String {
        let hostPort = url.dropFirst("http://".count).split(separator: "/").first.map(String.init) ?? ""
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else {
            throw SofaError(.invalidParameter, "expected http://HOST:PORT, not \(url)")
        }
        let fd = try TCPConnect.to(String(hostPort[..<colon]), port: port)
        defer { close(fd) }
        var limit = timeval(tv_sec: timeoutMs / 1000, tv_usec: Int((timeoutMs % 1000) * 1000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET /_up HTTP/1.1\r\nHost: \(hostPort)\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw SofaError(.unavailable, "cannot send to \(url)")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 65536 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200") else {
            throw SofaError(.unavailable, "\(url)/_up answered: \(text.split(separator: "\r\n").first ?? "nothing")")
        }
        return "ok"
    }
}

struct DB: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Create, delete, list or describe databases.",
        subcommands: [Create.self, Remove.self, List.self, Info.self, Rekey.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a database.")
        @Argument var name: String
        @Option(help: "How revisions are tracked: trees (revision trees, the default) or vectors (version vectors).")
        var versioning: String = "trees"
        @Option(help: "Encrypt the database's blobs with the AES-256 key LiteCore derives from this passphrase.")
        var passphrase: String?
        @Option(help: "Encrypt the database's blobs with this AES-256 key (64 hex digits).")
        var key: String?
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let mode = try Versioning.parse(versioning)
                let encryptionKey = try await DB.encryptionKey(password: passphrase, hex: key, what: "")
                let client = try await options.connect()
                defer { client.close() }
                try await client.createDatabase(name, versioning: mode, encryptionKey: encryptionKey)
                printJSON(.object(JSONObject([("ok", true), ("db", .string(name)), ("versioning", .string(mode.rawValue)),
                                              ("encrypted", .bool(encryptionKey != nil))])))
            }
        }
    }

    struct Rekey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Encrypt, decrypt or change the key of a database's blobs.",
            discussion: "Give the current key (none for a plain database) and the new one (none, or --decrypt, to decrypt).")
        @Argument var name: String
        @Option(help: "The database's current passphrase.") var oldPassphrase: String?
        @Option(help: "The database's current key (64 hex digits).") var oldKey: String?
        @Option(help: "The new passphrase.") var passphrase: String?
        @Option(help: "The new key (64 hex digits).") var key: String?
        @Flag(help: "Store the blobs plain from now on.") var decrypt = false
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let current = try await DB.encryptionKey(password: oldPassphrase, hex: oldKey, what: "old-")
                let new = try await DB.encryptionKey(password: passphrase, hex: key, what: "")
                guard decrypt == (new == nil) else {
                    throw SofaError.invalid(decrypt ? "--decrypt takes no new --passphrase or --key" : "give the new --passphrase or --key, or --decrypt")
                }
                let client = try await options.connect()
                defer { client.close() }
                try await client.database(name).changeEncryptionKey(from: current, to: new)
                printJSON(.object(JSONObject([("ok", true), ("db", .string(name)), ("encrypted", .bool(new != nil))])))
            }
        }
    }

    /// The key a `--passphrase` or `--key` (with `what` before their names) gives, nil for neither.
    static func encryptionKey(password: String?, hex: String?, what: String) async throws -> EncryptionKey? {
        switch (password, hex) {
        case (nil, nil): return nil
        case (let password?, nil): return try await EncryptionKey.derived(from: password)
        case (nil, let hex?): return try EncryptionKey(hex: hex)
        default: throw SofaError.invalid("give --\(what)passphrase or --\(what)key, not both")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a database and its files.")
        @Argument var name: String
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await client.deleteDatabase(name)
                printJSON(.object(JSONObject([("ok", true), ("db", .string(name))])))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List databases.")
        @OptionGroup var options: GatewayOptions
        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                printJSON(.array(try await client.databases().map { .string($0) }))
            }
        }
    }
}

struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a document; prints {\"id\",\"rev\"}. `_rev` in the body or --rev updates it.",
        discussion: """
            With --new-edits=false the revision is inserted with its history, as a replicator \
            does: --history R1,R2,… lists the revision and its ancestors, newest first; no MVCC \
            check is made and a revision that does not extend the current one is kept as a \
            conflicting branch. The body is then sent raw: no _id, _rev or _deleted in it.
            """)
    @Argument var db: String
    @Argument var id: String
    @Argument(help: "The JSON body, or - to read it from stdin.") var json: String
    @Option(help: "The current revision, to update.") var rev: String?
    @Option(name: .customLong("new-edits"), help: "false: insert the revision given by --history as is.")
    var newEdits: Bool = true
    @Option(help: "With --new-edits=false: the revision and its ancestors, newest first, comma-separated.")
    var history: String?
    @Flag(help: "Write a deletion (a tombstone).") var deleted = false
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        if !newEdits && history == nil { throw ValidationError("--new-edits=false needs --history R1,R2,…") }
        if newEdits && history != nil { throw ValidationError("--history goes with --new-edits=false") }
        if !newEdits && rev != nil { throw ValidationError("--rev does not apply with --new-edits=false; use --history") }
    }

    func run() async throws {
        try await reporting {
            let body: [UInt8] = json == "-" ? Array(FileHandle.standardInput.readDataToEndOfFile()) : Array(json.utf8)
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            if let history, !newEdits {
                let revs = history.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let result = try await store.insert(id: id, history: revs, body: body, deleted: deleted)
                printJSON(.object(JSONObject([("id", .string(result.id)), ("rev", .string(result.rev)),
                                              ("added", .int(Int64(result.added))), ("conflict", .bool(result.conflict))])))
            } else {
                let saved = try await store.put(id: id, body: body, rev: rev, deleted: deleted)
                printJSON(.object(JSONObject([("id", .string(saved.id)), ("rev", .string(saved.rev))])))
            }
        }
    }
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a document with its _id and _rev.")
    @Argument var db: String
    @Argument var id: String
    @Option(help: "A specific revision.") var rev: String?
    @Flag(help: "Add the revision's history as _revisions.") var revs = false
    @Flag(name: .customLong("open-revs"), help: "Print every open leaf (a JSON array), deleted ones included.")
    var openRevs = false
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, db)
            if openRevs {
                let leaves = try await store.openLeaves(id: id)
                printJSON(.array(leaves.map { $0.metadataObject(revisions: revs) }))
            } else {
                printJSON(try await store.get(id: id, rev: rev, history: revs).metadataObject(revisions: revs))
            }
        }
    }
}

struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a document (its current revision).")
    @Argument var db: String
    @Argument var id: String
    @Option(help: "The current revision.") var rev: String
    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let deleted = try await target.store(client, db).delete(id: id, rev: rev)
            printJSON(.object(JSONObject([("id", .string(deleted.id)), ("rev", .string(deleted.rev)), ("deleted", true)])))
        }
    }
}
