import SofaCore

/// The N1QL parser's state: the UTF-8 text, a cursor, and what the furthest failure expected.
///
/// Every rule is a `mutating func` returning the JSON it built, or nil with the cursor put back
/// where the rule started (PEG semantics: ordered choice, each alternative tried from the same
/// place). Terminals that fail record what they wanted at the position they were tried; the error
/// message reports the furthest such position, as LiteCore's leg parser does.
struct N1QLParser {
    let text: [UInt8]
    var pos = 0
    /// The furthest position at which a terminal failed, and the terminals wanted there.
    var failurePos = -1
    var expected: Set<String> = []
    /// Explanations attached to a position (an unknown function, a reserved word).
    var hints: [Int: String] = [:]
    /// How many primaries are being parsed inside one another; bounded so that hostile nesting
    /// is an error, not a stack overflow.
    var depth = 0
    static let maxDepth = 256
    /// An upper bound on the height of the trees built so far in the current expression: every
    /// operator folded onto a chain, every primary and every wrapper adds one. Bounded, so that no
    /// later walk of the tree (compiling it, encoding it, freeing it) can run out of stack: a chain
    /// such as `1+1+…+1` is folded in a loop but builds a tree as deep as it is long.
    var height = 0
    static let maxHeight = QueryLimits.maxExpressionDepth
    /// Set when the query is too deep to parse further; every rule then fails at once, and this is
    /// the error reported.
    var abort: String?
    /// Whether the primary just parsed was `( expression )`, which adds no level to the tree.
    var lastPrimaryWasParenthesized = false

    init(_ source: String) {
        text = Array(source.utf8)
    }

    // MARK: Characters

    var atEnd: Bool { pos >= text.count }

    func peek(_ offset: Int = 0) -> UInt8? {
        let i = pos + offset
        return i < text.count ? text[i] : nil
    }

