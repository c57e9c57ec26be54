import SofaCore
import SofaWire
import Testing

/// The routing table (`OperationKind.route`) against the wire: each kind's number is the field the
/// encoder writes for it, and the samples of the wire tests cover every kind.
@Suite struct RoutesTests {
    static let samples = WireTests.requests + ReplicationWireTests.requests

    @Test func everyKindHasASample() {
        let covered = Set(Self.samples.map(\.operation.kind))
        #expect(Set(OperationKind.allCases).subtracting(covered).isEmpty,
                "no sample for \(Set(OperationKind.allCases).subtracting(covered).map(\.name))")
    }

    @Test(arguments: samples)
    func kindIsTheEncodedField(_ request: Request) throws {
        let bytes = request.encoded()
        let every = Set(OperationKind.allCases.map(\.rawValue))
        let peeked = try #require(bytes.withUnsafeBytes { ForwardedRequest.peek($0, operations: every) })
        #expect(peeked.operationField == request.operation.kind.rawValue, "\(request.operation.name)")
    }

    /// Only operations that are about one database, and that storage, sofa-blob or the query
    /// workers answer, pass through undecoded: the gateway forwards them by the envelope's
    /// database alone (queries through the broker).
    @Test(arguments: OperationKind.allCases)
    func passedThroughOperationsNameADatabaseAndGoToStorageBlobOrQuery(_ kind: OperationKind) {
        let route = kind.route
        guard route.passedThrough else { return }
        #expect(route.needsDatabase)
        #expect(route.service == .storage || route.service == .blob || route.service == .query)
    }

    @Test func namesAreTheCaseNames() {
        #expect(Op.putDocument(id: "a", rev: "", body: [], deleted: false).name == "putDocument")
        #expect(Op.listReplications().name == "listReplications")
        #expect(Set(OperationKind.allCases.map(\.name)).count == OperationKind.allCases.count)
    }
}
