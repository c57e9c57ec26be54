internal import Foundation
internal import SofaCore

/// Regular-expression functions. LiteCore uses C++ `std::regex` (ECMAScript grammar); these use
/// `NSRegularExpression` (ICU), which agrees on the common syntax (classes, quantifiers, groups,
/// anchors, `\d \w \s \b`, lookahead).
///
///     regexp_contains(s, p)      whether p matches somewhere in s
///     regexp_like(s, p)          the same — LiteCore searches, it does not anchor
///     regexp_position(s, p)      the UTF-8 byte offset of the first match, -1 if none
///     regexp_replace(s, p, r [, n])
///                                s with the first n matches (all if n is absent or negative)
///                                replaced by r, where `$&` is the match, `$1`…`$99` groups,
///                                `` $` `` / `$'` the text before / after the match, `$$` a `$`
///
/// MISSING in → MISSING, null → null, non-strings → null; an invalid pattern is a query error, and
/// so is one that searches one value for longer than `regexBudget` (a pattern that backtracks
/// without end, `(a+)+$`, would otherwise hold its query worker, whose deadline cannot stop it).
extension FunctionLibrary {
    static let patterns: [SQLFunction] = [
        search("regexp_contains"),
        search("regexp_like"),
        function("regexp_position", 2...2) { args throws(SofaError) in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0], case .text(let pattern) = args[1] else { return .null }
            let regex = try regexCache.regex(pattern)
            guard let match = try matches(regex, in: string, limit: 1).first,
                  let range = Range(match.range, in: string) else { return .integer(-1) }
            return .integer(Int64(string.utf8.distance(from: string.startIndex, to: range.lowerBound)))
        },
        function("regexp_replace", 3...4) { args throws(SofaError) in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0], case .text(let pattern) = args[1],
                  case .text(let replacement) = args[2] else { return .null }
            var limit = -1
            if args.count == 4 {
                guard let n = args[3].truncatedInteger else { return .null }
                limit = Int(clamping: n)
            }
            let regex = try regexCache.regex(pattern)
            return .text(try replace(string, regex, replacement, limit: limit))
        },
    ]

    static let regexCache = RegexCache()

    private static func search(_ name: String) -> SQLFunction {
        function(name, 2...2) { args throws(SofaError) in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0], case .text(let pattern) = args[1] else { return .null }
            let regex = try regexCache.regex(pattern)
            return .bool(try !matches(regex, in: string, limit: 1).isEmpty)
        }
    }

    /// How long one pattern may search one value.
    static let regexBudget: Duration = .milliseconds(500)

    /// The first `limit` matches (all when negative) of `regex` in `string`, within `regexBudget`
    /// (ICU reports its progress while it searches, and stops when told).
    static func matches(_ regex: NSRegularExpression, in string: String, limit: Int) throws(SofaError) -> [NSTextCheckingResult] {
        guard limit != 0 else { return [] }
        var found: [NSTextCheckingResult] = []
        var outOfTime = false
        let deadline = ContinuousClock.now + regexBudget
        regex.enumerateMatches(in: string, options: [.reportProgress], range: NSRange(location: 0, length: (string as NSString).length)) {
            match, _, stop in
            if let match {
                found.append(match)
                if limit >= 0 && found.count >= limit { stop.pointee = true }
            } else if ContinuousClock.now > deadline {
                outOfTime = true
                stop.pointee = true
            }
        }
        guard !outOfTime else {
            throw SofaError(.invalidQuery, "the regular expression '\(regex.pattern)' searched one value for longer than "
                + "\(regexBudget) (it backtracks too much: simplify nested repetitions such as (a+)+)")
        }
        return found
    }

    /// `string` with its first `limit` matches (all if negative) replaced per ECMAScript's
    /// replacement syntax.
    static func replace(_ string: String, _ regex: NSRegularExpression, _ template: String, limit: Int) throws(SofaError) -> String {
        let text = string as NSString
        let matches = try matches(regex, in: string, limit: limit)
        var out = ""
        var copied = 0
        for match in matches {
            out += text.substring(with: NSRange(location: copied, length: match.range.location - copied))
            out += expand(template, match, in: text)
            copied = match.range.location + match.range.length
        }
        out += text.substring(from: copied)
        return out
    }

    /// The replacement for one match.
    private static func expand(_ template: String, _ match: NSTextCheckingResult, in text: NSString) -> String {
        func group(_ i: Int) -> String {
            let range = match.range(at: i)
            return range.location == NSNotFound ? "" : text.substring(with: range)
        }
        let chars = Array(template)
        var out = ""
        var i = 0
        while i < chars.count {
            let c = chars[i]
            guard c == "$", i + 1 < chars.count else {
                out.append(c)
                i += 1
                continue
            }
            let next = chars[i + 1]
            switch next {
            case "$": out += "$"; i += 2
            case "&": out += group(0); i += 2
            case "`": out += text.substring(to: match.range.location); i += 2
            case "'": out += text.substring(from: match.range.location + match.range.length); i += 2
            default:
                guard let d1 = next.wholeNumberValue, next.isASCII else {
                    out.append(c)
                    i += 1
                    continue
                }
                if i + 2 < chars.count, chars[i + 2].isASCII, let d2 = chars[i + 2].wholeNumberValue,
                   d1 * 10 + d2 >= 1, d1 * 10 + d2 < match.numberOfRanges {
                    out += group(d1 * 10 + d2)
                    i += 3
                } else if d1 >= 1, d1 < match.numberOfRanges {
                    out += group(d1)
                    i += 2
                } else {
                    out.append(c)
                    i += 1
                }
            }
        }
        return out
    }
}

/// Compiled patterns shared by every connection, so a pattern in a query compiles once rather
/// than once per row.
///
/// `@unchecked Sendable`: the dictionary is only touched while holding `lock`, and
/// `NSRegularExpression` is immutable and documented safe to use from several threads.
final class RegexCache: @unchecked Sendable {  // the dictionary only under `lock`; regexes immutable
    // @unchecked: `compiled` is touched only under `lock`; NSRegularExpression is immutable.
    private let lock = NSLock()
    private var compiled: [String: NSRegularExpression] = [:]
    private let capacity = 256

    func regex(_ pattern: String) throws(SofaError) -> NSRegularExpression {
        lock.lock()
        let cached = compiled[pattern]
        lock.unlock()
        if let cached { return cached }
        let regex: NSRegularExpression
        do {
            regex = try NSRegularExpression(pattern: pattern)
        } catch {
            throw SofaError(.invalidQuery, "invalid regular expression '\(pattern)'")
        }
        lock.lock()
        if compiled.count >= capacity { compiled.removeAll(keepingCapacity: true) }
        compiled[pattern] = regex
        lock.unlock()
        return regex
    }
}
