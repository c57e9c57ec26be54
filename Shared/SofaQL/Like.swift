internal import Foundation

/// N1QL's LIKE: `%` matches any run of characters, `_` exactly one, `\` makes the next character
/// literal. Case-sensitive unless a collation says otherwise; characters are Unicode grapheme
/// clusters, so `_` matches `é` however it is encoded.
enum Like {
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
