import PropertyBased
import SofaTestSupport
import Testing
@testable import SofaCore

/// `JSON.scanCompactObject` against the tree path: what it accepts it must describe exactly as
/// `JSON.parse` followed by the writers do, and it must accept what the compact writer writes.
@Suite(.ownThreads) struct CompactScanTests {
    // MARK: Tables

    /// Compact objects the scan must accept: input, canonical form, "digest" key, top-level "_" key.
    static let accepted: [(String, String, Bool, Bool)] = [
        ("{}", "{}", false, false),
        (#"{"b":1,"a":{"d":[1,{"z":0,"y":"é"}],"c":2.5}}"#, #"{"a":{"c":2.5,"d":[1,{"y":"é","z":0}]},"b":1}"#, false, false),
        (#"{"a":1,"b":2}"#, #"{"a":1,"b":2}"#, false, false),
        (#"{"ab":1,"a":2,"":3}"#, #"{"":3,"a":2,"ab":1}"#, false, false),
        (#"{"é":1,"z":2,"Z":3,"😀":4}"#, #"{"Z":3,"z":2,"é":1,"😀":4}"#, false, false),
        (#"{"a":{"c":1,"b":2},"b":[{"y":1,"x":2},3,[{"q":{"s":1,"r":2}}]]}"#,
         #"{"a":{"b":2,"c":1},"b":[{"x":2,"y":1},3,[{"q":{"r":2,"s":1}}]]}"#, false, false),
        (#"{"z":[[],{}],"y":{"x":{}}}"#, #"{"y":{"x":{}},"z":[[],{}]}"#, false, false),
        (#"{"_id":"x","digest":"sha1-a"}"#, #"{"_id":"x","digest":"sha1-a"}"#, true, true),
        (#"{"_rev":"1-a","a":1}"#, #"{"_rev":"1-a","a":1}"#, false, true),
        (#"{"b":{"_id":1},"a":[{"digest":null}]}"#, #"{"a":[{"digest":null}],"b":{"_id":1}}"#, true, false),
        (#"{"p":{"@type":"blob","digest":"d"}}"#, #"{"p":{"@type":"blob","digest":"d"}}"#, true, false),
        (#"{"digests":1,"dig":2,"Digest":3,"x":"digest"}"#, #"{"Digest":3,"dig":2,"digests":1,"x":"digest"}"#, false, false),
        (#"{"n":[0,-1,42,9223372036854775807,-9223372036854775808]}"#,
         #"{"n":[0,-1,42,9223372036854775807,-9223372036854775808]}"#, false, false),
        (#"{"d":[2.5,-0.1,1e-07,1.5e+300,5e-324,1.7976931348623157e+308,9.223372036854776e+18,-9.223372036854776e+18]}"#,
         #"{"d":[2.5,-0.1,1e-07,1.5e+300,5e-324,1.7976931348623157e+308,9.223372036854776e+18,-9.223372036854776e+18]}"#, false, false),
        (#"{"l":[true,false,null]}"#, #"{"l":[true,false,null]}"#, false, false),
        (#"{"s":"\"\\\b\f\n\r\t\u0000\u000b\u001f/"}"#, #"{"s":"\"\\\b\f\n\r\t\u0000\u000b\u001f/"}"#, false, false),
        ("{\"k\":\"\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}\"}", "{\"k\":\"\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}\"}", false, false),
        ("{\"K\":1,\"\u{212A}x\":2,\"e\u{301}\":3}", "{\"K\":1,\"e\u{301}\":3,\"\u{212A}x\":2}", false, false),
    ]

    @Test(arguments: accepted)
    func accepts(_ input: String, _ canonical: String, _ digest: Bool, _ underscore: Bool) throws {
        let bytes = Array(input.utf8)
        let scan = try #require(JSON.scanCompactObject(bytes), "\(input)")
        #expect(String(decoding: scan.canonical, as: UTF8.self) == canonical)
        #expect(scan.hasDigestKey == digest)
        #expect(scan.hasUnderscoreTopLevelKey == underscore)
        #expect(checkSound(bytes) == nil)
    }

    /// One table per reason the scan gives up: reason, input.
    static let refused: [(String, String)] = [
        ("invalid JSON", ""), ("invalid JSON", "{"), ("invalid JSON", #"{"a":1"#), ("invalid JSON", #"{"a":}"#),
        ("invalid JSON", #"{"a":1,}"#), ("invalid JSON", "{a:1}"), ("invalid JSON", #"{"a":tru}"#),
        ("invalid JSON", #"{"a":01}"#), ("invalid JSON", #"{"a":1.}"#), ("invalid JSON", #"{"a":.5}"#),
        ("invalid JSON", #"{"a":+1}"#), ("invalid JSON", #"{"a":NaN}"#), ("invalid JSON", #"{"a":1e400}"#),
        ("invalid JSON", #"{"a":1}x"#), ("invalid JSON", #"{"a":1}}"#), ("invalid JSON", #"{"a":"\x"}"#),
        ("invalid JSON", #"{"a":"\u12"}"#), ("invalid JSON", #"{"a":"x}"#), ("invalid JSON", #"{"a":[1,]}"#),
        ("invalid JSON", #"{"a":[1}"#), ("invalid JSON", #"{"a":"\ud800"}"#), ("invalid JSON", #"{"a":1e}"#),
        ("whitespace", #"{ "a":1}"#), ("whitespace", #"{"a" :1}"#), ("whitespace", #"{"a": 1}"#),
        ("whitespace", #"{"a":1 }"#), ("whitespace", " {\"a\":1}"), ("whitespace", "{\"a\":1}\n"),
        ("whitespace", #"{"a":[1, 2]}"#), ("whitespace", "{\"a\":\t1}"), ("whitespace", "{\r\"a\":1}"),
        ("escape", #"{"a":"\/"}"#), ("escape", #"{"a":"\u0041"}"#), ("escape", #"{"a":"\u00e9"}"#),
        ("escape", #"{"a":"\u001F"}"#), ("escape", #"{"a":"\u000a"}"#), ("escape", #"{"a":"\u0008"}"#),
        ("escape", #"{"a":"\u0009"}"#), ("escape", #"{"a":"\u000c"}"#), ("escape", #"{"a":"\u000d"}"#),
        ("escape", #"{"a":"\u007f"}"#), ("escape", #"{"a":"\u0020"}"#), ("escape", #"{"a":"\ud83d\ude00"}"#),
        ("number", #"{"a":-0}"#), ("number", #"{"a":1.0}"#), ("number", #"{"a":-0.0}"#), ("number", #"{"a":0.0}"#),
        ("number", #"{"a":1E2}"#), ("number", #"{"a":1e2}"#), ("number", #"{"a":1e+2}"#), ("number", #"{"a":2.50}"#),
        ("number", #"{"a":0.10}"#), ("number", #"{"a":1e-7}"#), ("number", #"{"a":1.5E+300}"#),
        ("number", #"{"a":1.5e300}"#), ("number", #"{"a":1e-400}"#), ("number", #"{"a":9223372036854775808}"#),
        ("number", #"{"a":-9223372036854775809}"#), ("number", #"{"a":100000000000000000000}"#),
        ("number", #"{"a":1e16}"#), ("number", #"{"a":1e+16}"#), ("number", #"{"a":10000000000000000.0}"#), ("number", #"{"a":[0.30000000000000001]}"#),
        ("repeated key", #"{"a":1,"a":2}"#), ("repeated key", #"{"a":1,"a":1}"#), ("repeated key", #"{"b":1,"a":2,"b":3}"#),
        ("repeated key", #"{"x":{"y":1,"y":1}}"#), ("repeated key", #"{"x":[{"b":1,"c":2,"a":3,"b":4}]}"#),
        ("repeated key", "{\"é\":1,\"e\u{301}\":2}"), ("repeated key", "{\"K\":1,\"\u{212A}\":2}"),
        ("repeated key", "{\"\u{212A}\":1,\"a\":0,\"K\":2}"),
        ("escaped key", #"{"a\"b":1}"#), ("escaped key", #"{"a\\b":1}"#), ("escaped key", #"{"a\nb":1}"#),
        ("escaped key", #"{"\u0001":1}"#), ("escaped key", #"{"x":{"\t":1}}"#),
        ("not an object", "[]"), ("not an object", "1"), ("not an object", #""a""#), ("not an object", "null"),
        ("not an object", #"[{"a":1}]"#), ("not an object", "true"),
    ]

    @Test(arguments: refused)
    func refuses(_ reason: String, _ input: String) {
        #expect(JSON.scanCompactObject(Array(input.utf8)) == nil, "\(reason): \(input)")
    }

    /// Strict UTF-8, as `JSON.parse` checks it, and raw control characters.
    static let refusedBytes: [[UInt8]] = [
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0x01, 0x22, 0x7D],  // raw control character
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0x1F, 0x22, 0x7D],
        [0x7B, 0x22, 0x01, 0x22, 0x3A, 0x31, 0x7D],  // in a key
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC0, 0x80, 0x22, 0x7D],  // overlong
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC1, 0xBF, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xE0, 0x9F, 0xBF, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D],  // surrogate
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xBF, 0xBF, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xF4, 0x90, 0x80, 0x80, 0x22, 0x7D],  // beyond U+10FFFF
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xF5, 0x80, 0x80, 0x80, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0x80, 0x22, 0x7D],  // lone continuation byte
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xE2, 0x82, 0x22, 0x7D],  // truncated sequence
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x41, 0x22, 0x7D],
        [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D],  // in a key
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xF0, 0x9F, 0x98],  // truncated at the end
        [0xEF, 0xBB, 0xBF, 0x7B, 0x7D],  // byte-order mark
        Array(#"{"a":"abcdefghijklmnop"#.utf8) + [0x01] + Array(#"qrstuvwxyz0123456789"}"#.utf8),  // in a long run
        Array(#"{"a":"abcdefghijklmnop"#.utf8) + [0xFF] + Array(#"qrstuvwxyz0123456789"}"#.utf8),
        Array(#"{"abcdefghijklmnop"#.utf8) + [0x7F, 0x1F] + Array(#"qrstuvwxyz0123456789":1}"#.utf8),
    ]

    @Test(arguments: refusedBytes)
    func refusesBytes(_ input: [UInt8]) {
        #expect(JSON.scanCompactObject(input) == nil)
    }

    /// Nesting up to `JSON.maxDepth` is accepted, one level more is refused, as by `JSON.parse`.
    @Test func depthLimit() throws {
        func nested(_ depth: Int, arrays: Bool) -> [UInt8] {
            let open = arrays ? "[" : #"{"a":"#
            let close = arrays ? "]" : "}"
            return Array((#"{"a":"# + String(repeating: open, count: depth - 2) + "{}"
                          + String(repeating: close, count: depth - 2) + "}").utf8)
        }
        for arrays in [false, true] {
            let deepest = nested(JSON.maxDepth, arrays: arrays)
            let scan = try #require(JSON.scanCompactObject(deepest))
            #expect(scan.canonical == deepest)
            #expect(JSON.scanCompactObject(nested(JSON.maxDepth + 1, arrays: arrays)) == nil)
            #expect(JSON.tryParse(nested(JSON.maxDepth + 1, arrays: arrays)) == nil)
        }
    }

    /// Big objects sort with a different algorithm than small ones; both must agree with the tree.
    @Test func largeObjects() throws {
        for count in [33, 200] {
            var rng = SplitMix64(seed: UInt64(count))
            let keys = (0..<count).map { "k\($0)" }.shuffled(using: &rng)
            let members = keys.map { "\"\($0)\":{\"y\":1,\"x\":[\"\($0)\"]}" }
            let bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
            let scan = try #require(JSON.scanCompactObject(bytes))
            #expect(scan.canonical == (try JSON.parse(bytes)).canonicalBytes())
            let repeated = Array(("{" + (members + [members[count / 2]]).joined(separator: ",") + "}").utf8)
            #expect(JSON.scanCompactObject(repeated) == nil)
        }
    }

    /// The scan compares keys with "digest" and "_" by bytes, and only ASCII keys with each other:
    /// exact because no non-ASCII character is equal, as a Swift string, to one of those ASCII
    /// characters (the few that equal an ASCII character, like the Kelvin sign, are refused as
    /// repeated keys by `keysAreDistinctStrings`).
    @Test func noOtherSpellingOfTheKeysLookedFor() {
        let looked: Set<String> = ["d", "i", "g", "e", "s", "t", "_"]
        var equal: [UInt32] = []
        for value in UInt32(0x80)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if looked.contains(String(scalar)) { equal.append(value) }
        }
        #expect(equal.isEmpty)
    }

    // MARK: Properties

    /// Whatever the compact writer writes for an object, the scan accepts and describes exactly.
    @Test func acceptsWhatTheWriterWrites() async {
        await propertyCheck(count: 1000, input: ScanGens.object(unsafeKeys: false)) { value throws in
            let bytes = value.compactBytes()
            let scan = try #require(JSON.scanCompactObject(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            #expect(scan.canonical == value.canonicalBytes())
            #expect(scan.hasDigestKey == hasDigestKey(value))
            #expect(scan.hasUnderscoreTopLevelKey == hasUnderscoreKey(value))
        }
    }

    /// Keys with `"`, `\` or control characters are written escaped: the scan may refuse them, and
    /// whatever it accepts it describes exactly.
    @Test func escapedKeysAreRefusedOrCorrect() async {
        await propertyCheck(count: 500, input: ScanGens.object(unsafeKeys: true)) { value throws in
            let bytes = value.compactBytes()
            #expect(checkSound(bytes) == nil)
            if let scan = JSON.scanCompactObject(bytes) {
                #expect(scan.canonical == value.canonicalBytes())
            }
        }
    }

    /// Random mutations of compact objects (a bit flipped, a byte inserted or removed, a
    /// truncation) and renderings written otherwise than compact: the scan never vouches wrongly,
    /// and still accepts the mutants that happen to be compact.
    @Test func neverVouchesWrongly() {
        var rng = SplitMix64(seed: 0x5CA7)
        var failures: [String] = []
        var acceptedMutants = 0
        var acceptedRenderings = 0
        var variedRenderings = 0
        for _ in 0..<4000 {
            let value = ScanGens.randomObject(&rng, unsafeKeys: rng.next() % 4 == 0)
            let compact = value.compactBytes()
            for _ in 0..<4 {
                var bytes = compact
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let i = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
                    switch rng.next() % 5 {
                    case 0 where !bytes.isEmpty: bytes[i] ^= UInt8(1 << (rng.next() % 8))
                    case 1: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: i)
                    case 2: bytes.insert(Array(",:{}[]\" \\0-.e".utf8).randomElement(using: &rng)!, at: i)
                    case 3 where !bytes.isEmpty: bytes.remove(at: i)
                    default: bytes = Array(bytes.prefix(i))
                    }
                }
                if let failure = checkSound(bytes), failures.count < 20 { failures.append(failure) }
                if JSON.scanCompactObject(bytes) != nil, bytes != compact { acceptedMutants += 1 }
            }
            var renderer = Renderer(rng: rng)
            renderer.write(value)
            rng = renderer.rng
            if renderer.varied { variedRenderings += 1 }
            if let failure = checkSound(renderer.out), failures.count < 20 { failures.append(failure) }
            if JSON.scanCompactObject(renderer.out) != nil { acceptedRenderings += 1 }
        }
        #expect(failures.isEmpty, "\(failures)")
        // The checks must reach the accepting path with bytes other than the writer's, or they
        // test refusal only.
        #expect(acceptedMutants > 100, "\(acceptedMutants) mutants accepted")
        #expect(acceptedRenderings > 100 && variedRenderings > 1000, "\(acceptedRenderings) accepted, \(variedRenderings) varied")
    }

    /// The random objects must hold what the properties are about.
    @Test func generatorCoversTheInterestingShapes() {
        var rng = SplitMix64(seed: 7)
        let texts = (0..<300).map { _ in String(decoding: ScanGens.randomObject(&rng, unsafeKeys: false).compactBytes(), as: UTF8.self) }
        for needle in ["é", "😀", "\\n", "\\u00", "\\\"", "\\\\", "e-", "e+", ".", "9223372036854775807", "-",
                       "\"digest\"", "{\"_", ":{", ":[", "[{"] {
            #expect(texts.contains { $0.contains(needle) }, "\(needle)")
        }
        let values = (0..<300).map { _ in ScanGens.randomObject(&rng, unsafeKeys: false) }
        #expect(values.contains { $0.canonicalBytes() != $0.compactBytes() })
        #expect(values.contains { $0.canonicalBytes() == $0.compactBytes() && $0.objectValue!.count > 1 })
    }
}

// MARK: Helpers

/// nil when the scan refuses `bytes` or describes them exactly as the tree path does; otherwise
/// what it got wrong.
private func checkSound(_ bytes: [UInt8]) -> String? {
    guard let scan = JSON.scanCompactObject(bytes) else { return nil }
    let text = String(decoding: bytes, as: UTF8.self)
    guard let parsed = JSON.tryParse(bytes) else { return "accepted invalid JSON: \(Hex.string(bytes))" }
    guard parsed.objectValue != nil else { return "accepted a non-object: \(text)" }
    guard parsed.compactBytes() == bytes else { return "accepted non-compact bytes: \(text)" }
    guard scan.canonical == parsed.canonicalBytes() else { return "wrong canonical form: \(text)" }
    guard scan.hasDigestKey == hasDigestKey(parsed) else { return "wrong digest flag: \(text)" }
    guard scan.hasUnderscoreTopLevelKey == hasUnderscoreKey(parsed) else { return "wrong _ flag: \(text)" }
    return nil
}

/// Whether any object in `value` has the key "digest" (as storage looks for blob references).
private func hasDigestKey(_ value: JSON) -> Bool {
    switch value {
    case .object(let object): object.contains { $0.key == "digest" || hasDigestKey($0.value) }
    case .array(let array): array.contains(where: hasDigestKey)
    default: false
    }
}

private func hasUnderscoreKey(_ value: JSON) -> Bool {
    value.objectValue?.keys.contains { $0.utf8.first == UInt8(ascii: "_") } ?? false
}

/// Random JSON objects for the scan: nested objects and arrays, non-ASCII text, every escape the
/// writer writes, doubles of every magnitude and integers up to the limits of `Int64`.
enum ScanGens {
    static func object(unsafeKeys: Bool) -> Generator<JSON, some SendableSequenceType> {
        Gen<UInt64>.value().map { seed in
            var rng = SplitMix64(seed: seed)
            return randomObject(&rng, unsafeKeys: unsafeKeys)
        }
    }

    static let keys = ["", "a", "aa", "ab", "b", "B", "z", "digest", "digests", "dig", "_id", "_rev", "_deleted",
                       "_attachments", "@type", "é", "e\u{301}", "ü", "😀", "中文", "K", "\u{212A}", "\u{7F}", "/", " ",
                       "key with spaces", "x\u{10FFFF}"]
    static let unsafeKeys = ["a\"b", "\\", "x\ny", "\u{1}", "\t", "\u{1F}z"]
    static let pieces = ["a", "b", "digest", "hello", " ", "é", "e\u{301}", "😀", "中文", "\u{212A}", "\u{0}", "\u{1F}",
                         "\n", "\t", "\u{8}", "\u{C}", "\r", "\u{B}", "\"", "\\", "/", "\u{7F}", "\u{80}", "\u{7FF}",
                         "\u{FFFF}", "\u{10000}", "\u{10FFFF}", "1.5", "{}", "[]"]
    static let doubles: [Double] = [2.5, 1e-7, 1.5e300, 0.1, -0.0, 1.0, -1.5, .leastNonzeroMagnitude, 0x1p63, -0x1p63, 1e16, 1e22,
                                    123456789.125, .greatestFiniteMagnitude, -.leastNormalMagnitude, 0.30000000000000004]

    static func randomObject(_ rng: inout SplitMix64, unsafeKeys: Bool, depth: Int = 0) -> JSON {
        var pairs: [(String, JSON)] = []
        for _ in 0..<Int.random(in: 0...(depth == 0 ? 8 : 4), using: &rng) {
            let key = unsafeKeys && rng.next() % 4 == 0 ? Self.unsafeKeys.randomElement(using: &rng)!
                : rng.next() % 3 == 0 ? "k\(rng.next() % 50)" : keys.randomElement(using: &rng)!
            pairs.append((key, randomValue(&rng, unsafeKeys: unsafeKeys, depth: depth + 1)))
        }
        return .object(JSONObject(pairs))
    }

    static func randomValue(_ rng: inout SplitMix64, unsafeKeys: Bool, depth: Int) -> JSON {
        switch rng.next() % (depth < 4 ? 10 : 7) {
        case 0: return [.null, .bool(true), .bool(false)].randomElement(using: &rng)!
        case 1:
            let magnitude = Int64.random(in: 0...Int64.max, using: &rng) >> (rng.next() % 64)
            return .int([magnitude, -magnitude, .max, .min, 0].randomElement(using: &rng)!)
        case 2:
            if rng.next() % 2 == 0 { return .double(doubles.randomElement(using: &rng)!) }
            let random = Double(bitPattern: rng.next())
            return .double(random.isFinite ? random : Double(rng.next() % 1000) / 7)
        case 3, 4, 5, 6:
            return .string((0..<Int.random(in: 0...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined())
        case 7, 8: return randomObject(&rng, unsafeKeys: unsafeKeys, depth: depth)
        default:
            return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in
                randomValue(&rng, unsafeKeys: unsafeKeys, depth: depth + 1)
            })
        }
    }
}

/// Writes a value as JSON, now and then otherwise than the compact writer does (`varied` says
/// whether it did): whitespace, other escapes, other spellings of numbers, repeated keys.
private struct Renderer {
    var rng: SplitMix64
    var out: [UInt8] = []
    var varied = false

    /// True one time in eight, noting the variation.
    mutating func vary() -> Bool {
        guard rng.next() % 8 == 0 else { return false }
        varied = true
        return true
    }

    mutating func append(_ text: String) { out.append(contentsOf: text.utf8) }

    mutating func space() {
        if vary() { append([" ", "\n", "\t", "\r", "  "].randomElement(using: &rng)!) }
    }

    mutating func write(_ value: JSON) {
        space()
        switch value {
        case .null, .bool: append(value.compactString)
        case .int(let i): writeNumber(i)
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .array(let array):
            append("[")
            for (i, element) in array.enumerated() {
                if i > 0 { append(",") }
                write(element)
            }
            space()
            append("]")
        case .object(let object):
            append("{")
            var first = true
            for (key, value) in object {
                if !first { append(",") }
                first = false
                space()
                writeString(key)
                space()
                append(":")
                write(value)
                if vary() {  // the same key again, or a spelling equal to it as a string
                    append(",")
                    writeString(["é": "e\u{301}", "K": "\u{212A}"][key] ?? key)
                    append(":")
                    write(rng.next() % 2 == 0 ? value : .int(1))
                }
            }
            space()
            append("}")
        }
        space()
    }

    mutating func writeNumber(_ i: Int64) {
        guard vary() else { return append(String(i)) }
        let spellings = ["\(i).0", "\(i)e0", "\(i)E0", "\(i)e+0", "\(i).00", i == 0 ? "-0" : "\(i)", "\(Double(i))"]
        append(spellings.randomElement(using: &rng)!)
    }

    mutating func writeDouble(_ d: Double) {
        let written = JSON.double(d).compactString
        guard vary() else { return append(written) }
        func replacing(_ old: String, _ new: String) -> String {
            written.split(separator: old, omittingEmptySubsequences: false).joined(separator: new)
        }
        let spellings = [written.uppercased(), replacing("e+", "e"), replacing("e-0", "e-"), replacing("e+", "e+0"),
                         written.contains("e") ? written : written + "0", written.contains(".") ? written : written + ".0"]
        append(spellings.randomElement(using: &rng)!)
    }

    mutating func writeString(_ s: String) {
        append("\"")
        for scalar in s.unicodeScalars {
            let v = scalar.value
            let compact = String(decoding: JSON.string(String(scalar)).compactBytes().dropFirst().dropLast(), as: UTF8.self)
            guard vary() else {
                append(compact)
                continue
            }
            switch v {
            case 0x2F: append(#"\/"#)
            case 0x10000...:
                let u = v - 0x10000
                append(escape(0xD800 + (u >> 10)) + escape(0xDC00 + (u & 0x3FF)))
            default:
                append(escape(v))
            }
        }
        append("\"")
    }

    /// `\uXXXX`, in lowercase or uppercase hex.
    mutating func escape(_ unit: UInt32) -> String {
        let hex = String(unit, radix: 16, uppercase: rng.next() % 2 == 0)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }
}
