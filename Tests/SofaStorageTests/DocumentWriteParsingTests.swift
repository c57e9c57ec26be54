import SofaCore
@testable import SofaStorage
import Testing

/// `StorageService.documentWrite`: how a put's wire id/rev/deleted and JSON body become a
/// `DocumentWrite`.
@Suite struct DocumentWriteParsingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var id = "doc"
        var rev = ""
        var body: String
        var deleted = false
        /// nil when a failure is expected.
        var expected: (id: String, parent: String?, body: String, deleted: Bool)?
        var failure: SofaError.Code?

        var testDescription: String { name }
    }

    static let rev1 = "1-6f9a1fe5dfad0377e089c5e8e0afab815938295d"
    static let longID = String(repeating: "i", count: 240)

    static let cases: [Case] = [
        Case(name: "plain object", body: #"{"x":1}"#, expected: ("doc", nil, #"{"x":1}"#, false)),
        Case(name: "empty body is an empty object", body: "", expected: ("doc", nil, "{}", false)),
        Case(name: "invalid JSON", body: #"{"x":"#, failure: .badJSON),
        Case(name: "not JSON at all", body: "hello", failure: .badJSON),
        Case(name: "trailing garbage", body: #"{"x":1} x"#, failure: .badJSON),
        Case(name: "array body", body: "[1,2]", failure: .badJSON),
        Case(name: "string body", body: #""text""#, failure: .badJSON),
        Case(name: "null body", body: "null", failure: .badJSON),
        Case(name: "_id in the body matching the wire id", body: #"{"_id":"doc","x":1}"#,
             expected: ("doc", nil, #"{"x":1}"#, false)),
        Case(name: "_id in the body only", id: "", body: #"{"_id":"fromBody","x":1}"#,
             expected: ("fromBody", nil, #"{"x":1}"#, false)),
        Case(name: "_id mismatch", body: #"{"_id":"other"}"#, failure: .badDocID),
        Case(name: "_id not a string", body: #"{"_id":5}"#, failure: .badDocID),
        Case(name: "_rev in the body is used", body: #"{"_rev":"\#(rev1)","x":2}"#,
             expected: ("doc", rev1, #"{"x":2}"#, false)),
        Case(name: "_rev in the body matching the wire rev", rev: rev1, body: #"{"_rev":"\#(rev1)"}"#,
             expected: ("doc", rev1, "{}", false)),
        Case(name: "_rev mismatch", rev: rev1, body: #"{"_rev":"2-abcd"}"#, failure: .badRevisionID),
        Case(name: "_rev not a string", body: #"{"_rev":1}"#, failure: .badRevisionID),
        Case(name: "malformed wire rev", rev: "x-1", body: "{}", failure: .badRevisionID),
        Case(name: "malformed body rev", body: #"{"_rev":"1-xyz"}"#, failure: .badRevisionID),
        Case(name: "_deleted true", rev: rev1, body: #"{"_deleted":true}"#, expected: ("doc", rev1, "{}", true)),
        Case(name: "_deleted false", body: #"{"_deleted":false,"y":null}"#, expected: ("doc", nil, #"{"y":null}"#, false)),
        Case(name: "wire deleted wins over _deleted false", rev: rev1, body: #"{"_deleted":false}"#, deleted: true,
             expected: ("doc", rev1, "{}", true)),
        Case(name: "_deleted not a boolean", body: #"{"_deleted":"yes"}"#, failure: .invalidParameter),
        Case(name: "other underscore properties are kept", body: #"{"_attachments":{},"a":1}"#,
             expected: ("doc", nil, #"{"_attachments":{},"a":1}"#, false)),
        Case(name: "240-byte doc ID", id: longID, body: "{}", expected: (longID, nil, "{}", false)),
        Case(name: "241-byte doc ID", id: longID + "i", body: "{}", failure: .badDocID),
        Case(name: "241-byte doc ID in the body", id: "", body: #"{"_id":"\#(longID)i"}"#, failure: .badDocID),
        Case(name: "control character in the doc ID", id: "a\u{1}b", body: "{}", failure: .badDocID),
    ]

    @Test(arguments: cases)
    func documentWrite(_ c: Case) throws {
        do {
            let write = try StorageService.documentWrite(id: c.id, rev: c.rev, body: Array(c.body.utf8), deleted: c.deleted)
            guard let expected = c.expected else {
                Issue.record("expected \(String(describing: c.failure)), got \(write)")
                return
            }
            #expect(write.id == expected.id)
            #expect(write.parent?.ascii == expected.parent)
            #expect(String(decoding: write.compactBody, as: UTF8.self) == expected.body)
            #expect(write.deleted == expected.deleted)
        } catch {
            #expect(c.failure != nil, "unexpected \(error)")
            #expect(error.sofaCode == c.failure, "\(error)")
        }
    }

    /// Bodies already compact skip the JSON tree; the write must be the one the tree gives.
    @Test(arguments: [#"{"b":1,"a":{"d":[1,{"z":0,"y":"é"}],"c":2.5}}"#, #"{"x":1}"#, #"{ "x": 1 }"#, #"{"a":1.0,"b":-0}"#,
                      #"{"s":"\u0041\n","t":[true,false,null]}"#, #"{"big":123456789012345678901234567890,"e":1e-07}"#,
                      #"{"p":{"@type":"blob","digest":"sha1-x"}}"#, #"{"_attachments":{},"z":1}"#, #"{"k":1,"k":2}"#])
    func compactBodiesGiveTheTreesWrite(_ body: String) throws {
        let bytes = Array(body.utf8)
        let direct = try StorageService.documentWrite(id: "d", rev: Self.rev1, body: bytes, deleted: false)
        let viaTree = try StorageService.documentWrite(try StorageService.documentFields(id: "d", rev: Self.rev1, body: bytes,
                                                                                       deleted: false))
        #expect(direct.compactBody == viaTree.compactBody)
        #expect(direct.canonicalBody == viaTree.canonicalBody)
        #expect(direct.revID(on: try RevID.parse(Self.rev1)) == viaTree.revID(on: try RevID.parse(Self.rev1)))
        #expect(direct.revID(on: nil) == viaTree.revID(on: nil))
    }

    /// An empty ID (on the wire and in the body) means "generate one": `~` and 22 URL-safe characters.
    @Test(arguments: ["{}", #"{"_id":""}"#])
    func emptyIDIsGenerated(_ body: String) throws {
        let first = try StorageService.documentWrite(id: "", rev: "", body: Array(body.utf8), deleted: false)
        let second = try StorageService.documentWrite(id: "", rev: "", body: Array(body.utf8), deleted: false)
        #expect(first.id.hasPrefix("~"))
        #expect(first.id.utf8.count == 23)
        #expect(first.id != second.id)
        #expect(String(decoding: first.compactBody, as: UTF8.self) == "{}")
    }
}
