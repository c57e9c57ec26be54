import CSQLite
import Foundation
import SofaCore
import Testing
@testable import SofaQL

/// An in-memory SQLite connection with the function library registered, calling one function at
/// a time through real SQL (`SELECT sofa_<name>(?, …)`) with arguments bound and the result read
/// in `SQLValue`'s encoding. Each test makes its own; the handle is closed in `deinit`.
final class FunctionHarness {
    private let db: OpaquePointer

    /// Dates without a zone are read in `localTimeZone` (UTC unless a test says otherwise).
    convenience init(localTimeZone: TimeZone = TimeZone(secondsFromGMT: 0)!) throws {
        try self.init(functions: FunctionLibrary.functions(localTimeZone: localTimeZone))
    }

    init(functions: [SQLFunction]) throws {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(":memory:", &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard rc == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw SofaError(.sqlite, rc, "cannot open an in-memory database")
        }
        db = handle
        try SQLFunctions.register(functions, on: db)
    }

    deinit { sqlite3_close_v2(db) }

    /// The result of `sofa_<name>(args…)`; a SQLite error (a function's error included) throws.
    func call(_ name: String, _ args: [SQLValue]) throws -> SQLValue {
        let sql = "SELECT sofa_\(name)(" + Array(repeating: "?", count: args.count).joined(separator: ", ") + ")"
        var statement: OpaquePointer?
        var rc = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc, sql) }
        defer { sqlite3_finalize(statement) }
        for (i, arg) in args.enumerated() { try arg.bind(to: statement, at: Int32(i + 1)) }
        rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else { throw failure(rc, sql) }
        return SQLValue(column: 0, of: statement)
    }

    /// `call` with arguments written in `FunctionCall`'s notation.
    func call(_ name: String, _ args: String...) throws -> SQLValue {
        try call(name, args.map { try FunctionCall.value($0) })
    }

    private func failure(_ rc: Int32, _ sql: String) -> SofaError {
        SofaError(.sqlite, rc, "\(String(cString: sqlite3_errmsg(db))) in \(sql)")
    }
}

/// One row of a function table: a call and the value it must return.
///
/// Values are written as `MISSING`, `'text'` (a SQL string: everything between the outer
/// quotes, unescaped) or JSON (`1`, `2.5`, `null`, `true`, `[1,"a"]`, `{"a":1}`). JSON numbers
/// keep their kind: `4` is INTEGER, `4.0` REAL.
struct FunctionCall: Sendable, CustomTestStringConvertible {
    var name: String
    var args: [String]
    var expected: String

    init(_ name: String, _ args: String..., is expected: String) {
        self.name = name
        self.args = args
        self.expected = expected
    }

    var testDescription: String { "\(name)(\(args.joined(separator: ", "))) → \(expected)" }

    /// Calls the function on `harness` and expects the result, exactly (REALs bit for bit).
    func check(on harness: FunctionHarness) throws {
        let result = try harness.call(name, args.map(Self.value))
        let wanted = try Self.value(expected)
        #expect(result == wanted, "\(testDescription), got \(result)")
    }

    static func value(_ notation: String) throws -> SQLValue {
        if notation == "MISSING" { return .missing }
        if notation.count >= 2, notation.hasPrefix("'"), notation.hasSuffix("'") {
            return .text(String(notation.dropFirst().dropLast()))
        }
        return SQLValue(try JSON.parse(notation))
    }
}
