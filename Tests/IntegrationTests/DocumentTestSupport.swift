import Foundation
import SofaClient
import SofaTestSupport
import Testing

/// Expects `attempt` to fail with a `SofaError` whose code is one of `codes`, with a message.
func expectFailure(_ name: String, _ codes: Set<SofaError.Code>, sourceLocation: SourceLocation = #_sourceLocation,
                   _ attempt: () async throws -> Void) async {
    do {
        try await attempt()
        Issue.record("\(name): accepted", sourceLocation: sourceLocation)
    } catch let error as SofaError {
        #expect(error.sofaCode.map { codes.contains($0) } == true, "\(name): \(error)", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, "\(name): no message", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(name): not a SofaError: \(error)", sourceLocation: sourceLocation)
    }
}

/// The generation of a revision-tree revID ("3-abc" → 3).
func generation(_ rev: String) -> Int { Int(rev.prefix { $0 != "-" }) ?? -1 }

/// Parses the CLI's stdout.
func parseOutput(_ text: String) throws -> JSON {
    try JSON.parse(text.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Expects `stderr` to be exactly one error line of the `.sofa` error `code`, as the CLI prints
/// it: `sofa: conflict (8): …`.
func expectErrorLine(_ stderr: String, _ code: SofaError.Code, sourceLocation: SourceLocation = #_sourceLocation) {
    let lines = stderr.split(separator: "\n")
    #expect(lines.count == 1 && lines[0].hasPrefix("sofa: \(code.name) (\(code.rawValue)): "), "\(stderr)",
            sourceLocation: sourceLocation)
}

/// LiteCore's test datasets, in the package (`Tests/Fixtures/litecore`).
var litecoreData: URL { Fixtures.litecore }

/// Waits until `condition` holds, long-polling the changes feed of `store` between checks (so
/// the wait ends on a commit, not on a timer), failing after `timeout`.
func waitUntil(_ what: String, in store: some DocumentStore, timeout: Duration = .seconds(15),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    var since = try await store.changes(since: 0, limit: 1, descending: true).lastSequence
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw SofaError(.timeout, "gave up waiting for \(what)") }
        let batch = try await store.changes(ChangesQuery(since: since, limit: 100, waitMs: 250))
        since = max(since, batch.lastSequence)
    }
}
