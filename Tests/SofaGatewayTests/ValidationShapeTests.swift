import SofaCore
import SofaGateway
import SofaWire
import Testing

/// What validation functions see of a write, and what their answers become, without a cluster.
@Suite struct ValidationShapeTests {
    @Test func newRevisionsAreShownAsCouchDBShowsThem() {
        var put = Op.putDocument(id: "a", rev: "1-x", body: Array(#"{"n":1}"#.utf8), deleted: false)
        #expect(GatewayService.newRevisions(&put) == [["n": 1, "_id": "a", "_rev": "1-x"]])
        var delete = Op.deleteDocument(id: "a", rev: "2-y")
        #expect(GatewayService.newRevisions(&delete) == [["_id": "a", "_rev": "2-y", "_deleted": true]])
        var insert = Op.insertRevision(RevisionInsert(id: "r", history: ["3-c", "2-b", "1-a"], body: Array("{}".utf8)))
        #expect(GatewayService.newRevisions(&insert) == [["_id": "r", "_rev": "3-c", "_revisions": ["start": 3, "ids": ["c", "b", "a"]]]])
        // Design and local documents are not validated; a body that is not an object is storage's to refuse.
        var bulk = Op.bulkWrite([.put(id: "_design/d", rev: "", body: [], deleted: false),
                                 .put(id: "_local/l", rev: "", body: [], deleted: false),
                                 .put(id: "bad", rev: "", body: Array("[1]".utf8), deleted: false),
                                 .put(id: "", rev: "", body: Array("{}".utf8), deleted: false)])
        let revisions = GatewayService.newRevisions(&bulk)
        #expect(revisions.prefix(3).allSatisfy { $0 == nil })
        // A write without an ID gets it here, so the function and storage see the same one.
        guard case .bulkWrite(let items) = bulk, case .put(let id, _, _, _) = items[3] else {
            Issue.record("the bulk write changed shape")
            return
        }
        #expect(!id.isEmpty)
        #expect(revisions[3] == ["_id": .string(id)])
    }

    @Test func answersBecomeCouchDBsErrors() {
        #expect(GatewayService.verdict(.null) == nil)
        #expect(GatewayService.verdict(1) == nil)
        #expect(GatewayService.verdict(["forbidden": "no"]) == .forbidden("no"))
        #expect(GatewayService.verdict(["unauthorized": "who?"])?.sofaCode == .unauthorized)
        #expect(GatewayService.verdict(["error": "validation_error", "reason": "TypeError: x"])?.message.contains("TypeError: x") == true)
    }
}
