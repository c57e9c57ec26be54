import SofaCore
import SofaWire
import Testing

/// Round trips of the replication messages: revs-diff and replication control.
@Suite struct ReplicationWireTests {
    static let requests: [Request] = [
        Request(id: 1, database: "app", operation: .revsDiff([])),
        Request(id: 80, database: "app", actingUser: "ann", operation: .viewQuery(design: "zoo", view: "by_type", options: [
            "startkey": ["a", 1], "group_level": 1, "update": "lazy"])),
        Request(id: 82, database: "app", operation: .designCall(DesignCall(.validate, documents: [["_id": "a", "n": 1], ["_id": "b"]],
                                                                           context: ["userCtx": ["name": "ann"]]))),
        Request(id: 83, database: "app", operation: .designCall(DesignCall(.filter, design: "rules", name: "big"))),
        Request(id: 81, operation: .startReplication(ReplicationSpec(
            source: "app", target: "tcp://10.0.0.2:7420/app", owner: "ann",
            targetAccess: RemoteAccess(serverKey: "k", user: "bob", password: "pw")))),
        Request(id: 70, operation: .authenticate(name: "ann", password: "pä ss")),
        Request(id: 71, operation: .session),
        Request(id: 72, database: "app", operation: .getSecurity),
        Request(id: 73, database: "app", operation: .setSecurity(.object(JSONObject([("members", .object(JSONObject([
            ("roles", .array(["staff"]))])))])))),
        Request(id: 2, database: "app", collection: "s.c", operation: .revsDiff([
            RevsDiffEntry(id: "a", revs: ["2-bb", "3-cc"]),
            RevsDiffEntry(id: "dôc", revs: ["7@peer"], possibleAncestors: ["1-aa"]),
        ])),
        Request(id: 3, operation: .startReplication(ReplicationSpec(source: "app", target: "tcp://10.0.0.2:7420/app"))),
        Request(id: 4, operation: .startReplication(ReplicationSpec(
            source: "a", target: "b", direction: .both, continuous: true, docIDs: ["x", "y"], filter: "type = 'z'",
            conflicts: .manual, collection: "store.orders"))),
        Request(id: 8, operation: .startReplication(ReplicationSpec(source: "a", target: "b", conflicts: .couchdb,
                                                                     designFilter: "d/f", queryParams: ["k": 1], since: 42))),
        Request(id: 5, operation: .stopReplication(id: "abc123")),
        Request(id: 6, operation: .listReplications()),
        Request(id: 7, operation: .listReplications(id: "abc", afterVersion: .max, waitMs: 10_000)),
    ]

    @Test(arguments: requests)
    func requestRoundTrip(_ request: Request) throws {
        #expect(try Request.decode(request.encoded()) == request)
    }

    static let responses: [Response] = [
        .ok(1, .revsDiff([])),
        .ok(70, .session(name: "ann", roles: ["staff", "_admin"])),
        .ok(71, .session(name: "", roles: [])),
        .ok(72, .json(.object(JSONObject([("admins", .object(JSONObject()))])))),
        .ok(2, .revsDiff([RevsDiffEntry(id: "a", revs: ["3-cc"], possibleAncestors: ["2-bb", "1-aa"])])),
        .ok(3, .replications([])),
        .ok(4, .replications([
            ReplicationStatus(id: "r1", source: "a", target: "tcp://h:1/b", continuous: true, state: .idle, docsChecked: 10,
                              docsWritten: 9, conflictsResolved: 1, blobsTransferred: 2, lastError: "oops", checkpoint: 99,
                              version: 7, docIDs: ["x"], filter: "", conflicts: .manual, collection: "s.c", revisionsSent: 12),
            ReplicationStatus(id: "r2", source: "b", target: "a", continuous: false, state: .completed),
        ])),
        .ok(5, .bulk([BulkItemResult(id: "a", rev: "2-bb", sequence: 3, conflict: true)])),
    ]

    @Test(arguments: responses)
    func responseRoundTrip(_ response: Response) throws {
        #expect(try Response.decode(response.encoded()) == response)
    }

    @Test func unknownDirectionOrPolicyIsInvalid() throws {
        #expect(throws: SofaError.self) { try ReplicationDirection.parse("sideways") }
        #expect(throws: SofaError.self) { try ConflictPolicy.parse("random") }
        #expect(try ReplicationDirection.parse("") == .push)
        #expect(try ConflictPolicy.parse("") == .auto)
    }
}
