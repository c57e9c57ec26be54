import Testing
@testable import SofaCore

@Suite struct RevIDTests {
    // ASCII, binary hex
    static let valid: [(String, String)] = [
        ("3-abcd", "03abcd"),
        ("1-00", "0100"),
        ("127-ff", "7fff"),
        ("128-ff", "8001ff"),
        ("300-0123456789abcdef", "ac020123456789abcdef"),
        ("4294967295-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55", "ffffffff0fe9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55"),
        ("2-" + String(repeating: "ab", count: 40), "02" + String(repeating: "ab", count: 40)),
    ]

    @Test(arguments: valid)
    func asciiAndBinary(_ ascii: String, _ binaryHex: String) throws {
        let rev = try RevID.parse(ascii)
        #expect(rev.ascii == ascii)
        #expect(rev.description == ascii)
        #expect(Hex.string(rev.binary) == binaryHex)
        #expect(try RevID(binary: hexBytes(binaryHex)) == rev)
        #expect(RevID.tryParse(binary: hexBytes(binaryHex)) == rev)
    }

    static let invalidASCII: [(String, String)] = [
        ("", "missing generation"),
        ("-abcd", "missing generation"),
        ("0-abcd", "start with 0"),
        ("01-abcd", "start with 0"),
        ("+1-abcd", "missing generation"),
        (" 1-abcd", "missing generation"),
        ("1 -abcd", "expected '-'"),
        ("1-abcd ", "odd number"),
        ("1- abcd", "odd number"),
        ("4294967296-abcd", "generation above"),
        ("99999999999999999999999-ab", "generation above"),
        ("1abcd", "expected '-'"),
        ("1-", "missing digest"),
        ("1-abc", "odd number"),
        ("1-ABCD", "lowercase hex"),
        ("1-abcg", "lowercase hex"),
        ("1-ab-cd", "odd number"),
        ("1-" + String(repeating: "ab", count: 41), "longer than 40"),
        ("1@abcd", "expected '-'"),
    ]

