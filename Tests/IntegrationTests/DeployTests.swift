import Foundation
import SofaCore
import Testing

/// Checks the deploy files without a container engine: `docker-compose config` (Debian's
/// docker-compose package, installed by `scripts/dev.sh setup`) validates and normalises
/// docker-compose.yml, and the scripts are syntax-checked with `bash -n`.
@Suite("Deploy files")
struct DeployTests {
    static let services = ServiceRole.allCases.map(\.rawValue)

    // MARK: - docker-compose

    @Test("docker-compose config -q accepts docker-compose.yml")
    func composeFileIsValid() async throws {
        let result = try await Self.compose(["config", "-q"])
        #expect(result.status == 0, "docker-compose config -q failed:\n\(result.stderr)")
    }

    @Test("every process is a service; only the gateway and the HTTP API publish a port, on 127.0.0.1; query scales")
    func composeServices() async throws {
        let result = try await Self.compose(["config"])
        try #require(result.status == 0, "docker-compose config failed:\n\(result.stderr)")
        let sections = Self.serviceSections(of: result.stdout)

        #expect(Set(sections.keys) == Set(Self.services), "services: \(sections.keys.sorted())")

        let query = try #require(sections["query"], "no query service")
        let queryKeys = Self.keys(of: query)
        #expect(!queryKeys.contains("container_name"), "query must not have a container_name")
        #expect(!queryKeys.contains("ports"), "query must not publish ports")
        #expect(!queryKeys.contains("hostname"), "query must not have a fixed hostname")

        // The comment at the top says where the gateway is reached; the port agrees with it.
        let gateway = try #require(sections["gateway"], "no gateway service")
        let ports = Self.block("ports", of: gateway).joined(separator: "\n")
        #expect(ports.contains("127.0.0.1:7420:7420") || ports.contains("host_ip: 127.0.0.1"),
                "gateway must publish 7420 on 127.0.0.1 only, got:\n\(ports)")
        let file = try String(contentsOf: Self.repoRoot().appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        #expect(file.contains("# gateway on tcp://127.0.0.1:7420"), "the compose file's comment no longer says where the gateway is")

        let http = try #require(sections["http"], "no http service")
        let httpPorts = Self.block("ports", of: http).joined(separator: "\n")
        #expect(httpPorts.contains("127.0.0.1:5984:5984") || httpPorts.contains("host_ip: 127.0.0.1"),
                "http must publish 5984 on 127.0.0.1 only, got:\n\(httpPorts)")