    static func isSpace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }

    static func isIdentifierStart(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x5F
    }

    static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// `[a-zA-Z0-9_]`: what a word break (`WB`) must not be followed by.
    static func isWordChar(_ c: UInt8) -> Bool { isIdentifierStart(c) || isDigit(c) }

    /// `_`: optional whitespace.
    mutating func skipSpace() {
        while let c = peek(), Self.isSpace(c) { pos += 1 }
    }

    // MARK: Failure bookkeeping

    mutating func fail(_ what: String, at position: Int? = nil) {
        let at = position ?? pos
        if at > failurePos {
            failurePos = at
            expected = [what]
        } else if at == failurePos {
            expected.insert(what)
        }
    }

    mutating func hint(_ message: String, at position: Int) {
        if hints[position] == nil { hints[position] = message }
    }

    // MARK: Terminals (each skips the whitespace after it)

    /// An exact string (punctuation or operator), then whitespace.
    mutating func symbol(_ s: String, _ label: String? = nil) -> Bool {
        if matchRaw(s) {
            skipSpace()
            return true
        }
        fail(label ?? "'\(s)'")
        return false
    }

    /// An exact string with nothing skipped after it; no failure recorded.
    mutating func matchRaw(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard pos + bytes.count <= text.count, Array(text[pos..<pos + bytes.count]) == bytes else { return false }
        pos += bytes.count
        return true
    }

    /// A case-insensitive ASCII word with nothing skipped after it and no word break required.
    mutating func matchWordPrefix(_ word: String) -> Bool {
        let bytes = Array(word.utf8)
        guard pos + bytes.count <= text.count else { return false }
        for (i, b) in bytes.enumerated() where Self.lower(text[pos + i]) != Self.lower(b) { return false }
        pos += bytes.count
        return true
    }

    static func lower(_ c: UInt8) -> UInt8 { (c >= 0x41 && c <= 0x5A) ? c + 0x20 : c }

    /// A keyword: case-insensitive, followed by a word break, then whitespace.
    mutating func keyword(_ word: String, _ label: String? = nil) -> Bool {
        let start = pos
        if matchWordPrefix(word), !(peek().map(Self.isWordChar) ?? false) {
            skipSpace()
            return true
        }
        pos = start
        fail(label ?? word)
        return false
    }

    /// A keyword that is (part of) an operator; a failure is reported as "an operator".
    mutating func operatorKeyword(_ word: String) -> Bool { keyword(word, "an operator") }

    /// Whether `word` comes next as a keyword, without consuming it.
    func lookingAt(keyword word: String) -> Bool {
        var probe = self
        return probe.matchWordPrefix(word) && !(probe.peek().map(Self.isWordChar) ?? false)
    }

    /// `IDENTIFIER`: `[a-zA-Z_][a-zA-Z0-9_$]*` that is not a reserved word, or a back-quoted name
    /// with "``" for a back-quote; then whitespace. `label` names what was wanted, for errors.
    mutating func identifier(_ label: String) -> String? {
        identifierToken(label)?.name
    }

    /// An identifier and whether it was back-quoted.
    mutating func identifierToken(_ label: String) -> (name: String, quoted: Bool)? {
        let start = pos
        guard let c = peek() else {
            fail(label)
            return nil
        }
        if c == UInt8(ascii: "`") {
            var bytes: [UInt8] = []
            var i = pos + 1
            while i < text.count {
                if text[i] == UInt8(ascii: "`") {
                    if i + 1 < text.count, text[i + 1] == UInt8(ascii: "`") {
                        bytes.append(text[i])
                        i += 2
                        continue
                    }
                    pos = i + 1
                    skipSpace()
                    return (String(decoding: bytes, as: UTF8.self), true)
                }
                bytes.append(text[i])
                i += 1
            }
            fail("'`' closing the quoted name", at: text.count)
            return nil
        }
        guard Self.isIdentifierStart(c) else {
            fail(label)
            return nil
        }
        var end = pos + 1
        while end < text.count, Self.isWordChar(text[end]) || text[end] == UInt8(ascii: "$") { end += 1 }
        let word = String(decoding: text[pos..<end], as: UTF8.self)
        if N1QLVocabulary.isReserved(word) {
            fail(label)
            hint("'\(word)' is a reserved word; write `\(word)` to use it as a name", at: start)
            return nil
        }
        pos = end
        skipSpace()
        return (word, false)
    }

    // MARK: Depth

    /// Adds `levels` to the height of the tree being built; past `maxHeight` the parse stops with
    /// an error that names the limit. Returns whether parsing may go on.
    mutating func grow(_ levels: Int = 1) -> Bool {
        guard abort == nil else { return false }
        height += levels
        if height > Self.maxHeight {
            abort = QueryLimits.tooDeep("N1QL query") + ", near offset \(pos)"
            return false
        }
        return true
    }

    /// Parses `rule` as a tree of its own: its height starts from zero and, once parsed, bounds the
    /// height of what encloses it. Siblings (list items, arguments) do not add up.
    mutating func subtree<T>(_ rule: (inout N1QLParser) -> T?) -> T? {
        let outer = height
        height = 0
        let value = rule(&self)
        height = max(outer, height)
        return value
    }

    // MARK: Error message

    /// Where the parse failed and what was wanted there: "N1QL syntax error at line 1, column 13
    /// (offset 12): expected an operator, FROM or end of input; found ')'".
    func errorMessage() -> String {
        if let abort { return abort }
        let at = max(failurePos, 0)
        var line = 1
        var column = 1
        for b in text[0..<min(at, text.count)] {
            if b == 0x0A {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
        }
        var message = "N1QL syntax error at line \(line), column \(column) (offset \(at))"
        let wanted = expected.sorted(by: Self.expectationOrder)
        if !wanted.isEmpty {
            let shown = wanted.count > 14 ? Array(wanted.prefix(14)) + ["…"] : wanted
            message += ": expected " + Self.alternatives(shown)
        }
        message += "; found " + found(at: at)
        if let hint = hints[at] { message += " (\(hint))" }
        return message
    }

    private func found(at position: Int) -> String {
        guard position < text.count else { return "end of input" }
        var end = position
        while end < text.count, end - position < 16, !Self.isSpace(text[end]) { end += 1 }
        if end == position { end += 1 }
        return "'" + String(decoding: text[position..<end], as: UTF8.self) + "'"
    }

    /// Descriptions ("an expression") before keywords, keywords before punctuation.
    private static func expectationOrder(_ a: String, _ b: String) -> Bool {
        func rank(_ s: String) -> Int {
            if s.hasPrefix("'") { return 2 }
            if s.first.map({ $0.isUppercase }) ?? false { return 1 }
            return 0
        }
        return (rank(a), a) < (rank(b), b)
    }

    private static func alternatives(_ items: [String]) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " or " + items[items.count - 1]
    }
}