    @Test(arguments: invalidASCII)
    func rejectsASCII(_ ascii: String, _ reason: String) {
        #expect(RevID.tryParse(ascii) == nil)
        #expect {
            try RevID.parse(ascii)
        } throws: { error in
            (error as? SofaError).map { $0.is(.badRevisionID) && $0.message.contains(reason) } ?? false
        }
    }

    static let invalidBinary: [(String, String)] = [
        ("", "bad generation"),
        ("00ab", "version vector"),
        ("03", "digest must be"),
        ("83", "bad generation"),
        ("8300ab", "bad generation"),  // padded varint
        ("8080808010ab", "out of range"),  // 2^32
        ("ffffffffffffffffffff01ab", "bad generation"),
        ("01" + String(repeating: "ab", count: 41), "digest must be"),
    ]

    @Test(arguments: invalidBinary)
    func rejectsBinary(_ hex: String, _ reason: String) {
        #expect(RevID.tryParse(binary: hexBytes(hex)) == nil)
        #expect {
            try RevID(binary: hexBytes(hex))
        } throws: { error in
            (error as? SofaError).map { $0.is(.corruptRevisionData) && $0.message.contains(reason) } ?? false
        }
    }

    // Sorted ascending.
    static let ordered = ["1-ff", "2-00", "2-0000", "2-0001", "2-01", "2-ff", "10-00", "300-00"]

    @Test func ordering() throws {
        let revs = try Self.ordered.map { ascii throws(SofaError) in try RevID.parse(ascii) }
        for i in revs.indices {
            for j in revs.indices {
                #expect((revs[i] < revs[j]) == (i < j), "\(revs[i]) vs \(revs[j])")
                #expect((revs[i] == revs[j]) == (i == j))
            }
        }
        #expect(revs.shuffled().sorted() == revs)
    }

    @Test func initFromParts() throws {
        #expect(try RevID(generation: 3, digest: [0xab, 0xcd]).ascii == "3-abcd")
        #expect(throws: SofaError.self) { try RevID(generation: 0, digest: [1]) }
        #expect(throws: SofaError.self) { try RevID(generation: 1, digest: []) }
        #expect(throws: SofaError.self) { try RevID(generation: 1, digest: Array(repeating: 1, count: 41)) }
    }

    // Expected values computed with Python's hashlib over the documented byte layout.
    static let generated: [(parent: String?, deleted: Bool, body: JSON?, expected: String)] = [
        (nil, false, ["key": "value"], "1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55"),
        ("1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55", false, ["key": "value2"],
         "2-984606cb56dc0c3a2ecca94e1b663096fa002871"),
        ("1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55", true, nil, "2-afc863568aaf30e8450e7638ce3ff8c09b968bda"),
        ("1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55", true, [:], "2-afc863568aaf30e8450e7638ce3ff8c09b968bda"),
        (nil, false, ["b": [1, 2.0, "é"], "a": ["z": nil, "y": true]], "1-c49e831ba7a2b6606b139df3e5f70380638689ca"),
        ("41-abcd", true, ["x": "a\nb"], "42-5d2210e39b8965af4985cda8b2f275e96967066f"),
        (nil, false, nil, "1-a5bb2524156f3e56dcc4e5c52c73c46f82c2efb0"),
    ]

    @Test(arguments: generated)
    func deterministicGeneration(_ c: (parent: String?, deleted: Bool, body: JSON?, expected: String)) throws {
        let parent = try c.parent.map { p throws(SofaError) in try RevID.parse(p) }
        #expect(RevID.generate(parent: parent, deleted: c.deleted, body: c.body).ascii == c.expected)
    }

    @Test func generationDependsOnKeyOrderOnlyThroughCanonicalForm() throws {
        let a = try JSON.parse("{\"a\":1,\"b\":2.0}")
        let b = try JSON.parse("{ \"b\" : 2, \"a\" : 1 }")
        #expect(RevID.generate(parent: nil, deleted: false, body: a) == RevID.generate(parent: nil, deleted: false, body: b))
        #expect(RevID.generate(parent: nil, deleted: false, body: a) != RevID.generate(parent: nil, deleted: true, body: a))
    }

    @Test func longParentIsCappedAt255() throws {
        // Parent ASCII is 10 + 1 + 80 = 91 bytes, under the cap; check the cap with a direct SHA-1.
        let parent = try RevID.parse("4000000000-" + String(repeating: "cd", count: 40))
        var input: [UInt8] = [91] + parent.asciiBytes + [0]
        input += Array("{}".utf8)
        let rev = RevID.generate(parent: parent, deleted: false, body: nil)
        #expect(rev.generation == 4000000001)
        #expect(rev.digest == sha1(input))
        #expect(!(try RevID.parse("4294967295-ab")).canHaveChild)
    }
}

@Suite struct DocumentIDTests {
    static let valid = ["a", "doc-1", "_design/x", "héllo wörld", "😀", String(repeating: "x", count: 240),
                        String(repeating: "é", count: 120), "~abc", "a b"]

    @Test(arguments: valid)
    func accepts(_ id: String) throws {
        try DocumentID.validate(id)
        #expect(DocumentID.isValid(id))
    }

    static let invalid: [(String, String)] = [
        ("", "empty"),
        (String(repeating: "x", count: 241), "241 bytes"),
        (String(repeating: "é", count: 120) + "x", "241 bytes"),
        ("a\u{0}b", "U+0000"),
        ("a\nb", "U+000A"),
        ("tab\t", "U+0009"),
        ("del\u{7f}", "U+007F"),
        ("c1\u{85}", "U+0085"),
    ]

    @Test(arguments: invalid)
    func rejects(_ id: String, _ reason: String) {
        #expect(!DocumentID.isValid(id))
        #expect {
            try DocumentID.validate(id)
        } throws: { error in
            (error as? SofaError).map { $0.is(.badDocID) && $0.message.contains(reason) } ?? false
        }
    }

    @Test func generated() throws {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = DocumentID.generate()
            #expect(id.utf8.count == 23)
            #expect(id.first == "~")
            #expect(id.dropFirst().allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            try DocumentID.validate(id)
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }
}

func hexBytes(_ hex: String) -> [UInt8] {
    let chars = Array(hex.utf8)
    return stride(from: 0, to: chars.count, by: 2).map { UInt8(String(decoding: chars[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
}
