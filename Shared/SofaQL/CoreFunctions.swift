internal import CSQLite
internal import CSofaFTS
internal import Foundation
public import SofaCore

/// The functions compiled SQL is made of (as opposed to the user-visible function library):
/// property access, truthiness, collation rank, literals, LIKE, and the glue to `json_each`.
public enum CoreFunctions {
    /// Registers the core functions, the function library and the collations on a connection.
    /// Storage's writer needs them too: index expressions and index triggers call them.
    public static func registerAll(on db: OpaquePointer) throws(SofaError) {
        try registerRaw(on: db)
        try SQLFunctions.register(scalar + FunctionLibrary.all, on: db)
        try Collations.register(on: db)
        let words = FullText.englishStopWords.map { strdup($0) }
        defer { words.forEach { free($0) } }
        let rc = words.map { UnsafePointer($0) }.withUnsafeBufferPointer { sofa_fts_register(db, $0.baseAddress, Int32($0.count)) }
        guard rc == SQLITE_OK else {
            throw SofaError(.sqlite, rc, "cannot register the full-text tokenizer and rank: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// Function names the compiler generates (not callable by those names from a query, since
    /// query function names map to `sofa_<name>` only through the library's table).
    static let scalar: [SQLFunction] = [
        SQLFunction("core_bool", arity: 1) { args in
            args[0].isNullish ? .missing : .integer(args[0].isTruthy ? 1 : 0)
        },
        SQLFunction("core_boolean", arity: 1) { args in
            args[0].isMissing ? .missing : .bool(args[0].isTruthy)
        },
        SQLFunction("core_rank", arity: 1) { args in .integer(rank(args[0])) },
        SQLFunction("core_array", arity: 0...Int(127)) { args in
            .json(.array(args.map { $0.json ?? .null }))
        },
        SQLFunction("core_object", arity: 0...Int(127)) { args throws(SofaError) in
            var object = JSONObject()
            var i = 0
            while i + 1 < args.count {
                guard case .text(let key) = args[i] else { throw SofaError(.invalidQuery, "object keys must be strings") }
                if let value = args[i + 1].json { object[key] = value }
                i += 2
            }
            return .json(.object(object))
        },
        SQLFunction("core_in", arity: 2) { args in
            guard !args[0].isMissing else { return .missing }
            guard case .json(.array(let items)) = args[1] else { return .missing }
            let needle = args[0].json
            return .integer(items.contains { equal($0, needle) } ? 1 : 0)
        },
        SQLFunction("core_like", arity: 2...3) { args in
            let options = args.count > 2 ? args[2].string ?? "" : ""
            switch Like.evaluate(args[0], args[1], options: options) {
            case .json(.bool(let matched)): return .integer(matched ? 1 : 0)
            case let unknown: return unknown
            }
        },
        SQLFunction("core_json_text", arity: 1) { args in
            args[0].json.map { .text($0.compactString) } ?? .missing
        },
        SQLFunction("core_fts_query", arity: 1...3) { args in
            guard var text = args[0].string else { return .missing }
            let stopWords = args.count > 1 ? args[1].string ?? "" : ""
            if args.count > 2, let columns = args[2].string.flatMap({ JSON.tryParse($0)?.arrayValue }) {
                text = FullText.namingColumns(text, columns.map { $0.stringValue ?? "" })
            }
            if !stopWords.isEmpty {
                text = FullText.withoutStopWords(text, Set(stopWords.split(separator: " ").map(String.init)))
            }
            return .text(FullText.quotingPunctuation(text))
        },
        SQLFunction("core_contains", arity: 3) { args in
            let flags = args[2].string ?? ""
            var options: String.CompareOptions = []
            if flags.contains("c") { options.insert(.caseInsensitive) }
            if flags.contains("d") { options.insert(.diacriticInsensitive) }
            return FunctionLibrary.containing(args[0].normalized, args[1].normalized) { string, part in
                part.isEmpty || string.range(of: part, options: options) != nil
            }
        },
        SQLFunction("core_fts_text", arity: 1) { args in
            switch args[0] {
            case .text(let s): return .text(s)
            case .integer, .real: return .text(args[0].json!.compactString)
            case .json(.array(let items)):
                return .text(items.compactMap { $0.stringValue }.joined(separator: " "))
            case .json(.object(let members)):
                // A dictionary's string values, as LiteCore indexes them.
                return .text(members.values.compactMap { $0.stringValue }.joined(separator: " "))
            case .json(.bool(let b)):
                // LiteCore indexes true and false as "T" and "F".
                return .text(b ? "T" : "F")
            default: return .missing
            }
        },
    ]

    /// Where a value sorts among kinds: MISSING < null < false < true < numbers < strings <
    /// arrays < objects.
    static func rank(_ value: SQLValue) -> Int64 {
        switch value {
        case .missing: return 0
        case .integer, .real: return 4
        case .text: return 5
        case .json(let json):
            switch json {
            case .null: return 1
            case .bool(let b): return b ? 3 : 2
            case .int, .double: return 4
            case .string: return 5
            case .array: return 6
            case .object: return 7
            }
        }
    }

    /// Equality of JSON values with numbers compared by value (1 == 1.0).
    static func equal(_ a: JSON?, _ b: JSON?) -> Bool {
        switch (a, b) {
        case (.int(let x)?, .double(let y)?): return Double(x) == y
        case (.double(let x)?, .int(let y)?): return x == Double(y)
        default: return a == b
        }
    }

    // MARK: Raw functions (no SQLValue round trip: they run once per row)

    private static func registerRaw(on db: OpaquePointer) throws(SofaError) {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        var rc = sqlite3_create_function_v2(db, "core_value", 2, flags, nil, { context, _, values in
            CoreFunctions.value(context, values![0], values![1])
        }, nil, nil, nil)
        if rc == SQLITE_OK {
            rc = sqlite3_create_function_v2(db, "core_element", 2, flags, nil, { context, _, values in
                CoreFunctions.element(context, values![0], values![1])
            }, nil, nil, nil)
        }
        if rc == SQLITE_OK {
            rc = sqlite3_create_function_v2(db, "core_array_text", 1, flags, nil, { context, _, values in
                CoreFunctions.arrayText(context, values![0])
            }, nil, nil, nil)
        }
        if rc == SQLITE_OK {
            rc = sqlite3_create_function_v2(db, "core_unnest_text", 1, flags, nil, { context, _, values in
                CoreFunctions.unnestText(context, values![0])
            }, nil, nil, nil)
        }
        if rc == SQLITE_OK {
            rc = sqlite3_create_function_v2(db, "core_items_text", 1, flags, nil, { context, _, values in
                CoreFunctions.arrayText(context, values![0], orObject: true)
            }, nil, nil, nil)
        }
        if rc == SQLITE_OK {
            rc = sqlite3_create_function_v2(db, "core_revid", 1, flags, nil, { context, _, values in
                let count = Int(sqlite3_value_bytes(values![0]))
                guard count > 0, let bytes = sqlite3_value_blob(values![0]),
                      let rev = try? RevID(binary: Array(UnsafeRawBufferPointer(start: bytes, count: count))) else {
                    sqlite3_result_null(context)
                    return
                }
                sqlite3_result_text(context, rev.ascii, -1, transient)
            }, nil, nil, nil)
        }
        guard rc == SQLITE_OK else {
            throw SofaError(.sqlite, rc, "cannot register core functions: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// A parsed path kept by SQLite between calls with the same path argument.
    private final class PathBox {
        let steps: [ScanStep]
        init(_ steps: [ScanStep]) { self.steps = steps }
    }

    /// `core_value(json, path)`: the value at `path` inside a JSON BLOB (MISSING when absent).
    private static func value(_ context: OpaquePointer?, _ doc: OpaquePointer?, _ pathArg: OpaquePointer?) {
        let steps: [ScanStep]
        if let aux = sqlite3_get_auxdata(context, 1) {
            steps = Unmanaged<PathBox>.fromOpaque(aux).takeUnretainedValue().steps
        } else {
            guard let text = sqlite3_value_text(pathArg),
                  let path = PropertyPath.tryParse(String(cString: text)) else {
                sqlite3_result_error(context, "invalid property path", -1)
                return
            }
            steps = ScanStep.steps(path)
            let box = Unmanaged.passRetained(PathBox(steps)).toOpaque()
            sqlite3_set_auxdata(context, 1, box) { pointer in
                if let pointer { Unmanaged<PathBox>.fromOpaque(pointer).release() }
            }
        }
        guard sqlite3_value_type(doc) == SQLITE_BLOB else {
            // A scalar has no properties; the empty path is the value itself.
            if steps.isEmpty { sqlite3_result_value(context, doc) } else { sqlite3_result_null(context) }
            return
        }
        let count = Int(sqlite3_value_bytes(doc))
        guard count > 0, let base = sqlite3_value_blob(doc) else { sqlite3_result_null(context); return }
        let scanner = JSONScanner(bytes: UnsafeRawBufferPointer(start: base, count: count))
        guard let range = scanner.locate(steps) else { sqlite3_result_null(context); return }
        setScalar(context, scanner, range)
    }

    /// Sets the result to the JSON token at `range`, in the SQL encoding.
    private static func setScalar(_ context: OpaquePointer?, _ scanner: JSONScanner, _ range: Range<Int>) {
        let bytes = scanner.bytes
        let first = bytes[range.lowerBound]
        switch first {
        case UInt8(ascii: "\""):
            guard let string = scanner.decodeString(range) else { sqlite3_result_null(context); return }
            SQLiteText.result(context, string)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
            if let int = Int64(text) {
                sqlite3_result_int64(context, int)
            } else if let double = Double(text) {
                sqlite3_result_double(context, double)
            } else {
                sqlite3_result_null(context)
            }
        default:
            let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
            sqlite3_result_blob(context, slice.baseAddress, Int32(slice.count), transient)
        }
    }

    /// `core_element(type, value)`: a `json_each` row's value in the SQL encoding.
    private static func element(_ context: OpaquePointer?, _ type: OpaquePointer?, _ value: OpaquePointer?) {
        guard let typeText = sqlite3_value_text(type) else { sqlite3_result_null(context); return }
        switch String(cString: typeText) {
        case "true": sqlite3_result_blob(context, "true", 4, transient)
        case "false": sqlite3_result_blob(context, "false", 5, transient)
        case "null": sqlite3_result_blob(context, "null", 4, transient)
        case "array", "object":
            let count = Int(sqlite3_value_bytes(value))
            guard let text = sqlite3_value_text(value), count > 0 else { sqlite3_result_null(context); return }
            sqlite3_result_blob(context, text, Int32(count), transient)
        default:
            sqlite3_result_value(context, value)
        }
    }

    /// `core_unnest_text(value)`: what UNNEST ranges over, as JSON text for `json_each`: an
    /// array's items; a string, number, boolean or null as the one item of an array (LiteCore's
    /// answer: c4QueryTest "C4Query Nested UNNEST - Missing Array" unnests `"my contacts"` to one
    /// row); nothing for MISSING or a dictionary.
    ///
    ///     ["a","b"] → ["a","b"]      "x" → ["x"]      7 → [7]      null → [null]      {…} → []
    private static func unnestText(_ context: OpaquePointer?, _ value: OpaquePointer?) {
        switch sqlite3_value_type(value) {
        case SQLITE_NULL:
            sqlite3_result_text(context, "[]", 2, transient)
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let base = sqlite3_value_blob(value) else {
                sqlite3_result_text(context, "[]", 2, transient)
                return
            }
            let bytes = UnsafeRawBufferPointer(start: base, count: count)
            switch bytes[0] {
            case UInt8(ascii: "["): sqlite3_result_text(context, base.assumingMemoryBound(to: CChar.self), Int32(count), transient)
            case UInt8(ascii: "{"): sqlite3_result_text(context, "[]", 2, transient)
            default:
                let text = "[" + String(decoding: bytes, as: UTF8.self) + "]"
                SQLiteText.result(context, text)
            }
        default:
            let item = SQLFunctions.value(value).json ?? .null
            SQLiteText.result(context, "[" + item.compactString + "]")
        }
    }

    /// `core_array_text(value)`: an array's JSON text for `json_each`, or `[]` for anything else.
    /// New SQL uses `core_unnest_text`; this one stays for the triggers of array indexes made
    /// before, which database files keep and call on every write.
    /// `core_items_text(value)` (`orObject`) also passes a dictionary's text, whose values
    /// `json_each` then yields (what ANY and EVERY range over, as LiteCore's `fl_each`).
    private static func arrayText(_ context: OpaquePointer?, _ value: OpaquePointer?, orObject: Bool = false) {
        if sqlite3_value_type(value) == SQLITE_BLOB {
            let count = Int(sqlite3_value_bytes(value))
            if count > 0, let base = sqlite3_value_blob(value),
               base.load(as: UInt8.self) == UInt8(ascii: "[") || (orObject && base.load(as: UInt8.self) == UInt8(ascii: "{")) {
                sqlite3_result_text(context, base.assumingMemoryBound(to: CChar.self), Int32(count), transient)
                return
            }
        }
        sqlite3_result_text(context, "[]", 2, transient)
    }
}
