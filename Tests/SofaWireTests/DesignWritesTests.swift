import SofaCore
import SofaWire
import Testing

/// A router tells design-document writes from the others without decoding them.
@Suite struct DesignWritesTests {
    /// Whether the encoded request's write touches a design document, as the gateway reads it.
    func touches(_ operation: Op) -> Bool {
        let bytes = Request(id: 1, database: "db", operation: operation).encoded()
        var touched = false
        _ = bytes.withUnsafeBytes { buffer in
            ForwardedRequest.peek(buffer, operations: [operation.kind.rawValue]) { field, payload in
                touched = DesignWrites.touchesDesignDocument(operation: field, payload: payload)
                return true
            }
        }
        return touched
    }

    @Test func designDocumentsAreFoundInEveryWrite() {
        let body = Array(#"{"a":1}"#.utf8)
        #expect(touches(.putDocument(id: "_design/v", rev: "", body: body, deleted: false)))
        #expect(!touches(.putDocument(id: "design/v", rev: "", body: body, deleted: false)))
        #expect(!touches(.putDocument(id: "_local/_design/x", rev: "", body: body, deleted: false)))
        #expect(touches(.deleteDocument(id: "_design/v", rev: "1-a")))
        #expect(!touches(.deleteDocument(id: "doc", rev: "1-a")))
        #expect(touches(.insertRevision(RevisionInsert(id: "_design/v", history: ["1-a"], body: body))))
        #expect(!touches(.insertRevision(RevisionInsert(id: "v", history: ["1-a"], body: body))))
        let plain: [BulkItem] = (0..<50).map { .put(id: "d\($0)", rev: "", body: body, deleted: false) }
        #expect(!touches(.bulkWrite(plain)))
        #expect(touches(.bulkWrite(plain + [.insert(RevisionInsert(id: "_design/late", history: ["2-b", "1-a"], body: body))])))
        #expect(touches(.bulkWrite([.put(id: "_design/first", rev: "", body: body, deleted: false)] + plain)))
        // A body that mentions one is not a write of one.
        #expect(!touches(.putDocument(id: "d", rev: "", body: Array(#"{"x":"_design/v"}"#.utf8), deleted: false)))
    }

    @Test func bytesThatAreNotWellFormedCountAsDesignWrites() {
        let garbage: [UInt8] = [0x0a, 0xff, 0xff]
        let touched = garbage.withUnsafeBytes { DesignWrites.touchesDesignDocument(operation: OperationKind.bulkWrite.rawValue, payload: $0) }
        #expect(touched)
    }
}
