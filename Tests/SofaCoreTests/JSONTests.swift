import Testing
@testable import SofaCore

@Suite struct JSONParseTests {
    static let accepted: [(String, JSON)] = [
        ("null", .null),
        (" true ", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("-0", .int(0)),
        ("42", .int(42)),
        ("-17", .int(-17)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9223372036854775808)),
        ("-9223372036854775809", .double(-0x1p63)),
        ("1.5", .double(1.5)),
        ("1.0", .double(1)),
        ("-0.25e2", .double(-25)),
        ("1E3", .double(1000)),
        ("1e-2", .double(0.01)),
        ("2E+2", .double(200)),
        ("1e-400", .double(0)),
        ("\"\"", .string("")),
        ("\"a\\\"b\\\\c\\/d\"", .string("a\"b\\c/d")),
        ("\"\\b\\f\\n\\r\\t\"", .string("\u{8}\u{c}\n\r\t")),
        ("\"\\u00e9\\u00E9\"", .string("éé")),
        ("\"\\ud83d\\ude00\"", .string("😀")),
        ("\"héllo 😀\"", .string("héllo 😀")),
        ("[]", .array([])),
        ("[1, [2, []], {}]", .array([.int(1), .array([.int(2), .array([])]), .object([:])])),
        ("{\"a\":1,\"b\":[true,null]}", .object(["a": 1, "b": [true, nil]])),
        ("{\"a\":1,\"a\":2}", .object(["a": 2])),
        ("\t\r\n {\"k\" : \"v\" } \n", .object(["k": "v"])),
    ]

    /// Whether the input is noted as compact is exactly whether the compact writer gives it back
    /// byte for byte — over every accepted input and some more written compact on purpose.
    @Test(arguments: accepted.map(\.0) + [
        #"{"b":1,"a":"x\ny","c":[true,false,null,-5,{"d":"\"\\\t"}]}"#, #"{"é":"😀","k":[]}"#, "[0,-1,[{}]]",
        #"{"a":1}"#, "\"\\u001f\"", #""\u001f""#,
    ])
    func compactIsNotedExactly(_ input: String) throws {
        let bytes = Array(input.utf8)
        let (json, isCompact) = try JSON.parseNotingCompact(bytes)
        #expect(json == (try JSON.parse(input)))
        if isCompact {
            #expect(json.compactBytes() == bytes, "noted compact but written differently: \(input)")
        }
        // Everything the writer writes, parsed again, is noted compact (apart from doubles and
        // \u escapes of control characters, which are noted conservatively).
        func hasDouble(_ value: JSON) -> Bool {
            switch value {
            case .double: true
            case .array(let items): items.contains(where: hasDouble)
            case .object(let object): object.contains { hasDouble($0.value) }
            default: false
            }
        }
        let written = json.compactBytes()
        if !hasDouble(json) && !String(decoding: written, as: UTF8.self).contains("\\u") {
            #expect(try JSON.parseNotingCompact(written).isCompact, "\(String(decoding: written, as: UTF8.self))")
        }
    }

    @Test(arguments: accepted)
    func accepts(_ input: String, _ expected: JSON) throws {
        #expect(try JSON.parse(input) == expected)
        #expect(try JSON.parse(Array(input.utf8)) == expected)
        #expect(JSON.tryParse(input.utf8) == expected)  // non-contiguous-path check is below
    }

    static let rejected: [(String, String)] = [
        ("", "end of input"),
        ("   ", "end of input"),
        ("nul", "literal"),
        ("True", "unexpected character"),
        ("01", "leading zero"),
        ("-", "digit"),
        ("1.", "digit after"),
        (".5", "unexpected character"),
        ("1e", "exponent"),
        ("+1", "unexpected character"),
        ("NaN", "unexpected character"),
        ("Infinity", "unexpected character"),
        ("-Infinity", "digit"),
        ("1e400", "out of range"),
        ("[1,]", "unexpected character"),
        ("{\"a\":1,}", "string key"),
        ("{a:1}", "string key"),
        ("{\"a\" 1}", "':'"),
        ("[1 2]", "','"),
        ("\"abc", "unterminated string"),
        ("\"a\nb\"", "control character"),
        ("\"\\x\"", "invalid escape"),
        ("\"\\u12x4\"", "hex digit"),
        ("\"\\u12\"", "truncated"),
        ("\"\\ud800\"", "lone high surrogate"),
        ("\"\\ud800\\u0041\"", "lone high surrogate"),
        ("\"\\udc00\"", "lone low surrogate"),
        ("1 2", "after the JSON value"),
        ("{}x", "after the JSON value"),
        ("\u{FEFF}1", "unexpected character"),
    ]

