internal import CSQLite

/// `sqlite3_destructor_type` SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Text handed to SQLite with its length in bytes, and read back the same way: a string with a
/// NUL character in it (JSON's `"\u0000"`) is whole, where a length of -1 (up to the first NUL)
/// or a C string would cut it there. e.g. `"Hello\u0000There"` is 11 bytes in and out.
enum SQLiteText {
    /// Sets a function's result to `text`.
    static func result(_ context: OpaquePointer?, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return sqlite3_result_text(context, "", 0, transient) }
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_result_text(context, $0, Int32(bytes.count), transient)
            }
        }
    }

    /// Binds `text` to parameter `index`; SQLite's return code.
    static func bind(_ statement: OpaquePointer?, _ index: Int32, _ text: String) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return sqlite3_bind_text(statement, index, "", 0, transient) }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(statement, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    /// The text of a function's argument ("" for NULL).
    static func value(_ value: OpaquePointer?) -> String {
        guard let pointer = sqlite3_value_text(value) else { return "" }
        let count = Int(sqlite3_value_bytes(value))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The text of a result column ("" for NULL).
    static func column(_ statement: OpaquePointer?, _ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
