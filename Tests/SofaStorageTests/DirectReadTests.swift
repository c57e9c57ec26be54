import Foundation
import Logging
import SofaCore
@testable import SofaStorage
import SofaTestSupport
import SofaWire
import Testing

/// `StorageService.handleDirectly`: a plain get of an open database is answered without a task,
/// exactly as `handle` answers it; anything else is declined, for `handle` to take.
@Suite struct DirectReadTests {
    /// Answers `request` directly (the reply comes once, from a reader's queue); nil when declined.
    func direct(_ service: StorageService, _ request: Request) async -> Response? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Response?, Never>) in
            let taken = service.handleDirectly(request) { continuation.resume(returning: $0) }
            if !taken { continuation.resume(returning: nil) }
        }
    }

    @Test func getsOfOpenDatabasesAreAnsweredAsHandleAnswersThem() async throws {
        try await withTemporaryDirectory { url in
            let engine = try StorageEngine(dataDirectory: url)
            defer { engine.close() }
            try await engine.createDatabase("db")
            let service = StorageService(engine: engine, instance: "test", logger: Logger(label: "test"))
            let put = await service.handle(Request(id: 1, database: "db", operation: .putDocument(
                id: "a", rev: "", body: Array(#"{"x":1}"#.utf8), deleted: false)))
            guard case .success(.revision(_, let rev, _)) = put.outcome else { Issue.record("put: \(put)"); return }

            for operation in [Op.getDocument(id: "a", rev: "", history: false, openLeaves: false),
                              .getDocument(id: "a", rev: rev, history: true, openLeaves: false),
                              .getDocument(id: "missing", rev: "", history: false, openLeaves: false),
                              .getDocument(id: "a", rev: "9-abc", history: false, openLeaves: false),
                              .getDocument(id: "", rev: "", history: false, openLeaves: false)] {
                let request = Request(id: 7, database: "db", operation: operation)
                let directly = await direct(service, request)
                #expect(directly == (await service.handle(request)), "\(operation)")
            }
            // Declined: local documents, open leaves, other operations, databases not open.
            for (database, operation) in [("db", Op.getDocument(id: "_local/x", rev: "", history: false, openLeaves: false)),
                                          ("db", .getDocument(id: "a", rev: "", history: false, openLeaves: true)),
                                          ("db", .listCollections), ("nowhere", .getDocument(id: "a", rev: "", history: false, openLeaves: false))] {
                #expect(await direct(service, Request(id: 8, database: database, operation: operation)) == nil, "\(operation)")
            }
        }
    }
}