    @Test(arguments: rejected)
    func rejects(_ input: String, _ reason: String) {
        #expect {
            try JSON.parse(input)
        } throws: { error in
            guard let error = error as? SofaError else { return false }
            return error.is(.badJSON) && error.message.contains(reason)
        }
        #expect(JSON.tryParse(input.utf8) == nil)
    }

    static let badUTF8: [[UInt8]] = [
        [0x22, 0xFF, 0x22],
        [0x22, 0xC3, 0x22],  // truncated sequence
        [0x22, 0xC0, 0xAF, 0x22],  // overlong "/"
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // encoded surrogate
        [0x22, 0x5C, 0x6E, 0xF5, 0x80, 0x80, 0x80, 0x22],  // escape, then beyond U+10FFFF
    ]

    @Test(arguments: badUTF8)
    func rejectsInvalidUTF8(_ input: [UInt8]) {
        #expect(JSON.tryParse(input) == nil)
    }

    @Test func reportsByteOffset() {
        #expect(throws: SofaError(.badJSON, "Invalid JSON at byte 6: expected ',' or ']'")) {
            try JSON.parse("[1, 2 3]")
        }
    }

    @Test func depthLimit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try JSON.parse(ok).arrayValue != nil)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: SofaError.self) { try JSON.parse(deep) }
        let deepObject = String(repeating: "{\"a\":", count: 513) + "1" + String(repeating: "}", count: 513)
        #expect(throws: SofaError.self) { try JSON.parse(deepObject) }
    }

    @Test func nonContiguousInput() throws {
        let bytes = Array("{\"a\":[1,2]}".utf8)
        let chunks = bytes.lazy.map { $0 }  // LazyMapCollection: no contiguous storage
        #expect(try JSON.parse(chunks) == ["a": [1, 2]])
    }

    @Test func duplicateKeyKeepsFirstPosition() throws {
        let value = try JSON.parse("{\"a\":1,\"b\":2,\"a\":3}")
        #expect(value.objectValue?.keys == ["a", "b"])
        #expect(value.compactString == "{\"a\":3,\"b\":2}")
    }
}

@Suite struct JSONEncodeTests {
    static let canonical: [(JSON, String)] = [
        (.null, "null"),
        (.bool(false), "false"),
        (.int(-9223372036854775808), "-9223372036854775808"),
        (.int(1234567890), "1234567890"),
        (.double(1.0), "1"),
        (.double(-0.0), "0"),
        (.double(-3.0), "-3"),
        (.double(0.1), "0.1"),
        (.double(1.5e-7), "1.5e-07"),
        (.double(1e300), "1e+300"),
        (.double(9.3e18), "9.3e+18"),
        (.double(9.2e18), "9200000000000000000"),
        (.double(123.456), "123.456"),
        (.double(.infinity), "null"),
        (.string("a\"b\\c/d"), "\"a\\\"b\\\\c/d\""),
        (.string("\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}"), "\"\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\""),
        (.string("é😀\u{2028}"), "\"é😀\u{2028}\""),
        (["b": 1, "a": 2, "B": 3, "é": 4, "aa": 5], "{\"B\":3,\"a\":2,\"aa\":5,\"b\":1,\"é\":4}"),
        (["z": ["y": 1, "x": [1.0, "s"]]], "{\"z\":{\"x\":[1,\"s\"],\"y\":1}}"),
        ([], "[]"),
        ([:], "{}"),
    ]

    @Test(arguments: canonical)
    func canonicalForm(_ value: JSON, _ expected: String) {
        #expect(String(decoding: value.canonicalBytes(), as: UTF8.self) == expected)
    }

