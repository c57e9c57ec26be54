internal import Foundation

/// N1QL's LIKE: `%` matches any run of characters, `_` exactly one, `\` makes the next character
/// literal. Case-sensitive unless a collation says otherwise; characters are Unicode grapheme
/// clusters, so `_` matches `é` however it is encoded.
///
/// Operands (LIKE, and `fl_like()` which is the same function): MISSING if either is MISSING,
/// else null if either is null; a number is matched as SQLite writes it as text (`1`, `2.5`,
/// `1.0e+20`), as LiteCore matches it, so `1 LIKE '1%'` is true; a boolean, array or object has
/// no text and matches nothing (false). LiteCore matches those by their storage bytes.
enum Like {
    /// LIKE of two query values: `.missing`, null, or a boolean.
    static func evaluate(_ value: SQLValue, _ pattern: SQLValue, options: String) -> SQLValue {
        if let unknown = FunctionLibrary.unknown([value, pattern]) { return unknown }
        guard let string = text(value), let pattern = text(pattern) else { return .false }
        return .bool(matches(string, pattern, caseInsensitive: options.contains("c"),
                             diacriticInsensitive: options.contains("d")))
    }

    /// A string as it is; a number as SQLite's text for it; nil for anything else.
    static func text(_ value: SQLValue) -> String? {
        switch value {
        case .text(let s): return s
        case .integer(let v): return String(v)
        case .real(let v): return sqliteText(v)
        case .json(.int(let v)): return String(v)
        case .json(.double(let v)): return sqliteText(v)
        case .json(.string(let s)): return s
        default: return nil
        }
    }

    /// SQLite's `%!.15g`: 15 significant digits, always with a decimal point (`100.0`, `1.0e+20`).
    static func sqliteText(_ v: Double) -> String {
        if v.isInfinite { return v < 0 ? "-Inf" : "Inf" }
        var s = String(format: "%.15g", v)
        guard !s.contains(".") else { return s }
        if let e = s.firstIndex(of: "e") { s.insert(contentsOf: ".0", at: e) } else { s += ".0" }
        return s
    }

    static func matches(_ string: String, _ pattern: String, caseInsensitive: Bool = false,
                        diacriticInsensitive: Bool = false) -> Bool {
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        let fold: (String) -> String = { options.isEmpty ? $0 : $0.folding(options: options, locale: nil) }
        let s = Array(fold(string))
        // Tokenise the pattern first so folding never touches wildcards or escapes.
        enum Token { case any, one, literal(Character) }
        var tokens: [Token] = []
        var escaped = false
        for c in pattern {
            if escaped { tokens.append(.literal(c)); escaped = false; continue }
            switch c {
            case "\\": escaped = true
            case "%": tokens.append(.any)
            case "_": tokens.append(.one)
            default: tokens.append(.literal(fold(String(c)).first ?? c))
            }
        }
        if escaped { tokens.append(.literal("\\")) }
        // Classic two-pointer wildcard match with backtracking to the last `%`.
        var si = 0, ti = 0
        var star: Int? = nil, starS = 0
        while si < s.count {
            if ti < tokens.count {
                switch tokens[ti] {
                case .any:
                    star = ti; starS = si; ti += 1; continue
                case .one:
                    si += 1; ti += 1; continue
                case .literal(let c) where c == s[si]:
                    si += 1; ti += 1; continue
                default: break
                }
            }
            guard let starIndex = star else { return false }
            ti = starIndex + 1
            starS += 1
            si = starS
        }
        while ti < tokens.count, case .any = tokens[ti] { ti += 1 }
        return ti == tokens.count
    }
}
