public import SofaCore

/// One call: who asked (`id`), about which database, until when, and what to do.
public struct Request: Sendable, Equatable {
    public var id: UInt64
    public var database: String
    /// Milliseconds since the Unix epoch after which the caller no longer waits; 0 = none.
    public var deadline: UInt64
    public var operation: Op

    public init(id: UInt64 = 0, database: String = "", deadline: UInt64 = 0, operation: Op) {
        self.id = id
        self.database = database
        self.deadline = deadline
        self.operation = operation
    }
}

/// The operations of the wire. Each maps to one `oneof op` case of `sofa.proto`.
public enum Op: Sendable, Equatable {
    /// Ask a process how it is; through the gateway, `service` names which one ("" = the gateway).
    case health(service: String)
    /// The gateway's view of every service of the cluster.
    case clusterStatus
    case createDatabase
    case deleteDatabase
    case listDatabases
    /// Write a revision. `id` empty = generate one; `rev` empty = a new document.
    case putDocument(id: String, rev: String, body: [UInt8], deleted: Bool)
    case getDocument(id: String, rev: String)
    case deleteDocument(id: String, rev: String)
    /// A diagnostic round trip, answered by `service` ("" = whoever receives it) after `delayMs`.
    case echo(payload: [UInt8], delayMs: UInt32, service: String)

    /// A short name for logs and metrics.
    public var name: String {
        switch self {
        case .health: "health"
        case .clusterStatus: "clusterStatus"
        case .createDatabase: "createDatabase"
        case .deleteDatabase: "deleteDatabase"
        case .listDatabases: "listDatabases"
        case .putDocument: "putDocument"
        case .getDocument: "getDocument"
        case .deleteDocument: "deleteDocument"
        case .echo: "echo"
        }
    }

    /// Whether the operation changes stored data (and so must not be retried blindly).
    public var isWrite: Bool {
        switch self {
        case .createDatabase, .deleteDatabase, .putDocument, .deleteDocument: true
        default: false
        }
    }
}

/// The answer to one request: its id and either a reply or an error.
public struct Response: Sendable, Equatable {
    public var id: UInt64
    public var outcome: Result<Reply, SofaError>

    public init(id: UInt64, outcome: Result<Reply, SofaError>) {
        self.id = id
        self.outcome = outcome
    }

    public static func ok(_ id: UInt64, _ reply: Reply = .none) -> Response {
        Response(id: id, outcome: .success(reply))
    }

    public static func failure(_ id: UInt64, _ error: SofaError) -> Response {
        Response(id: id, outcome: .failure(error))
    }
}

public enum Reply: Sendable, Equatable {
    case none
    case health(HealthInfo)
    case cluster([ServiceStatus])
    case databases([String])
    case document(StoredDocument)
    case revision(id: String, rev: String, sequence: UInt64)
    case echo(payload: [UInt8], instance: String)
}

public struct HealthInfo: Sendable, Equatable {
    public var service: String
    public var version: String
    public var pid: UInt32
    public var uptimeMs: UInt64
    public var instance: String

    public init(service: String, version: String, pid: UInt32, uptimeMs: UInt64, instance: String) {
        self.service = service
        self.version = version
        self.pid = pid
        self.uptimeMs = uptimeMs
        self.instance = instance
    }
}

public struct ServiceStatus: Sendable, Equatable {
    public var name: String
    public var healthy: Bool
    public var detail: String
    public var instances: UInt32

    public init(name: String, healthy: Bool, detail: String, instances: UInt32) {
        self.name = name
        self.healthy = healthy
        self.detail = detail
        self.instances = instances
    }
}

public struct StoredDocument: Sendable, Equatable {
    public var id: String
    public var rev: String
    /// The body as compact JSON, without `_id`, `_rev` or `_deleted`.
    public var body: [UInt8]
    public var deleted: Bool
    public var sequence: UInt64

    public init(id: String, rev: String, body: [UInt8], deleted: Bool, sequence: UInt64) {
        self.id = id
        self.rev = rev
        self.body = body
        self.deleted = deleted
        self.sequence = sequence
    }
}

/// A frame between the gateway's broker and a worker.
public struct WorkerFrame: Sendable, Equatable {
    public enum Kind: Int32, Sendable {
        case ready = 0, heartbeat = 1, request = 2, reply = 3, disconnect = 4
    }

    public var kind: Kind
    public var instance: String
    public var pid: UInt32
    public var service: String
    public var payload: [UInt8]

    public init(kind: Kind, instance: String = "", pid: UInt32 = 0, service: String = "", payload: [UInt8] = []) {
        self.kind = kind
        self.instance = instance
        self.pid = pid
        self.service = service
        self.payload = payload
    }
}
