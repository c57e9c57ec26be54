public import SofaCore

/// A property path inside a JSON value, in LiteCore's syntax: keys separated by `.`, array
/// indexes in brackets (negative counts from the end), a backslash escaping the next character.
///
///     name.first        → [key "name", key "first"]
///     likes[0]          → [key "likes", index 0]
///     a.b[-1].c         → [key "a", key "b", index -1, key "c"]
///     we\.ird.x         → [key "we.ird", key "x"]
///     $.a               → [key "a"]   (a leading `$` or `$.` is allowed, as in LiteCore)
///
/// The empty path is the value itself.
public struct PropertyPath: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component]) { self.components = components }

    /// The most keys and indexes a path may have (every write evaluates an index's paths).
    public static let maxComponents = 512

    public static func parse(_ text: String) throws(SofaError) -> PropertyPath {
        var components: [Component] = []
        var chars = Array(text.unicodeScalars)[...]
        if chars.first == "$" {
            chars = chars.dropFirst()
            if chars.first == "." { chars = chars.dropFirst() }
        } else if chars.first == "." {
            chars = chars.dropFirst()
        }
        var key = ""
        var keyStarted = false
        func bad(_ why: String) -> SofaError { SofaError(.invalidQuery, "invalid property path '\(text)': \(why)") }
        while let c = chars.first {
            chars = chars.dropFirst()
            switch c {
            case "\\":
                guard let next = chars.first else { throw bad("ends with a backslash") }
                chars = chars.dropFirst()
                key.unicodeScalars.append(next)
                keyStarted = true
            case ".":
                guard keyStarted else { throw bad("empty property name") }
                components.append(.key(key))
                key = ""
                keyStarted = false
            case "[":
                if keyStarted {
                    components.append(.key(key))
                    key = ""
                    keyStarted = false
                }
                var digits = ""
                while let d = chars.first, d != "]" {
                    digits.unicodeScalars.append(d)
                    chars = chars.dropFirst()
                }
                guard chars.first == "]" else { throw bad("unclosed '['") }
                chars = chars.dropFirst()
                guard let index = Int(digits) else { throw bad("array index '\(digits)' is not an integer") }
                components.append(.index(index))
                if chars.first == "." {
                    chars = chars.dropFirst()
                    guard chars.first != nil else { throw bad("ends with '.'") }
                }
            default:
                key.unicodeScalars.append(c)
                keyStarted = true
            }
        }
        if keyStarted { components.append(.key(key)) }
        guard components.count <= maxComponents else {
            throw bad("more than \(maxComponents) components (keys and indexes)")
        }
        return PropertyPath(components)
    }

    public static func tryParse(_ text: String) -> PropertyPath? { try? parse(text) }

    /// The path written back in the syntax `parse` reads (keys escaped).
    public var description: String {
        var out = ""
        for component in components {
            switch component {
            case .key(let key):
                if !out.isEmpty { out += "." }
                for c in key.unicodeScalars {
                    if c == "." || c == "[" || c == "\\" || c == "]" || (out.isEmpty && c == "$") { out += "\\" }
                    out.unicodeScalars.append(c)
                }
            case .index(let i):
                out += "[\(i)]"
            }
        }
        return out
    }

    /// The last key, which LiteCore uses as a column's title.
    public var lastKey: String? {
        for component in components.reversed() {
            if case .key(let key) = component { return key }
        }
        return nil
    }

    public var isEmpty: Bool { components.isEmpty }

    public func appending(_ other: PropertyPath) -> PropertyPath { PropertyPath(components + other.components) }

    public var first: Component? { components.first }
    public func droppingFirst() -> PropertyPath { PropertyPath(Array(components.dropFirst())) }
}
