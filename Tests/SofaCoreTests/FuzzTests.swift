import SofaTestSupport
import Testing
@testable import SofaCore

/// 100,000 random byte strings through every parser and decoder: each must throw or give a value
/// that re-encodes to the same bytes (JSON: whose compact form is a fixed point).
@Suite(.ownThreads) struct FuzzTests {
    static let iterations = 100_000

    /// Alphabets that make a parse get somewhere, plus fully random bytes.
    static let alphabets: [[UInt8]] = [
        Array(0...255),
        Array("0123456789abcdef-".utf8),
        Array("0123456789abcdef@*,".utf8),
        Array("{}[]\":,0123456789.eE+-truefalsn \\u\"ab\u{e9}".utf8),
        [0, 1, 2, 3, 0x7f, 0x80, 0x81, 0xab, 0xcd, 0xff, 0x7b, 0x7d],
    ]

    func randomInput(_ rng: inout SplitMix64, seeds: [[UInt8]]) -> [UInt8] {
        if rng.next() % 4 == 0, let seed = seeds.randomElement(using: &rng) {
            // Mutate a valid encoding: flip, insert or delete a byte, or truncate.
            var bytes = seed
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let i = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
                switch rng.next() % 4 {
                case 0 where !bytes.isEmpty: bytes[i] ^= UInt8(1 << (rng.next() % 8))
                case 1: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: i)
                case 2 where !bytes.isEmpty: bytes.remove(at: i)
                default: bytes = Array(bytes.prefix(i))
                }
            }
            return bytes
        }
        let alphabet = Self.alphabets[Int(rng.next() % UInt64(Self.alphabets.count))]
        return (0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
    }

    @Test func everyDecoderThrowsOrRoundTrips() {
        var rng = SplitMix64(seed: 0x50FA)
        let trees = (0..<20).map { randomTree(seed: $0) }
        let seeds: [[UInt8]] = trees.map { $0.encoded() } + trees.compactMap { $0.recordColumns()?.extra }
            + [Array("3-abcd".utf8), Array("1a@*,3@c0ffee".utf8), [0, 0x1a, 0, 3, 0xee, 0xff, 0x83, 6], [3, 0xab, 0xcd],
               Array("{\"a\":[1,2.5e3,\"\\u00e9\"],\"b\":{\"c\":null}}".utf8)]
        var accepted = [String: Int]()
        var failures: [String] = []
        // Plain checks in the loop (an #expect per accepted value would dominate the run time).
        func check(_ ok: Bool, _ what: String, _ input: [UInt8]) {
            if !ok && failures.count < 20 { failures.append("\(what): \(Hex.string(input))") }
        }
        for _ in 0..<Self.iterations {
            let input = randomInput(&rng, seeds: seeds)
            if let value = JSON.tryParse(input) {
                accepted["json", default: 0] += 1
                let compact = value.compactBytes()
                check(JSON.tryParse(compact)?.compactBytes() == compact, "JSON compact", input)
                let canonical = value.canonicalBytes()
                check(JSON.tryParse(canonical)?.canonicalBytes() == canonical, "JSON canonical", input)
            }
            // (String(decoding:) would throw internally to repair invalid UTF-8, which is slow
            // under a test harness that records a backtrace per throw.)
            let validated = String(validating: input, as: UTF8.self)
            let isUTF8 = validated != nil
            let text = validated ?? ""
            if let rev = RevID.tryParse(ascii: input) {
                accepted["revID ascii", default: 0] += 1
                check(rev.asciiBytes == input, "RevID ASCII", input)
                check(isUTF8 && RevID.tryParse(text) == rev, "RevID String", input)
            }
            if let rev = RevID.tryParse(binary: input) {
                accepted["revID binary", default: 0] += 1
                check(rev.binary == input, "RevID binary", input)
            }
            if let vector = VersionVector.tryParse(ascii: input) {
                accepted["vector ascii", default: 0] += 1
                check(isUTF8 && VersionVector.tryParse(text) == vector, "vector String", input)
                check(Array(vector.ascii.utf8) == input, "vector ASCII", input)
            }
            if isUTF8, let version = DocumentVersion.tryParse(ascii: text) {
                // Lossy by design (LiteCore keeps a vector's current version only): its ASCII form
                // is the input up to the first comma.
                accepted["revID-or-version ascii", default: 0] += 1
                let head = input.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).first ?? []
                check(Array(version.ascii.utf8) == Array(head), "DocumentVersion ASCII", input)
                check(DocumentVersion.tryParse(binary: version.binary) == version, "DocumentVersion binary", input)
            }
            if let vector = VersionVector.tryParse(binary: input) {
                accepted["vector binary", default: 0] += 1
                check(vector.binary == input, "vector binary", input)
            }
            if isUTF8, let version = Version.tryParse(text) {
                accepted["version", default: 0] += 1
                check(Array(version.ascii.utf8) == input, "Version", input)
            }
            if let version = DocumentVersion.tryParse(binary: input) {
                check(version.binary == input, "DocumentVersion", input)
            }
            if let tree = RevTree.tryDecode(input, currentBody: [0x7b, 0x7d]) {
                accepted["tree", default: 0] += 1
                check(tree.encoded() == input || tree.encoded(currentBodyInRecord: true) == input, "RevTree", input)
            }
            if isUTF8, DocumentID.isValid(text) {
                check((1...240).contains(input.count) && !input.contains(0), "DocumentID", input)
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        // The fuzzer must reach the accepting paths of every decoder, or it tests only rejection.
        for kind in ["json", "revID ascii", "revID binary", "vector ascii", "vector binary", "version", "tree"] {
            #expect(accepted[kind, default: 0] > 20, "\(kind): \(accepted[kind, default: 0]) accepted")
        }
    }
}
