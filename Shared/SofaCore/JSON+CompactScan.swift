/// A fast path for document bodies that arrive already compact: one pass over the bytes checks
/// that they are exactly what `compactBytes()` writes for a JSON object and learns what storage
/// needs from them, without building a `JSON` tree; a second pass writes the canonical form.
///
/// The canonical form of compact bytes is a permutation of them inside each object: every token is
/// written the same way by both writers, only members change places. So the scan copies scalars,
/// keys and runs of already-sorted text verbatim and reorders only the members of objects whose
/// keys are out of order.
///
/// Example: `{"b":1,"a":{"d":[1,{"z":0,"y":"é"}],"c":2.5}}` → canonical
/// `{"a":{"c":2.5,"d":[1,{"y":"é","z":0}]},"b":1}`, no "digest" key, no "_" key.
///
/// The scan gives up (nil) on anything it cannot vouch for, and the caller takes the tree path:
/// * not exactly the compact form: whitespace, `\/` or a `\u` escape the writer would not write
///   (only `\u0000`…`\u001f` in lowercase hex, less those written `\b \f \n \r \t`), a number
///   written otherwise (`-0`, `1.0`, `1E2`, `1e2`, an integer beyond `Int64`), a repeated key;
/// * a backslash in a key: the escaped bytes would sort differently from the decoded ones;
/// * two keys of one object that differ in bytes but are equal as Swift strings (`"é"` and
///   `"e\u{301}"`, `"K"` and the Kelvin sign): the tree keeps only one of them;
/// * anything `JSON.parse` refuses (invalid UTF-8, control characters, nesting deeper than
///   `JSON.maxDepth` …) or that is not an object.
extension JSON {
    /// Checks that `bytes` are exactly `JSON.parse(bytes).compactBytes()` for an object and
    /// returns its canonical form and key facts; nil whenever the fast path cannot vouch for the
    /// bytes, and callers then use the tree path (`parseNotingCompact` etc.).
    ///
    /// Example: `{"b":[true,null],"a":"x"}` → canonical `{"a":"x","b":[true,null]}`;
    /// `{"a": 1}` (a space) → nil.
    public static func scanCompactObject(_ bytes: UnsafeBufferPointer<UInt8>) -> CompactObjectScan? {
        var scanner = CompactScanner(bytes)
        guard scanner.scanDocument() else { return nil }
        return CompactObjectScan(canonical: scanner.canonical(), hasDigestKey: scanner.hasDigestKey,
                                 hasUnderscoreTopLevelKey: scanner.hasUnderscoreTopLevelKey)
    }

    public static func scanCompactObject(_ bytes: [UInt8]) -> CompactObjectScan? {
        bytes.withUnsafeBufferPointer { scanCompactObject($0) }
    }
}

/// What a fast byte-level pass learned about bytes that are exactly the compact form of a JSON object.
public struct CompactObjectScan: Sendable {
    /// The canonical form: exactly `JSON.parse(bytes).canonicalBytes()`.
    public var canonical: [UInt8]
    /// Whether some object at any depth (top level included) has the key "digest".
    public var hasDigestKey: Bool
    /// Whether the top-level object has a key starting with "_" (e.g. `_id`, `_rev`, `_deleted`, `_attachments`).
    public var hasUnderscoreTopLevelKey: Bool
}

enum CompactByte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
    static let minus = UInt8(ascii: "-")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
}

/// The scan's state. Objects are numbered in the order they open, so the objects inside any span
/// of the input are a contiguous range of numbers; an object's members are recorded only when the
/// canonical form must reorder something inside it.
struct CompactScanner {
    /// An object: `start` is its `{`, `end` just after its `}`, `subtreeEnd` the number after its
    /// last nested object. When it is not canonical, `firstMember` and `memberCount` locate its
    /// members, sorted by key, in `members` (in `pending` for the top-level object).
    struct Object {
        var start: Int
        var end = 0
        var subtreeEnd = 0
        var isCanonical = true
        var firstMember = 0
        var memberCount = 0
    }

    /// A member from its key's opening quote (`keyStart`) through its value (`end`); `keyEnd` is
    /// the key's closing quote; objects `objects` lie in its value.
    struct Member {
        var keyStart: Int
        var keyEnd: Int
        var end: Int
        var objects: Range<Int>
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    var objects: [Object] = []
    /// The members of the objects being read, innermost last (one stack for all of them).
    var pending: [Member] = []
    /// The sorted members of the nested objects that are not canonical, each object's contiguous
    /// (the top-level object's are left in `pending`).
    var members: [Member] = []
    var nonCanonicalObjects = 0
    /// Whether the last string read was pure ASCII.
    var lastStringIsASCII = true
    var hasDigestKey = false
    var hasUnderscoreTopLevelKey = false

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        objects.reserveCapacity(8)
        pending.reserveCapacity(16)
    }