        for name in Self.services where name != "gateway" && name != "http" {
            let keys = Self.keys(of: sections[name] ?? [])
            #expect(!keys.contains("ports"), "\(name) must not publish ports")
        }
    }

    @Test("each service runs its executable from the one image")
    func composeCommands() async throws {
        let result = try await Self.compose(["config"])
        try #require(result.status == 0, "docker-compose config failed:\n\(result.stderr)")
        let sections = Self.serviceSections(of: result.stdout)
        for role in ServiceRole.allCases {
            let section = try #require(sections[role.rawValue], "no \(role.rawValue) service")
            let command = "sofa-\(role.rawValue)"
            let commandLines = Self.block("command", of: section).map(Self.unquoted)
            #expect(commandLines.contains("- \(command)") || commandLines.contains("command: \(command)"),
                    "\(role.rawValue) must run \(command), got \(commandLines)")
            #expect(Self.block("image", of: section).first.map(Self.unquoted) == "image: sofa:latest",
                    "\(role.rawValue) must use image sofa:latest")
        }
    }

    // MARK: - scripts

    @Test("scripts/dev.sh and .ci/run parse with bash -n and are executable",
          arguments: ["scripts/dev.sh", ".ci/run"])
    func scriptSyntax(path: String) async throws {
        let script = try Self.repoRoot().appendingPathComponent(path)
        #expect(FileManager.default.isExecutableFile(atPath: script.path), "\(path) is not executable")
        let bash = Self.executableOnPath("bash") ?? URL(fileURLWithPath: "/bin/bash")
        let result = try await Self.run(bash, ["-n", script.path])
        #expect(result.status == 0, "bash -n \(path) failed:\n\(result.stderr)")
    }

    @Test(".ci/run runs the README's test command")
    func ciRunsTheTestCommand() throws {
        let ci = try String(contentsOf: Self.repoRoot().appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/dev.sh test"))
    }

    // MARK: - helpers

    struct ProcessResult: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The package root: the nearest ancestor of this file that holds Package.swift.
    static func repoRoot() throws -> URL {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
                return dir
            }
            dir = dir.deletingLastPathComponent()
        }
        throw DeployTestError("no Package.swift above \(#filePath)")
    }

    static func executableOnPath(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        return nil
    }

    /// Runs `docker-compose -f <repo>/docker-compose.yml <arguments>`; fails the test when
    /// docker-compose is not installed.
    static func compose(_ arguments: [String]) async throws -> ProcessResult {
        // `config` is read by many tests: run once per test process (docker-compose is a Python
        // program, a second of CPU per start on a machine the rest of the suite keeps busy).
        if arguments == ["config"] { return try await composeConfig.value }
        return try await runCompose(arguments)
    }

    private static let composeConfig = Task { try await runCompose(["config"]) }

    private static func runCompose(_ arguments: [String]) async throws -> ProcessResult {
        let compose = try #require(
            executableOnPath("docker-compose"),
            "docker-compose is not on PATH: `scripts/dev.sh setup` installs it (Debian package docker-compose)")
        let file = try repoRoot().appendingPathComponent("docker-compose.yml")
        return try await run(compose, ["-f", file.path] + arguments)
    }

    /// Runs a program to completion without blocking a thread: output goes to temporary
    /// files (a full pipe cannot stall the child) and exit is awaited via terminationHandler.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
        let files = FileManager.default
        let dir = files.temporaryDirectory.appendingPathComponent("sofa-deploy-tests-\(UUID().uuidString)")
        try files.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? files.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        guard files.createFile(atPath: outURL.path, contents: nil),
              files.createFile(atPath: errURL.path, contents: nil) else {
            throw DeployTestError("cannot create output files in \(dir.path)")
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in
                continuation.resume(returning: finished.terminationStatus)
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return ProcessResult(
            status: status,
            stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
    }

    // `docker-compose config` prints normalised block YAML, two spaces per level:
    //   services:
    //     gateway:
    //       ports:
    //       - published: 7420
    //         target: 7420
    // so a service is the lines indented deeper than its own two-space name line.

    /// Lines of each service under the top-level `services:` key, by service name.
    static func serviceSections(of yaml: String) -> [String: [String]] {
        var sections: [String: [String]] = [:]
        var inServices = false
        var current: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            let indent = line.prefix(while: { $0 == " " }).count
            if indent == 0 {
                inServices = line.hasPrefix("services:")
                current = nil
            } else if inServices && indent == 2 && line.hasSuffix(":") {
                let name = String(line.dropFirst(2).dropLast())
                current = name
                sections[name] = []
            } else if inServices, let name = current, indent > 2 {
                sections[name, default: []].append(line)
            }
        }
        return sections
    }

    /// The keys directly under a service (four-space indent).
    static func keys(of section: [String]) -> Set<String> {
        Set(section.compactMap { line -> String? in
            guard line.prefix(while: { $0 == " " }).count == 4, !line.dropFirst(4).hasPrefix("-"),
                  let colon = line.firstIndex(of: ":") else { return nil }
            return line[..<colon].trimmingCharacters(in: .whitespaces)
        })
    }

    /// The `key:` line of a service and the lines nested under it, trimmed.
    static func block(_ key: String, of section: [String]) -> [String] {
        var lines: [String] = []
        var inside = false
        for line in section {
            let indent = line.prefix(while: { $0 == " " }).count
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if indent == 4 && !trimmed.hasPrefix("-") {
                inside = trimmed.hasPrefix("\(key):")
                if inside { lines.append(trimmed) }
            } else if inside {
                lines.append(trimmed)
            }
        }
        return lines
    }

    /// `KEY: value` lines of a block (the `environment:` line itself is skipped).
    static func mapping(_ block: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for line in block.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = unquoted(String(line[..<colon]))
            let value = unquoted(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            result[key] = value
        }
        return result
    }

    static func unquoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "").replacingOccurrences(of: "'", with: "")
    }

    struct DeployTestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
