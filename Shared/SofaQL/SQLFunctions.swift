internal import CSQLite
public import SofaCore


/// A scalar SQL function over `SQLValue`s, registered on a connection as `sofa_<name>`.
public struct SQLFunction: Sendable {
    /// The name in queries, lowercase (`lower`, `array_contains`, `str_to_millis`).
    public var name: String
    /// How many arguments it takes.
    public var arity: ClosedRange<Int>
    /// Same arguments, same result (so it may appear in an index expression).
    public var deterministic: Bool
    public var body: @Sendable ([SQLValue]) throws(SofaError) -> SQLValue
    /// The function's name in SQL: `sofa_<name>` for the library, `core_…` for the compiler's own.
    public var sqlName: String

    public init(_ name: String, arity: ClosedRange<Int>, deterministic: Bool = true,
                _ body: @escaping @Sendable ([SQLValue]) throws(SofaError) -> SQLValue) {
        self.name = name
        self.sqlName = name.hasPrefix("core_") ? name : "sofa_" + name
        self.arity = arity
        self.deterministic = deterministic
        self.body = body
    }

    public init(_ name: String, arity: Int, deterministic: Bool = true,
                _ body: @escaping @Sendable ([SQLValue]) throws(SofaError) -> SQLValue) {
        self.init(name, arity: arity...arity, deterministic: deterministic, body)
    }
}

/// Boxes a function for SQLite's user-data pointer.
private final class FunctionBox {
    let function: SQLFunction
    init(_ function: SQLFunction) { self.function = function }
}

public enum SQLFunctions {
    /// Registers `functions` on a raw connection handle. Errors from SQLite carry its message.
    public static func register(_ functions: [SQLFunction], on db: OpaquePointer) throws(SofaError) {
        for function in functions {
            let box = Unmanaged.passRetained(FunctionBox(function)).toOpaque()
            var flags = SQLITE_UTF8
            if function.deterministic { flags |= SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS }
            let arity = function.arity.lowerBound == function.arity.upperBound ? Int32(function.arity.lowerBound) : -1
            let rc = sqlite3_create_function_v2(db, function.sqlName, arity, flags, box, { context, count, values in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
                var arguments: [SQLValue] = []
                arguments.reserveCapacity(Int(count))
                for i in 0..<Int(count) { arguments.append(SQLFunctions.value(values![i])) }
                guard box.function.arity.contains(arguments.count) else {
                    sqlite3_result_error(context, "\(box.function.name)() takes \(box.function.arity) arguments, got \(arguments.count)", -1)
                    return
                }
                do throws(SofaError) {
                    SQLFunctions.setResult(context, try box.function.body(arguments))
                } catch {
                    sqlite3_result_error(context, "\(box.function.name)(): \(error.message)", -1)
                }
            }, nil, nil, { pointer in
                if let pointer { Unmanaged<FunctionBox>.fromOpaque(pointer).release() }
            })
            guard rc == SQLITE_OK else {
                throw SofaError(.sqlite, rc, "cannot register \(function.sqlName): \(String(cString: sqlite3_errmsg(db)))")
            }
        }
    }

    /// Reads an argument in the encoding of `SQLValue`.
    static func value(_ value: OpaquePointer?) -> SQLValue {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT: return .text(SQLiteText.value(value))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let bytes = sqlite3_value_blob(value) else { return .null }
            let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
            return JSON.tryParse(buffer).map { SQLValue.json($0) } ?? .null
        default: return .missing
        }
    }

    /// Sets a function's result in the encoding of `SQLValue`.
    static func setResult(_ context: OpaquePointer?, _ result: SQLValue) {
        switch result {
        case .missing: sqlite3_result_null(context)
        case .integer(let v): sqlite3_result_int64(context, v)
        case .real(let v):
            if v.isNaN || v.isInfinite { sqlite3_result_null(context) } else { sqlite3_result_double(context, v) }
        case .text(let v): SQLiteText.result(context, v)
        case .json(let v):
            let bytes = v.compactBytes()
            bytes.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), transient) }
        }
    }
}
