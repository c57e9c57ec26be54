public import SofaCore
public import SofaWire
public import SofaBus
public import Logging
public import Foundation

/// `sofa-storage`: the engine served on the bus. This file is the only one of the module that
/// knows the wire: it turns requests into engine calls and results into replies.
public final class StorageService: Sendable {
    public let engine: StorageEngine
    private let started = ContinuousClock.now
    private let instance: String
    private let logger: Logger

    public init(engine: StorageEngine, instance: String, logger: Logger) {
        self.engine = engine
        self.instance = instance
        self.logger = logger
    }

    /// Starts storage as a process does: bind, serve, and return how to stop.
    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let engine = try StorageEngine(dataDirectory: URL(fileURLWithPath: settings.dataDirectory))
        let service = StorageService(engine: engine, instance: settings.instance ?? ServiceRuntime.defaultInstance("storage"),
                                     logger: logger)
        let server = try await BusServer.bind(settings.storageEndpoint, name: "storage",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            await service.handle(request)
        }
        logger.info("storage serving", metadata: ["endpoint": "\(server.endpoint)", "data": "\(settings.dataDirectory)"])
        return {
            await server.close()
            engine.close()
        }
    }

    public func handle(_ request: Request) async -> Response {
        do {
            return .ok(request.id, try await perform(request))
        } catch {
            if error.sofaCode == nil || error.is(.unexpectedError) {
                logger.error("request failed", metadata: ["request": "\(request.id)", "op": "\(request.operation.name)",
                                                          "error": "\(error)"])
            }
            return .failure(request.id, error)
        }
    }

    private func perform(_ request: Request) async throws(SofaError) -> Reply {
        switch request.operation {
        case .health:
            return .health(ServiceRuntime.health(service: "storage", instance: instance, started: started))
        case .echo(let payload, _, _):
            return .echo(payload: payload, instance: instance)
        case .createDatabase:
            try await engine.createDatabase(request.database)
            return .none
        case .deleteDatabase:
            try await engine.deleteDatabase(request.database)
            return .none
        case .listDatabases:
            return .databases(try await engine.listDatabases())
        case .putDocument(let id, let rev, let body, let deleted):
            let write = try Self.documentWrite(id: id, rev: rev, body: body, deleted: deleted)
            let result = try await engine.database(request.database).write(write)
            return .revision(id: result.id, rev: result.rev.ascii, sequence: result.sequence)
        case .deleteDocument(let id, let rev):
            try DocumentID.validate(id)
            guard !rev.isEmpty else {
                throw SofaError(.conflict, "deleting document '\(id)' needs its current revision (_rev)")
            }
            let write = DocumentWrite(id: id, parent: try RevID.parse(rev), body: .object(JSONObject()), deleted: true)
            let result = try await engine.database(request.database).write(write)
            return .revision(id: result.id, rev: result.rev.ascii, sequence: result.sequence)
        case .getDocument(let id, let rev, _, _):
            try DocumentID.validate(id)
            let record = try await engine.database(request.database).read(id: id, rev: rev.isEmpty ? nil : try RevID.parse(rev))
            return .document(StoredDocument(id: record.id, rev: record.rev.ascii, body: record.body,
                                            deleted: record.deleted, sequence: record.sequence))
        case .clusterStatus:
            throw SofaError(.unsupported, "storage does not answer clusterStatus; ask the gateway")
        default:
            throw SofaError(.unimplemented, "sofa-storage does not serve \(request.operation.name) yet")
        }
    }

    /// Parses and checks a body: a JSON object whose `_id`, `_rev` and `_deleted` are metadata.
    /// The wire's id/rev win when given; the body's must then agree.
    static func documentWrite(id wireID: String, rev wireRev: String, body: [UInt8], deleted wireDeleted: Bool) throws(SofaError) -> DocumentWrite {
        let json = body.isEmpty ? JSON.object(JSONObject()) : try JSON.parse(body)
        guard var object = json.objectValue else {
            throw SofaError(.badJSON, "a document body must be a JSON object, not \(json.kindName)")
        }
        var id = wireID
        if let bodyID = object.removeValue(forKey: "_id") {
            guard let text = bodyID.stringValue else { throw SofaError(.badDocID, "_id must be a string") }
            if id.isEmpty { id = text } else if id != text {
                throw SofaError(.badDocID, "_id '\(text)' in the body does not match the document ID '\(id)'")
            }
        }
        var rev = wireRev
        if let bodyRev = object.removeValue(forKey: "_rev") {
            guard let text = bodyRev.stringValue else { throw SofaError(.badRevisionID, "_rev must be a string") }
            if rev.isEmpty { rev = text } else if rev != text {
                throw SofaError(.badRevisionID, "_rev '\(text)' in the body does not match the revision '\(rev)'")
            }
        }
        var deleted = wireDeleted
        if let flag = object.removeValue(forKey: "_deleted") {
            guard let value = flag.boolValue else { throw SofaError(.invalidParameter, "_deleted must be true or false") }
            deleted = deleted || value
        }
        if id.isEmpty { id = DocumentID.generate() }
        try DocumentID.validate(id)
        return DocumentWrite(id: id, parent: rev.isEmpty ? nil : try RevID.parse(rev), body: .object(object), deleted: deleted)
    }
}

extension JSON {
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
