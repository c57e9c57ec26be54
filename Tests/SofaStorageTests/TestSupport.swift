import Foundation
import SofaTestSupport
import SofaCore
import SofaRows
@testable import SofaStorage
import Testing

/// A StorageEngine on a fresh data directory, closed and removed afterwards.
func withEngine<T>(_ body: (StorageEngine) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { url in
        let engine = try StorageEngine(dataDirectory: url)
        defer { engine.close() }
        return try await body(engine)
    }
}

/// A StorageEngine with one empty database "db".
func withDatabase<T>(_ body: (StorageEngine, DatabaseStore) async throws -> T) async throws -> T {
    try await withEngine { engine in
        try await engine.createDatabase("db")
        return try await body(engine, try await engine.database("db"))
    }
}

/// The SofaError `body` fails with; records an issue when it succeeds or throws something else.
@discardableResult
func expectError<T>(_ code: SofaError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () async throws -> T) async -> SofaError? {
    do {
        let value = try await body()
        Issue.record("expected \(code), got \(value) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
        return nil
    } catch let error as SofaError {
        #expect(error.sofaCode == code, "\(comment.map { "\($0): " } ?? "")\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

func put(_ id: String, _ body: JSON, parent: DocumentVersion? = nil, deleted: Bool = false) -> DocumentWrite {
    DocumentWrite(id: id, parent: parent, body: body, deleted: deleted)
}

func json(_ text: String) throws -> JSON { try JSON.parse(text) }

func put(_ id: String, _ body: JSON, parent: RevID, deleted: Bool = false) -> DocumentWrite {
    DocumentWrite(id: id, parent: .revID(parent), body: body, deleted: deleted)
}

extension DocumentVersion {
    /// A tree revID's generation (0 for a version vector).
    var generation: UInt32 {
        if case .revID(let r) = self { return r.generation }
        return 0
    }

    static func == (lhs: DocumentVersion, rhs: RevID) -> Bool { lhs == .revID(rhs) }
    static func != (lhs: DocumentVersion, rhs: RevID) -> Bool { lhs != .revID(rhs) }
}

extension DocumentVersion {
    /// The tree revID (traps for a version vector).
    var revID: RevID {
        guard case .revID(let r) = self else { preconditionFailure("\(self) is not a tree revID") }
        return r
    }
}

extension DatabaseStore {
    func read(id: String, rev: RevID) async throws -> DocumentRecord {
        try await read(id: id, rev: .revID(rev))
    }
}
