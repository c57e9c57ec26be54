import Foundation
import Testing

/// The image's build context and its dependency versions, checked without a container engine:
/// the context is computed by the same code docker-compose builds with (docker-py's
/// `exclude_paths`, run by docker-compose's own Python), and the Dockerfile's resolve step is run
/// as the Dockerfile runs it.
extension DeployTests {
    /// Paths that must never be sent to the image build, wherever a developer's checkout has them.
    static let leftOut = [
        ".build/debug/sofa", ".build-release/release/sofa", ".build_tsan/debug/sofa",
        ".sofa-data/app.sofa/db.sqlite3", ".git/HEAD", ".swiftpm/configuration/mirrors.json",
        "Package.resolved",                          // the host's resolution: the image has its own
        "wt-d/.git", "wt-d/Package.swift",           // a git worktree made inside the checkout
        "Services/CLI/.build/debug/sofa",            // a nested build folder
    ]

    @Test(".dockerignore sends the Dockerfile's sources and none of .build, .sofa-data, .git, worktrees")
    func buildContextHoldsTheSourcesOnly() async throws {
        let sources = try Self.dockerfileCopySources()
        #expect(sources.contains("Package.swift") && sources.contains("Shared/"), "COPY sources: \(sources)")

        // A checkout in miniature: the real .dockerignore and Dockerfile, a file under each COPY
        // source, and each path that must stay out.
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-context-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let repo = try Self.repoRoot()
        let wanted = sources.map { $0.hasSuffix("/") ? $0 + "probe.swift" : $0 }
        for path in wanted + Self.leftOut + [".dockerignore", "deploy/Dockerfile"] {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            let original = repo.appendingPathComponent(path)
            let contents = path == ".dockerignore" || path == "deploy/Dockerfile" ? try Data(contentsOf: original) : Data()
            try #require(FileManager.default.createFile(atPath: file.path, contents: contents), "cannot create \(file.path)")
        }

        let sent = Set(try await Self.buildContext(of: root, dockerfile: "deploy/Dockerfile"))
        for path in wanted {
            #expect(sent.contains(path), "\(path) (a COPY source of deploy/Dockerfile) is not in the build context")
        }
        for path in Self.leftOut {
            #expect(!sent.contains(path), "\(path) is sent to the image build")
        }
    }