    mutating func scanDocument() -> Bool {
        guard bytes.count >= 2, bytes[0] == CompactByte.openBrace, scanObject() else { return false }
        return pos == bytes.count
    }

    private mutating func scanValue() -> Bool {
        guard pos < bytes.count else { return false }
        switch bytes[pos] {
        case CompactByte.openBrace: return scanObject()
        case CompactByte.openBracket: return scanArray()
        case CompactByte.quote: return scanString(isKey: false)
        case UInt8(ascii: "t"): return scanLiteral("true")
        case UInt8(ascii: "f"): return scanLiteral("false")
        case UInt8(ascii: "n"): return scanLiteral("null")
        case CompactByte.minus, CompactByte.zero...CompactByte.nine: return scanNumber()
        default: return false
        }
    }

    private mutating func scanLiteral(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - pos >= count else { return false }
        for i in 0..<count where bytes[pos + i] != word.utf8Start[i] { return false }
        pos += count
        return true
    }

    private mutating func scanArray() -> Bool {
        depth += 1
        guard depth <= JSON.maxDepth else { return false }
        pos += 1
        if pos < bytes.count, bytes[pos] == CompactByte.closeBracket {
            pos += 1
            depth -= 1
            return true
        }
        while true {
            guard scanValue(), pos < bytes.count else { return false }
            let c = bytes[pos]
            pos += 1
            if c == CompactByte.comma { continue }
            if c == CompactByte.closeBracket { break }
            return false
        }
        depth -= 1
        return true
    }

    private mutating func scanObject() -> Bool {
        depth += 1
        guard depth <= JSON.maxDepth else { return false }
        let number = objects.count
        objects.append(Object(start: pos))
        let nonCanonicalBefore = nonCanonicalObjects
        let first = pending.count
        var sorted = true
        var allKeysASCII = true
        pos += 1
        if pos < bytes.count, bytes[pos] == CompactByte.closeBrace {
            pos += 1
        } else {
            while true {
                let keyStart = pos
                guard pos < bytes.count, bytes[pos] == CompactByte.quote, scanString(isKey: true) else { return false }
                let keyEnd = pos - 1
                guard pos < bytes.count, bytes[pos] == CompactByte.colon else { return false }
                pos += 1
                allKeysASCII = allKeysASCII && lastStringIsASCII
                noteKey(keyStart + 1, keyEnd)
                let objectsBefore = objects.count
                guard scanValue() else { return false }
                let member = Member(keyStart: keyStart, keyEnd: keyEnd, end: pos, objects: objectsBefore..<objects.count)
                if pending.count > first {
                    switch compareKeys(pending[pending.count - 1], member) {
                    case .less: break
                    case .equal: return false  // a repeated key: the writer writes it once
                    case .greater: sorted = false
                    }
                }
                pending.append(member)
                guard pos < bytes.count else { return false }
                let c = bytes[pos]
                pos += 1
                if c == CompactByte.comma { continue }
                if c == CompactByte.closeBrace { break }
                return false
            }
        }
        let count = pending.count - first
        if !allKeysASCII && count > 1 && !keysAreDistinctStrings(pending[first...]) { return false }
        if !sorted {
            guard sortMembers(from: first) else { return false }
        }
        objects[number].end = pos
        objects[number].subtreeEnd = objects.count
        depth -= 1
        guard !sorted || nonCanonicalObjects != nonCanonicalBefore else {
            pending.removeLast(count)
            return true
        }
        nonCanonicalObjects += 1
        objects[number].isCanonical = false
        objects[number].memberCount = count
        // The top-level object's members stay where they are, alone on the stack.
        guard number > 0 else { return true }
        objects[number].firstMember = members.count
        members.append(contentsOf: pending[first...])
        pending.removeLast(count)
        return true
    }

