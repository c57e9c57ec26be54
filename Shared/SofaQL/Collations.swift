internal import CSQLite
internal import Foundation
import SofaCore

/// LiteCore's collations as SQLite collations. `COLLATE` in a query names options —
/// `UNICODE` (compare by Unicode rules instead of bytes), `CASE` (case-sensitive, default true),
/// `DIAC` (diacritic-sensitive, default true), `LOCALE` — and the compiler picks one of these:
///
///     binary options, case-insensitive      → NOCASE (SQLite's own, ASCII folding)
///     unicode                               → sofa_unicode
///     unicode, case-insensitive             → sofa_unicode_nocase
///     unicode, diacritic-insensitive        → sofa_unicode_nodiac
///     unicode, both insensitive             → sofa_unicode_nocase_nodiac
public struct Collation: Sendable, Hashable {
    public var unicode = false
    public var caseSensitive = true
    public var diacriticSensitive = true

    public init(unicode: Bool = false, caseSensitive: Bool = true, diacriticSensitive: Bool = true) {
        self.unicode = unicode
        self.caseSensitive = caseSensitive
        self.diacriticSensitive = diacriticSensitive
    }

    /// The SQLite collation name (nil for plain byte order).
    public var sqlName: String? {
        if !unicode {
            // Without UNICODE, LiteCore folds ASCII case only and ignores DIAC.
            return caseSensitive ? nil : "NOCASE"
        }
        switch (caseSensitive, diacriticSensitive) {
        case (true, true): return "sofa_unicode"
        case (false, true): return "sofa_unicode_nocase"
        case (true, false): return "sofa_unicode_nodiac"
        case (false, false): return "sofa_unicode_nocase_nodiac"
        }
    }

    /// Options for `core_like`'s third argument.
    var likeOptions: String { (caseSensitive ? "" : "c") + (diacriticSensitive || !unicode ? "" : "d") }
}

enum Collations {
    /// A collation's options, and the locale its comparisons are made in: the root locale, so
    /// that strings compare as Unicode's collation orders them (lowercase before uppercase, an
    /// accented letter beside its base letter: "Aardvark" < "Ångström" < "Apple" < "äpple" <
    /// "Zebra"), as LiteCore's collations do (SQLiteFunctionsTest "Unicode collation", "SQLite
    /// collation"); without a locale Foundation compares code points ("Zebra" < "Ångström").
    private final class Box {
        let options: String.CompareOptions
        let locale = Locale(identifier: "")
        init(_ options: String.CompareOptions) { self.options = options }
    }

    static func register(on db: OpaquePointer) throws(SofaError) {
        let variants: [(String, String.CompareOptions)] = [
            ("sofa_unicode", []),
            ("sofa_unicode_nocase", [.caseInsensitive]),
            ("sofa_unicode_nodiac", [.diacriticInsensitive]),
            ("sofa_unicode_nocase_nodiac", [.caseInsensitive, .diacriticInsensitive]),
        ]
        for (name, options) in variants {
            let box = Unmanaged.passRetained(Box(options)).toOpaque()
            let rc = sqlite3_create_collation_v2(db, name, SQLITE_UTF8, box, { info, count1, bytes1, count2, bytes2 in
                let box = Unmanaged<Box>.fromOpaque(info!).takeUnretainedValue()
                let a = String(decoding: UnsafeRawBufferPointer(start: bytes1, count: Int(count1)), as: UTF8.self)
                let b = String(decoding: UnsafeRawBufferPointer(start: bytes2, count: Int(count2)), as: UTF8.self)
                switch a.compare(b, options: box.options, range: nil, locale: box.locale) {
                case .orderedAscending: return -1
                case .orderedDescending: return 1
                case .orderedSame: return 0
                }
            }, { pointer in
                if let pointer { Unmanaged<Box>.fromOpaque(pointer).release() }
            })
            guard rc == SQLITE_OK else {
                throw SofaError(.sqlite, rc, "cannot register collation \(name): \(String(cString: sqlite3_errmsg(db)))")
            }
        }
    }
}