    @Test("Package.swift pins each dependency exactly, at the version deploy/dependencies.resolved pins")
    func dependenciesArePinned() throws {
        let repo = try Self.repoRoot()
        let manifest = try String(contentsOf: repo.appendingPathComponent("Package.swift"), encoding: .utf8)
        let declared = manifest.split(separator: "\n").filter { $0.contains(".package(") }
        try #require(!declared.isEmpty, "no .package( line in Package.swift")

        let resolved = try Data(contentsOf: repo.appendingPathComponent("deploy/dependencies.resolved"))
        let pins = try JSONDecoder().decode(Resolution.self, from: resolved).pins
        for pin in pins {
            #expect(pin.state.revision.count == 40 && pin.state.version != nil, "\(pin.identity) is not pinned to a tagged revision")
        }
        let byLocation = Dictionary(pins.map { (Self.normalised($0.location), $0) }, uniquingKeysWith: { first, _ in first })

        let exact = /\.package\(url:\s*"([^"]+)",\s*exact:\s*"([^"]+)"\)/
        for line in declared {
            guard let match = line.firstMatch(of: exact) else {
                Issue.record("not an exact version: \(line.trimmingCharacters(in: .whitespaces))")
                continue
            }
            let (url, version) = (String(match.1), String(match.2))
            let pin = byLocation[Self.normalised(url)]
            #expect(pin?.state.version == version,
                    "\(url) is \(version) in Package.swift but \(pin?.state.version ?? "absent") in deploy/dependencies.resolved")
        }
    }

    /// The Dockerfile's resolve step, run as the image build runs it: Package.swift and the committed
    /// resolution alone, in a fresh folder. `--force-resolved-versions` fails when the resolution
    /// is stale, so an edit to Package.swift without a new deploy/dependencies.resolved fails here.
    @Test("the Dockerfile resolves from deploy/dependencies.resolved, which is current with Package.swift")
    func imageResolvesFromTheCommittedResolution() async throws {
        let dockerfile = try String(contentsOf: Self.repoRoot().appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        let lines = dockerfile.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("COPY deploy/dependencies.resolved Package.resolved"),
                "deploy/Dockerfile does not install the committed resolution as Package.resolved")
        for line in lines where line.contains("swift package resolve") || line.contains("swift build -c release --static") {
            #expect(line.contains("--force-resolved-versions"), "resolves afresh: \(line)")
        }
        let resolve = try #require(lines.first { $0.hasPrefix("RUN swift package resolve") }, "no resolve step in deploy/Dockerfile")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-resolve-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let repo = try Self.repoRoot()
        try FileManager.default.copyItem(at: repo.appendingPathComponent("Package.swift"), to: folder.appendingPathComponent("Package.swift"))
        try FileManager.default.copyItem(at: repo.appendingPathComponent("deploy/dependencies.resolved"),
                                         to: folder.appendingPathComponent("Package.resolved"))
        // Bounded: a fetch that hangs fails the test after four minutes instead of stalling the suite
        // (the resolve makes six working copies: 3 s on an idle machine, 30 s under the suite's load).
        let timeout = try #require(Self.executableOnPath("timeout"), "coreutils timeout is not on PATH")
        // TMPDIR: SwiftPM's lock files for the folder go inside it, removed with it.
        let command = "cd '\(folder.path)' && TMPDIR='\(folder.path)' " + resolve.dropFirst("RUN ".count)
        let result = try await Self.run(timeout, ["240", "/bin/sh", "-c", command])
        #expect(result.status == 0, "\(resolve) failed (\(result.status)):\n\(result.stderr)\(result.stdout)")
    }

    // MARK: - helpers

    struct Resolution: Decodable {
        struct Pin: Decodable {
            struct State: Decodable {
                var revision: String
                var version: String?
            }
            var identity: String
            var location: String
            var state: State
        }
        var pins: [Pin]
    }

    /// A repository URL without case, trailing `.git` or `/`.
    static func normalised(_ url: String) -> String {
        var text = url.lowercased()
        if text.hasSuffix("/") { text.removeLast() }
        if text.hasSuffix(".git") { text.removeLast(4) }
        return text
    }

    /// The source paths of the Dockerfile's `COPY` lines that copy from the build context.
    static func dockerfileCopySources() throws -> [String] {
        let dockerfile = try String(contentsOf: repoRoot().appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        return dockerfile.split(separator: "\n").flatMap { line -> [String] in
            let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard words.first == "COPY", !words.contains(where: { $0.hasPrefix("--from") }) else { return [] }
            return Array(words.dropFirst().filter { !$0.hasPrefix("--") }.dropLast())
        }
    }

    /// The files (and folders) docker-compose sends as the build context of `root`: its
    /// .dockerignore read as docker-py reads it, then docker-py's `exclude_paths`, with the Python
    /// that runs docker-compose.
    static func buildContext(of root: URL, dockerfile: String) async throws -> [String] {
        let compose = try #require(
            executableOnPath("docker-compose"),
            "docker-compose is not on PATH: `scripts/dev.sh setup` installs it (Debian package docker-compose)")
        let shebang = try String(contentsOf: compose, encoding: .utf8).prefix { $0 != "\n" }
        let python = try #require(shebang.hasPrefix("#!") ? String(shebang.dropFirst(2)) : nil, "no #! in \(compose.path)")
        let script = """
            import os, sys
            from docker.utils.build import exclude_paths
            root, dockerfile = sys.argv[1], sys.argv[2]
            with open(os.path.join(root, '.dockerignore')) as f:
                lines = [l.strip() for l in f.read().splitlines()]
            patterns = [l for l in lines if l != '' and l[0] != '#']
            for path in sorted(exclude_paths(root, patterns, dockerfile=dockerfile)):
                print(path)
            """
        let words = python.split(separator: " ").map(String.init)
        let result = try await run(URL(fileURLWithPath: words[0]), Array(words.dropFirst()) + ["-c", script, root.path, dockerfile])
        try #require(result.status == 0, "docker-py's exclude_paths failed:\n\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }
}
