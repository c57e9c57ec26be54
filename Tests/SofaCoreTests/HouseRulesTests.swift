import Foundation
import Testing

/// The dependency rules of the house, read from the sources: a service library imports no other
/// service's library, the CLI imports no service library, and the SDK no server-side module.
@Suite struct HouseRulesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each service's library module and its folder.
    static let services = ["SofaStorage": "Services/Storage/Lib", "SofaQuery": "Services/Query/Lib",
                           "SofaBlob": "Services/Blob/Lib", "SofaReplicator": "Services/Replicator/Lib",
                           "SofaGateway": "Services/Gateway/Lib"]

    static func imports(under folder: String) throws -> [(file: String, module: String)] {
        let directory = root.appendingPathComponent(folder)
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        let pattern = try Regex(#"^\s*(?:@_exported\s+)?(?:(?:public|internal|package|private|fileprivate)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#)
        var found: [(String, String)] = []
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let match = line.firstMatch(of: pattern), let module = match.output[1].substring {
                    found.append((folder + "/" + file, String(module)))
                }
            }
        }
        return found
    }

    @Test func serviceLibrariesImportNoOtherService() throws {
        for (module, folder) in Self.services {
            let others = Set(Self.services.keys).subtracting([module])
            for (file, imported) in try Self.imports(under: folder) {
                #expect(!others.contains(imported), "\(file) imports the service library \(imported)")
            }
        }
    }

    @Test func cliImportsNoServiceLibrary() throws {
        let allowed: Set = ["ArgumentParser", "Foundation", "SofaClient", "SofaCluster", "SofaCore", "SofaQL", "Synchronization"]
        let found = try Self.imports(under: "Services/CLI/Lib")
        #expect(!found.isEmpty)
        for (file, imported) in found {
            #expect(allowed.contains(imported), "\(file) imports \(imported)")
        }
    }

    @Test func sdkImportsNoServerModule() throws {
        let server: Set = Set(Self.services.keys).union(["SofaServer", "SofaCluster", "SofaQL", "CSQLite",
                                                          "ServiceLifecycle", "Logging", "CSofaMalloc"])
        for (file, imported) in try Self.imports(under: "Shared/SofaClient") {
            #expect(!server.contains(imported), "\(file) imports \(imported)")
        }
    }

    /// The SDK re-exports SofaCore (documents, JSON, errors) and names the few wire types its API
    /// takes or returns (`SofaClient+Types.swift`); the rest of the wire stays out of an
    /// application's namespace.
    @Test func sdkReExportsOnlySofaCore() throws {
        let directory = Self.root.appendingPathComponent("Shared/SofaClient")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("@_exported") {
                #expect(line.hasSuffix("import SofaCore"), "\(file): \(line)")
            }
        }
    }
}