    /// The typed form keeps a double a double: an integral one is written with a fraction, so it
    /// parses back as `.double`; everything else is written as the compact form writes it.
    @Test func typedFormKeepsDoubles() throws {
        let cases: [(JSON, String)] = [
            (.double(5.0), "5.0"), (.double(-3.0), "-3.0"), (.double(-0.0), "-0.0"), (.double(9.2e18), "9200000000000000000.0"),
            (.double(0.1), "0.1"), (.double(1e300), "1e+300"), (.int(5), "5"),
            (["WHAT": [["/", 5.0, 15], ["$x"]]], #"{"WHAT":[["/",5.0,15],["$x"]]}"#),
        ]
        for (value, expected) in cases {
            #expect(value.typedCompactString == expected)
            #expect(try JSON.parse(Array(value.typedCompactString.utf8)) == value)
        }
        #expect(JSON.double(5.0).compactString == "5")
    }

    @Test func compactKeepsOrder() {
        let value: JSON = ["b": 1, "a": ["d": nil, "c": true]]
        #expect(value.compactString == "{\"b\":1,\"a\":{\"d\":null,\"c\":true}}")
        #expect(value.canonicalString == "{\"a\":{\"c\":true,\"d\":null},\"b\":1}")
    }

    @Test func sortsByUTF8NotByUnicodeOrder() {
        // U+FF61 (EF BD A1) sorts before U+1F600 (F0 9F 98 80) by bytes and by scalar value;
        // "é" precomposed (C3 A9) sorts before "e\u{301}" only when compared by bytes after "e".
        let value: JSON = ["😀": 1, "\u{FF61}": 2, "e\u{301}": 3, "f": 4]
        #expect(value.canonicalString == "{\"e\u{301}\":3,\"f\":4,\"\u{FF61}\":2,\"😀\":1}")
    }

    @Test(arguments: [
        "{\"a\":[1,2.5,-3e-5,\"x\\u0000y\"],\"b\":{\"c\":null,\"d\":false}}",
        "[\"\\ud83d\\ude00\",1e+300,-0.5,true]",
        "\"\\u001f\\\"\\\\\"",
    ])
    func roundTrip(_ text: String) throws {
        let value = try JSON.parse(text)
        #expect(try JSON.parse(value.compactBytes()) == value)
        #expect(try JSON.parse(value.canonicalBytes()) == value)
    }
}

@Suite struct JSONObjectTests {
    @Test func insertionOrderAndRemoval() {
        var object = JSONObject()
        for i in 0..<40 { object["k\(i)"] = .int(Int64(i)) }
        #expect(object.count == 40)
        #expect(object["k33"] == .int(33))
        object["k5"] = "five"
        #expect(object.keys[5] == "k5")
        #expect(object.removeValue(forKey: "k0") == .int(0))
        #expect(object.removeValue(forKey: "missing") == nil)
        object["k1"] = nil
        #expect(object.count == 38)
        #expect(object.keys.first == "k2")
        #expect(object["k39"] == .int(39))
        #expect(object["k5"] == "five")
        for i in 2..<30 { object["k\(i)"] = nil }
        #expect(object.keys == (30..<40).map { "k\($0)" })
        #expect(object["k35"] == .int(35))
    }

    @Test func equalityIgnoresOrder() {
        let a: JSONObject = ["x": 1, "y": [1, 2]]
        let b: JSONObject = ["y": [1, 2], "x": 1]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ["x": 1, "y": [2, 1]])
        #expect(JSON.int(1) != JSON.double(1))
    }

    @Test func accessors() {
        let value: JSON = ["s": "t", "i": 3, "d": 2.0, "h": 2.5, "b": true, "n": nil, "a": [1]]
        #expect(value["s"]?.stringValue == "t")
        #expect(value["i"]?.intValue == 3)
        #expect(value["d"]?.intValue == 2)
        #expect(value["h"]?.intValue == nil)
        #expect(value["i"]?.doubleValue == 3)
        #expect(value["b"]?.boolValue == true)
        #expect(value["n"]?.isNull == true)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["missing"] == nil)
        #expect(value.objectValue?.count == 7)
        #expect(JSON.int(1).objectValue == nil)
    }
}

@Suite struct JSONCanonicalEquivalenceTests {
    @Test func canonicallyEquivalentKeysAreOneKey() throws {
        let value = try JSON.parse("{\"\\u00e9\":1,\"e\\u0301\":2}")
        #expect(value.objectValue?.count == 1)
        #expect(value["é"] == 2)
    }
}
