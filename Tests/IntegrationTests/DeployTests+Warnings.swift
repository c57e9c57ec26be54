import Foundation
import Testing

/// `scripts/dev.sh test` (what .ci/run runs) fails when the build prints a warning, shows the
/// build's output, and runs the tests only after a clean build. Checked with a stand-in `swift`
/// first on PATH that prints a given build output, so no real build runs.
extension DeployTests {
    struct GateCase: Sendable, CustomTestStringConvertible {
        var name: String
        var buildOutput: String
        var buildStatus: Int32
        var passes: Bool
        var testDescription: String { name }
    }

    static let gateCases: [GateCase] = [
        GateCase(name: "clean build", buildOutput: "[1/1] Compiling SofaCore SofaError.swift\nBuild complete!",
                 buildStatus: 0, passes: true),
        GateCase(name: "a compiler warning",
                 buildOutput: "/src/Shared/SofaCore/Probe.swift:3:8: warning: probe warning 41\nBuild complete!",
                 buildStatus: 0, passes: false),
        GateCase(name: "a SwiftPM warning", buildOutput: "warning: prohibited flag(s): -isystem probe 42\nBuild complete!",
                 buildStatus: 0, passes: false),
        GateCase(name: "a failed build", buildOutput: "/src/Probe.swift:1:1: error: probe error 43", buildStatus: 1, passes: false),
    ]

    @Test("scripts/dev.sh test fails on a build warning, shows it, and runs no test", arguments: gateCases)
    func testCommandFailsOnWarnings(_ gate: GateCase) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-gate-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let ran = folder.appendingPathComponent("swift-test-ran")
        let outputFile = folder.appendingPathComponent("build-output")
        try Data((gate.buildOutput + "\n").utf8).write(to: outputFile)
        let swift = folder.appendingPathComponent("swift")
        let script = """
            #!/bin/sh
            case "$1" in
              --version) echo "Swift version 6.3 (stand-in)" ;;
              build) cat '\(outputFile.path)'; exit \(gate.buildStatus) ;;
              test) echo "$@" > '\(ran.path)' ;;
              *) echo "unexpected: $*" >&2; exit 99 ;;
            esac
            """
        try #require(FileManager.default.createFile(atPath: swift.path, contents: Data(script.utf8),
                                                     attributes: [.posixPermissions: 0o755]))

        let path = folder.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let devScript = try Self.repoRoot().appendingPathComponent("scripts/dev.sh")
        let result = try await Self.run(URL(fileURLWithPath: "/usr/bin/env"),
                                        ["PATH=\(path)", "bash", devScript.path, "test", "--filter", "Probe"])
        let shown = result.stdout + result.stderr

        let lastLine = gate.buildOutput.split(separator: "\n").last.map(String.init) ?? ""
        #expect(shown.contains(lastLine), "the build's output is not shown:\n\(shown)")
        if gate.passes {
            #expect(result.status == 0, "exit \(result.status):\n\(shown)")
            let arguments = try String(contentsOf: ran, encoding: .utf8)
            #expect(arguments.trimmingCharacters(in: .whitespacesAndNewlines) == "test --skip-build --filter Probe")
        } else {
            #expect(result.status != 0, "a build with \(gate.name) passed:\n\(shown)")
            #expect(!FileManager.default.fileExists(atPath: ran.path), "the tests ran after a build with \(gate.name)")
            if gate.buildStatus == 0 {
                let warning = gate.buildOutput.split(separator: "\n").first { $0.contains("warning:") }.map(String.init) ?? ""
                #expect(shown.components(separatedBy: warning).count >= 3,
                        "the warning is not both in the build's output and in the summary:\n\(shown)")
            }
        }
    }
}
