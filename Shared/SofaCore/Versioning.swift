/// How a database versions its documents, chosen when it is created: revision trees
/// (`<generation>-<digest>` revIDs, the default) or version vectors.
public enum Versioning: String, Sendable, Hashable, CaseIterable {
    case revisionTrees = "trees"
    case versionVectors = "vectors"

    /// Parses the wire/CLI name; "" means the default.
    public static func parse(_ name: String) throws(SofaError) -> Versioning {
        if name.isEmpty { return .revisionTrees }
        guard let value = Versioning(rawValue: name) else {
            throw SofaError(.invalidParameter, "unknown versioning '\(name)': use 'trees' or 'vectors'")
        }
        return value
    }
}
