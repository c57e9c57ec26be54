public import SofaCore
public import SofaWire

extension DocumentStore {
    /// Which of these revisions the database lacks: per document (documents lacking nothing are
    /// left out), the missing revisions and the leaves it has that could be their ancestors.
    public func revsDiff(_ revisions: [String: [String]]) async throws(SofaError) -> [RevsDiffEntry] {
        try await revsDiff(revisions.sorted { $0.key < $1.key }.map { RevsDiffEntry(id: $0.key, revs: $0.value) })
    }

    public func revsDiff(_ entries: [RevsDiffEntry]) async throws(SofaError) -> [RevsDiffEntry] {
        guard case .revsDiff(let missing) = try await call(.revsDiff(entries)) else { throw unexpected("revsDiff") }
        return missing
    }
}
