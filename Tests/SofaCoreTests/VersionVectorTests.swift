import Testing
@testable import SofaCore

@Suite struct VersionVectorCodecTests {
    static let valid: [(String, String)] = [
        ("1a@*", "001a00"),
        ("3@c0ffee", "0003eeff8306"),
        ("1a@*,3@c0ffee", "001a0003eeff8306"),
        ("ffffffffffffffff@1", "00ffffffffffffffffff0101"),
        ("80@ffffffffffffffff,1@*", "008001ffffffffffffffffff010100"),
    ]

    @Test(arguments: valid)
    func asciiAndBinary(_ ascii: String, _ binaryHex: String) throws {
        let vector = try VersionVector.parse(ascii)
        #expect(vector.ascii == ascii)
        #expect(Hex.string(vector.binary) == binaryHex)
        #expect(try VersionVector(binary: hexBytes(binaryHex)) == vector)
        #expect(vector.current?.ascii == ascii.split(separator: ",").first.map(String.init))
    }

    static let invalidASCII: [(String, String)] = [
        ("", "Empty"),
        ("0@*", "generation 0"),
        ("1@0", "peer 0"),
        ("01@*", "bad hex generation"),
        ("1@01", "bad hex peer"),
        ("A@*", "bad hex generation"),
        ("1@AB", "bad hex peer"),
        ("1@", "bad hex peer"),
        ("@*", "bad hex generation"),
        ("1*", "expected '@'"),
        ("10000000000000000@*", "bad hex generation"),
        ("1@*,", "unexpected character"),
        ("1@*, 2@a", "bad hex generation"),
        ("1@* ", "unexpected character"),
        ("1@*,2@*", "twice"),
        ("1@a;2@b", "unexpected character"),
    ]

    @Test(arguments: invalidASCII)
    func rejectsASCII(_ ascii: String, _ reason: String) {
        #expect(VersionVector.tryParse(ascii) == nil)
        #expect {
            try VersionVector.parse(ascii)
        } throws: { error in
            (error as? SofaError).map { $0.is(.badRevisionID) && $0.message.contains(reason) } ?? false
        }
    }

    static let invalidBinary: [(String, String)] = [
        ("", "missing leading"),
        ("0100", "missing leading"),
        ("00", "empty"),
        ("0001", "bad varint"),
        ("000001", "generation 0"),
        ("00018000", "bad varint"),
        ("0001010101", "twice"),
        ("00ffffffffffffffffff0200", "bad varint"),
    ]

    @Test(arguments: invalidBinary)
    func rejectsBinary(_ hex: String, _ reason: String) {
        #expect(VersionVector.tryParse(binary: hexBytes(hex)) == nil)
        #expect {
            try VersionVector(binary: hexBytes(hex))
        } throws: { error in
            (error as? SofaError).map { $0.is(.corruptRevisionData) && $0.message.contains(reason) } ?? false
        }
    }

    @Test func singleVersion() throws {
        #expect(try Version.parse("2a@b").generation == 42)
        #expect(try Version.parse("2a@b").peer == 11)
        #expect(try Version(generation: 5, peer: 0).ascii == "5@*")
        #expect(Version.tryParse("2a@b,1@*") == nil)
        #expect(throws: SofaError.self) { try Version(generation: 0, peer: 1) }
        #expect(throws: SofaError.self) { try VersionVector([Version(generation: 1, peer: 2), Version(generation: 3, peer: 2)]) }
    }
}

@Suite struct VersionVectorOperationTests {
    func vv(_ s: String) -> VersionVector { try! VersionVector.parse(s) }

    @Test func lookup() {
        let v = vv("5@*,3@a")
        #expect(v[0] == 5)
        #expect(v[0xa] == 3)
        #expect(v[0xb] == 0)
    }

    static let comparisons: [(String, String, VersionOrder)] = [
        ("1@a", "1@a", .same),
        ("2@a,1@b", "1@b,2@a", .same),
        ("2@a", "1@a", .newer),
        ("1@a", "2@a", .older),
        ("1@a,1@b", "1@a", .newer),
        ("1@a", "1@a,1@b", .older),
        ("2@a", "1@a,1@b", .conflicting),
        ("1@a", "1@b", .conflicting),
        ("3@*,2@a", "2@*,3@a", .conflicting),
        ("3@*,2@a", "2@*,2@a", .newer),
    ]

    @Test(arguments: comparisons)
    func compare(_ a: String, _ b: String, _ expected: VersionOrder) {
        #expect(vv(a).compare(to: vv(b)) == expected)
    }

    static let increments: [(String, UInt64, String)] = [
        ("1@a", 0, "1@*,1@a"),
        ("1@a,4@*", 0, "5@*,1@a"),
        ("1@a,4@b", 0xb, "5@b,1@a"),
        ("1@a", 0xa, "2@a"),
    ]

    @Test(arguments: increments)
    func increment(_ start: String, _ peer: UInt64, _ expected: String) throws {
        var v = vv(start)
        try v.increment(peer: peer)
        #expect(v.ascii == expected)
        #expect(v.compare(to: vv(start)) == .newer)
        #expect(throws: SofaError.self) { try vv("ffffffffffffffff@a").incremented(peer: 0xa) }
    }

    static let merges: [(String, String, String)] = [
        ("1@a", "1@a", "1@a"),
        ("2@a,1@b", "1@a,3@b", "2@a,3@b"),
        ("2@a", "1@b", "2@a,1@b"),
        ("1@b", "2@a", "1@b,2@a"),
        ("5@*,1@a", "3@c,2@a", "5@*,2@a,3@c"),
    ]

    @Test(arguments: merges)
    func merge(_ a: String, _ b: String, _ expected: String) {
        let m = vv(a).merged(with: vv(b))
        #expect(m.ascii == expected)
        #expect(m.compare(to: vv(b)) != .older && m.compare(to: vv(a)) != .older)
        #expect(m.compare(to: vv(b).merged(with: vv(a))) == .same)
    }

    static let meCases: [(String, UInt64, String)] = [
        ("3@*,1@a", 0xbeef, "3@beef,1@a"),
        ("1@a", 0xbeef, "1@a"),
        ("3@*,5@beef", 0xbeef, "5@beef"),
    ]

    @Test(arguments: meCases)
    func expandAndCompactMe(_ v: String, _ peer: UInt64, _ expanded: String) throws {
        let e = try vv(v).expandingMe(to: peer)
        #expect(e.ascii == expanded)
        #expect(try e.compactingMe(from: peer)[0] == max(vv(v)[0], vv(v)[peer]))
        #expect(throws: SofaError.self) { try vv(v).expandingMe(to: 0) }
    }

    static let deltas: [(String, String, String?)] = [
        ("3@a,2@b,1@c", "1@a,2@b", "3@a,1@c"),
        ("3@a,2@b", "3@a,2@b", ""),
        ("1@a", "2@a", nil),
        ("2@a", "1@a,1@b", nil),
        ("2@a,1@b", "1@a,2@b", nil),
    ]

    @Test(arguments: deltas)
    func deltaAndApply(_ target: String, _ base: String, _ expected: String?) throws {
        let delta = vv(target).delta(from: vv(base))
        #expect(delta?.ascii == expected)
        if let delta {
            let rebuilt = try vv(base).applying(delta: delta)
            #expect(rebuilt.compare(to: vv(target)) == .same)
        }
    }

    @Test func applyingOlderDeltaThrows() {
        #expect(throws: SofaError.self) { try vv("5@a").applying(delta: vv("3@a")) }
    }
}