    /// Sorts the members of the object being closed, `pending[first...]`, by key; false when two
    /// keys are equal. Insertion sort: objects are small, and often nearly sorted.
    private mutating func sortMembers(from first: Int) -> Bool {
        let bytes = self.bytes
        if pending.count - first > 32 {
            pending[first...].sort { Self.compareKeys(bytes, $0, $1) == .less }
            for i in first + 1 ..< pending.count where compareKeys(pending[i - 1], pending[i]) == .equal { return false }
            return true
        }
        return pending.withUnsafeMutableBufferPointer { members in
            for i in first + 1 ..< members.count {
                let member = members[i]
                var j = i
                while j > first {
                    let order = Self.compareKeys(bytes, members[j - 1], member)
                    if order == .equal { return false }
                    if order == .less { break }
                    members[j] = members[j - 1]
                    j -= 1
                }
                members[j] = member
            }
            return true
        }
    }

    /// Notes what storage asks about a key: "digest" anywhere, "_…" at the top level. Comparing
    /// bytes is exact: no other spelling of these is equal to them as a Swift string.
    private mutating func noteKey(_ start: Int, _ end: Int) {
        if depth == 1, end > start, bytes[start] == UInt8(ascii: "_") { hasUnderscoreTopLevelKey = true }
        if end - start == 6 {
            let digest: StaticString = "digest"
            var same = true
            for i in 0..<6 where bytes[start + i] != digest.utf8Start[i] { same = false }
            if same { hasDigestKey = true }
        }
    }

    /// Keys compare as `String.utf8.lexicographicallyPrecedes` does: by unsigned bytes, a proper
    /// prefix first. Keys hold no escapes, so their bytes are the decoded key's UTF-8.
    private func compareKeys(_ a: Member, _ b: Member) -> Order { Self.compareKeys(bytes, a, b) }

    private static func compareKeys(_ bytes: UnsafeBufferPointer<UInt8>, _ a: Member, _ b: Member) -> Order {
        var i = a.keyStart + 1
        var j = b.keyStart + 1
        while i < a.keyEnd && j < b.keyEnd {
            if bytes[i] != bytes[j] { return bytes[i] < bytes[j] ? .less : .greater }
            i += 1
            j += 1
        }
        if i == a.keyEnd { return j == b.keyEnd ? .equal : .less }
        return .greater
    }

    enum Order { case less, equal, greater }

    /// Whether no two keys are equal as Swift strings (as `JSONObject` compares them), which for
    /// non-ASCII keys is more than differing in bytes.
    private func keysAreDistinctStrings(_ members: ArraySlice<Member>) -> Bool {
        var seen = Set<String>(minimumCapacity: members.count)
        for m in members {
            let key = String(decoding: UnsafeBufferPointer(rebasing: bytes[m.keyStart + 1 ..< m.keyEnd]), as: UTF8.self)
            if !seen.insert(key).inserted { return false }
        }
        return true
    }

    // MARK: Canonical form

    /// The canonical form: as long as the input, each object's members in key order.
    func canonical() -> [UInt8] {
        if objects[0].isCanonical { return Array(bytes) }
        return [UInt8](unsafeUninitializedCapacity: bytes.count) { out, count in
            var writer = Writer(bytes: bytes, out: out, objects: objects, topMembers: pending, members: members)
            writer.writeObject(0)
            precondition(writer.count == bytes.count, "the canonical form is a permutation of the compact form")
            count = writer.count
        }
    }

    private struct Writer {
        let bytes: UnsafeBufferPointer<UInt8>
        let out: UnsafeMutableBufferPointer<UInt8>
        let objects: [Object]
        let topMembers: [Member]
        let members: [Member]
        var count = 0

        mutating func copy(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            precondition(count + range.count <= out.count)
            (out.baseAddress! + count).initialize(from: bytes.baseAddress! + range.lowerBound, count: range.count)
            count += range.count
        }

        mutating func byte(_ b: UInt8) {
            precondition(count < out.count)
            (out.baseAddress! + count).initialize(to: b)
            count += 1
        }

        mutating func writeObject(_ number: Int) {
            let object = objects[number]
            if object.isCanonical { return copy(object.start..<object.end) }
            byte(CompactByte.openBrace)
            for i in 0..<object.memberCount {
                if i > 0 { byte(CompactByte.comma) }
                let member = number == 0 ? topMembers[i] : members[object.firstMember + i]
                writeSpan(member.keyStart..<member.end, objects: member.objects)
            }
            byte(CompactByte.closeBrace)
        }

        /// Input bytes as they are, except the objects inside, written canonically.
        mutating func writeSpan(_ span: Range<Int>, objects inside: Range<Int>) {
            var cursor = span.lowerBound
            var number = inside.lowerBound
            while number < inside.upperBound {
                let object = objects[number]
                copy(cursor..<object.start)
                writeObject(number)
                cursor = object.end
                number = object.subtreeEnd
            }
            copy(cursor..<span.upperBound)
        }
    }
}
