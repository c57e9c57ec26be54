public import Foundation

/// Where the tests' data files live: `Tests/Fixtures` in the package, found from the package
/// root (the nearest folder above this file that holds Package.swift), so a fresh clone's tests
/// need nothing beside the repository.
public enum Fixtures {
    /// The package root.
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url.deleteLastPathComponent()
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    /// LiteCore's test datasets and the encrypted blob Couchbase Lite wrote (see SOURCES.md there).
    public static var litecore: URL {
        packageRoot.appendingPathComponent("Tests/Fixtures/litecore", isDirectory: true)
    }

    /// One file of `litecore`.
    public static func litecore(_ name: String) -> URL { litecore.appendingPathComponent(name) }
}
