/// A JSON object: unique keys, kept in insertion order (replacing a value keeps its position).
///
/// Small objects are searched linearly; from `indexThreshold` members on, a hash index maps keys to
/// positions. Two objects are equal when they hold the same members, in any order.
///
/// Keys compare as Swift `String`s, that is by Unicode canonical equivalence: `"é"` (U+00E9) and
/// `"e\u{301}"` are the same key, so a document holding both keeps one (the last value, as for
/// any repeated key).
public struct JSONObject: Sendable, Sequence {
    public typealias Element = (key: String, value: JSON)

    private var entries: [Element] = []
    private var index: [String: Int] = [:]
    private static let indexThreshold = 12

    public init() {}

    /// Pairs in order; a repeated key keeps its first position and takes its last value.
    public init(_ pairs: [(String, JSON)]) {
        entries.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public var keys: [String] { entries.map(\.key) }
    public var values: [JSON] { entries.map(\.value) }

    public func makeIterator() -> IndexingIterator<[Element]> { entries.makeIterator() }

    private func position(of key: String) -> Int? {
        if entries.count >= Self.indexThreshold { return index[key] }
        return entries.firstIndex { $0.key == key }
    }

    public subscript(key: String) -> JSON? {
        get { position(of: key).map { entries[$0].value } }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            if let i = position(of: key) {
                entries[i].value = newValue
                return
            }
            entries.append((key, newValue))
            if entries.count > Self.indexThreshold {
                index[key] = entries.count - 1
            } else if entries.count == Self.indexThreshold {
                rebuildIndex()
            }
        }
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSON? {
        guard let i = position(of: key) else { return nil }
        let value = entries.remove(at: i).value
        if entries.count >= Self.indexThreshold {
            rebuildIndex()
        } else if !index.isEmpty {
            index = [:]
        }
        return value
    }

    private mutating func rebuildIndex() {
        index = [:]
        index.reserveCapacity(entries.count)
        for (i, entry) in entries.enumerated() { index[entry.key] = i }
    }
}

extension JSONObject: Hashable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs where rhs[key] != value { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent: combine each member's own hash commutatively.
        var sum = 0
        for (key, value) in entries {
            var h = Hasher()
            h.combine(key)
            h.combine(value)
            sum = sum &+ h.finalize()
        }
        hasher.combine(entries.count)
        hasher.combine(sum)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSON)...) { self.init(elements) }
}

extension JSONObject: CustomStringConvertible {
    public var description: String { JSON.object(self).compactString }
}
