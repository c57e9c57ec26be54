// swift-tools-version:6.1
import PackageDescription

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let log: Target.Dependency = .product(name: "Logging", package: "swift-log")
let lifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")

let package = Package(
    name: "sofa",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "sofa", targets: ["SofaCLIMain"]),
        .executable(name: "sofa-storage", targets: ["SofaStorageMain"]),
        .executable(name: "sofa-query", targets: ["SofaQueryMain"]),
        .executable(name: "sofa-blob", targets: ["SofaBlobMain"]),
        .executable(name: "sofa-replicator", targets: ["SofaReplicatorMain"]),
        .executable(name: "sofa-gateway", targets: ["SofaGatewayMain"]),
        .executable(name: "sofa-http", targets: ["SofaHTTPMain"]),
        .executable(name: "sofa-js", targets: ["SofaJSMain"]),
        .executable(name: "sofa-bench", targets: ["SofaBenchMain"]),
        .executable(name: "sofa-notes-example", targets: ["NotesExampleMain"]),
        .library(name: "SofaClient", targets: ["SofaClient"]),
    ],
    // Exact versions: what the tests run is what the image ships. Their own dependencies are pinned
    // for the image by deploy/dependencies.resolved (regenerate it when a version here changes:
    // `swift package resolve`, then copy Package.resolved there).
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", exact: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", exact: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
    ],
    targets: [
        // System libraries
        .systemLibrary(name: "CSQLite", path: "Shared/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // No pkgConfig: libzmq.pc's Cflags carry its private dependencies' include folders
        // (`-isystem /usr/include/mit-krb5`, which SwiftPM refuses with a warning), none of which
        // zmq.h needs; the header is in the default include path and the module map links zmq.
        // (Debian package libzmq3-dev, installed by scripts/dev.sh setup.)
        .systemLibrary(name: "CZeroMQ", path: "Shared/CZeroMQ"),
        .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CProtobufC", path: "Shared/CProtobufC", pkgConfig: "libprotobuf-c",
                       providers: [.apt(["libprotobuf-c-dev"])]),
        .systemLibrary(name: "CPosix", path: "Shared/CPosix"),
        .systemLibrary(name: "CZlib", path: "Shared/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CDuktape", path: "Shared/CDuktape", pkgConfig: "duktape", providers: [.apt(["duktape-dev"])]),

        // Sofa's FTS5 tokenizer (Snowball stemming through libstemmer)
        .target(name: "CSofaFTS", path: "Shared/CSofaFTS",
                linkerSettings: [.linkedLibrary("stemmer"), .linkedLibrary("sqlite3")]),

        // The Unicode Collation Algorithm's sort keys for view keys (ICU, libicu-dev)
        .target(name: "CSofaCollation", path: "Shared/CSofaCollation",
                linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]),

        // The allocator's settings of each Sofa executable (a constructor, run before main)
        .target(name: "CSofaMalloc", path: "Shared/CSofaMalloc"),

        // posix_spawn of a child that inherits no descriptor (the supervisor's services)
        .target(name: "CSofaSpawn", path: "Shared/CSofaSpawn"),

        // Shared libraries
        .target(name: "SofaCore", dependencies: ["COpenSSL"], path: "Shared/SofaCore",
                swiftSettings: settings),
        .target(name: "SofaWireC", dependencies: ["CProtobufC"], path: "Shared/SofaWire/Generated"),
        .target(name: "SofaWire", dependencies: ["SofaCore", "SofaWireC", "CProtobufC"],
                path: "Shared/SofaWire/Swift", swiftSettings: settings),
        // Transport: ZeroMQ sockets, wake-ups, the request/response client (what the SDK needs)
        .target(name: "SofaBus", dependencies: ["SofaCore", "SofaWire", "CZeroMQ", "CPosix"],
                path: "Shared/SofaBus", swiftSettings: settings),
        // The service runtime: servers, broker and workers, pub/sub, reply budgets, settings,
        // lifecycle, logging, allocator profiles (only the services link it)
        .target(name: "SofaServer", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaFiles", "CZeroMQ", "CPosix", "CSofaMalloc", "CSofaSpawn", log, lifecycle,
                                                  .product(name: "DequeModule", package: "swift-collections")],
                path: "Shared/SofaServer", swiftSettings: settings),
        .target(name: "SofaQL", dependencies: ["SofaCore", "CSQLite", "CSofaFTS", "CSofaCollation"], path: "Shared/SofaQL",
                swiftSettings: settings),
        // The on-disk format: a data directory's and a database folder's layout, blob keys and
        // files, key files, the encrypted blob format, direct I/O and syncs
        .target(name: "SofaFiles", dependencies: ["SofaCore", "COpenSSL", "CPosix"], path: "Shared/SofaFiles",
                swiftSettings: settings),
        // A document's row in a database file: what storage writes and every reader of the file reads
        .target(name: "SofaRows", dependencies: ["SofaCore", "SofaQL", "SofaFiles"], path: "Shared/SofaRows", swiftSettings: settings),
        .target(name: "SofaClient", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaFiles", "CPosix"],
                path: "Shared/SofaClient", swiftSettings: settings),
        // The local cluster (`sofa up`'s supervisor, free ports) and what the command-line tools share
        .target(name: "SofaCluster", dependencies: ["SofaCore", "SofaClient", "SofaFiles", "SofaBus", "CSofaSpawn", argumentParser],
                path: "Shared/SofaCluster", swiftSettings: settings),

        // Services
        .target(name: "SofaStorage", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaQL", "SofaRows", "SofaFiles", "CPosix", log],
                path: "Services/Storage/Lib", swiftSettings: settings),
        .target(name: "SofaQuery", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaQL", "SofaRows", "SofaFiles", log],
                path: "Services/Query/Lib", swiftSettings: settings),
        .target(name: "SofaBlob", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaFiles", "COpenSSL", "CPosix", log],
                path: "Services/Blob/Lib", swiftSettings: settings),
        .target(name: "SofaReplicator", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaClient", "SofaQL", log],
                path: "Services/Replicator/Lib", swiftSettings: settings),
        .target(name: "SofaGateway", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaFiles", "SofaQL", "SofaRows", log],
                path: "Services/Gateway/Lib", swiftSettings: settings),
        // CouchDB's HTTP API, beside the gateway: a client of it (the SDK, acting as each HTTP user)
        .target(name: "SofaHTTP", dependencies: ["SofaCore", "SofaClient", "SofaServer", "SofaFiles", "SofaQL", "SofaRows", "SofaBus", "CZlib", log, lifecycle,
                                                 .product(name: "Hummingbird", package: "hummingbird"),
                                                 .product(name: "HummingbirdCore", package: "hummingbird"),
                                                 .product(name: "HummingbirdTLS", package: "hummingbird"),
                                                 .product(name: "NIOSSL", package: "swift-nio-ssl"),
                                                 .product(name: "NIOPosix", package: "swift-nio"),
                                                 .product(name: "NIOCore", package: "swift-nio"),
                                                 .product(name: "NIOHTTPTypes", package: "swift-nio-extras")],
                path: "Services/HTTP/Lib", swiftSettings: settings),
        // The CLI stands on the SDK, the cluster library and SofaQL (N1QL → JSON) alone
        .target(name: "SofaCLI", dependencies: ["SofaClient", "SofaCluster", "SofaQL", argumentParser],
                path: "Services/CLI/Lib", swiftSettings: settings),

        // Benchmarks: `sofa-bench`, beside the cluster (some figures measure SQLite or a service's
        // engine in-process as the baseline)
        .target(name: "SofaBench",
                dependencies: ["SofaClient", "SofaCluster", "SofaStorage", "SofaBlob", "SofaFiles", "SofaQL", "CZeroMQ", "CSQLite", "CPosix",
                               argumentParser],
                path: "Benchmarks/SofaBench", swiftSettings: settings),
        .executableTarget(name: "SofaBenchMain", dependencies: ["SofaBench", "SofaCluster"], path: "Benchmarks/Main",
                          swiftSettings: settings),

        // Executables: a few lines over each library
        .executableTarget(name: "SofaStorageMain", dependencies: ["SofaStorage", "SofaBus", "SofaServer"],
                          path: "Services/Storage/Main", swiftSettings: settings),
        .executableTarget(name: "SofaQueryMain", dependencies: ["SofaQuery", "SofaBus", "SofaServer"],
                          path: "Services/Query/Main", swiftSettings: settings),
        .executableTarget(name: "SofaBlobMain", dependencies: ["SofaBlob", "SofaBus", "SofaServer"],
                          path: "Services/Blob/Main", swiftSettings: settings),
        .executableTarget(name: "SofaReplicatorMain", dependencies: ["SofaReplicator", "SofaBus", "SofaServer"],
                          path: "Services/Replicator/Main", swiftSettings: settings),
        .executableTarget(name: "SofaGatewayMain", dependencies: ["SofaGateway", "SofaBus", "SofaServer"],
                          path: "Services/Gateway/Main", swiftSettings: settings),
        .executableTarget(name: "SofaHTTPMain", dependencies: ["SofaHTTP", "SofaServer"],
                          path: "Services/HTTP/Main", swiftSettings: settings),
        // Design documents' JavaScript (Duktape), in a process of its own: `sofa-js`
        .target(name: "SofaJS", dependencies: ["SofaCore", "CDuktape", "CSofaMalloc"], path: "Services/JS/Lib", swiftSettings: settings),
        // The model layer's example app (notebooks and notes in one package); the tests use its model.
        .target(name: "NotesExample", dependencies: ["SofaClient", "SofaCluster", "SofaCore", argumentParser],
                path: "Examples/Notes/Lib", swiftSettings: settings),
        .executableTarget(name: "NotesExampleMain", dependencies: ["NotesExample", "SofaClient", "SofaCluster"],
                          path: "Examples/Notes/Main", swiftSettings: settings),
        .executableTarget(name: "SofaJSMain", dependencies: ["SofaJS"], path: "Services/JS/Main", swiftSettings: settings),
        .executableTarget(name: "SofaCLIMain", dependencies: ["SofaCLI"],
                          path: "Services/CLI/Main", swiftSettings: settings),

        // Tests
        .target(name: "SofaTestSupport", path: "Tests/SofaTestSupport", swiftSettings: settings),
        .testTarget(name: "SofaCoreTests",
                    dependencies: ["SofaCore", "SofaTestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
                    path: "Tests/SofaCoreTests", swiftSettings: settings),
        .testTarget(name: "SofaWireTests", dependencies: ["SofaCore", "SofaWire", "SofaWireC", "CProtobufC", "SofaTestSupport"],
                    path: "Tests/SofaWireTests", swiftSettings: settings),
        .testTarget(name: "SofaBusTests", dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaClient", "SofaTestSupport"],
                    path: "Tests/SofaBusTests", swiftSettings: settings),
        .testTarget(name: "SofaBlobTests", dependencies: ["SofaCore", "SofaWire", "SofaBlob", "SofaFiles", "SofaTestSupport"],
                    path: "Tests/SofaBlobTests", swiftSettings: settings),
        .testTarget(name: "SofaBenchTests", dependencies: ["SofaBench", "SofaTestSupport"],
                    path: "Tests/SofaBenchTests", swiftSettings: settings),
        .testTarget(name: "SofaQLTests", dependencies: ["SofaCore", "SofaQL", "CSQLite"],
                    path: "Tests/SofaQLTests", swiftSettings: settings),
        .testTarget(name: "SofaGatewayTests", dependencies: ["SofaWire", "SofaGateway", "SofaFiles"],
                    path: "Tests/SofaGatewayTests", swiftSettings: settings),
        .testTarget(name: "SofaReplicatorTests", dependencies: ["SofaCore", "SofaWire", "SofaReplicator", log],
                    path: "Tests/SofaReplicatorTests", swiftSettings: settings),
        .testTarget(name: "SofaStorageTests", dependencies: ["SofaCore", "SofaQL", "SofaRows", "SofaFiles", "SofaStorage", "SofaGateway", "SofaQuery", "SofaTestSupport", "SofaWire", log],
                    path: "Tests/SofaStorageTests", swiftSettings: settings),
        .testTarget(name: "IntegrationTests",
                    dependencies: ["SofaCore", "SofaWire", "SofaBus", "SofaServer", "SofaClient", "SofaCluster", "SofaBench", "SofaBlob", "SofaFiles", "SofaTestSupport", "CZeroMQ",
                                   "SofaStorageMain", "SofaQueryMain", "SofaBlobMain",
                                   "SofaReplicatorMain", "SofaGatewayMain", "SofaHTTPMain", "SofaJSMain", "SofaCLIMain", "SofaBenchMain",
                                   "NotesExample"],
                    path: "Tests/IntegrationTests", exclude: ["QueryCatalog"], swiftSettings: settings),
    ]
)
