import Foundation
import SofaCluster
import SofaTestSupport
import Testing

/// The README is run as written: every command of its ```sh blocks, in order, in one shell
/// against a fresh cluster, from a folder that holds what a checkout holds (the built tools,
/// the fixtures). A command must succeed and print nothing on stderr (but the `sofa: note:` lines
/// of one whose comment says it prints a note); a ```console block
/// (`$ command` and the lines it prints, `…` standing for any text) must print what it shows.
/// A block whose info string says `not-run` (` ```sh not-run `) is not run, nor is a line that
/// ends with `# not run`; the README says why next to each.
@Suite(.serialized) struct ReadmeTests {
    struct Step: Sendable {
        var line: Int
        var command: String
        /// nil: a command of a ```sh block; else the output a ```console block shows.
        var expected: [String]?
    }

    static func steps(of readme: String) -> [Step] {
        var steps: [Step] = []
        var fence: (info: String, start: Int)?
        var pending = ""
        for (index, raw) in readme.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            if line.hasPrefix("```") {
                fence = fence == nil ? (String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces), index + 1) : nil
                continue
            }
            guard let block = fence, !block.info.contains("not-run") else { continue }
            switch block.info {
            case "sh":
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasSuffix("# not run") { continue }
                if trimmed.hasSuffix("\\") {
                    pending += String(trimmed.dropLast()).trimmingCharacters(in: .whitespaces) + " "
                    continue
                }
                steps.append(Step(line: index + 1, command: pending + trimmed, expected: nil))
                pending = ""
            case "console":
                if line.hasPrefix("$ ") {
                    steps.append(Step(line: index + 1, command: String(line.dropFirst(2)), expected: []))
                } else if !line.isEmpty, !steps.isEmpty, steps[steps.count - 1].expected != nil {
                    steps[steps.count - 1].expected!.append(line)
                }
            default:
                continue
            }
        }
        return steps
    }

    /// Whether `text` is `pattern`, where `…` stands for any text.
    static func matches(_ text: String, _ pattern: String) -> Bool {
        let parts = pattern.components(separatedBy: "…")
        guard parts.count > 1 else { return text == pattern }
        guard text.hasPrefix(parts[0]), text.hasSuffix(parts[parts.count - 1]) else { return false }
        var rest = text.dropFirst(parts[0].count).dropLast(parts[parts.count - 1].count)
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let range = rest.range(of: part) else { return false }
            rest = rest[range.upperBound...]
        }
        return true
    }

    @Test func theParserFindsCommandsAndTranscripts() {
        let sample = """
        ```sh
        a && b   # first
        # a comment
        c \\
          --flag
        d        # not run
        ```
        ```sh not-run
        e
        ```
        ```console
        $ f
        sofa: conflict (8): …
        ```
        """
        let steps = Self.steps(of: sample)
        #expect(steps.map(\.command) == ["a && b   # first", "c --flag", "f"])
        #expect(steps.last?.expected == ["sofa: conflict (8): …"])
        #expect(Self.matches("sofa: conflict (8): document 'a'", "sofa: conflict (8): …"))
        #expect(Self.matches("rev 1-ab (1-cd)", "rev 1-… (1-…)"))
        #expect(!Self.matches("sofa: not_found (7): x", "sofa: conflict (8): …"))
    }

    @Test func everyCommandRunsAsTheReadmeShows() async throws {
        let root = try DeployTests.repoRoot()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let steps = Self.steps(of: readme)
        try #require(steps.count > 40, "the README's commands were not found")
        let bash = try #require(DeployTests.executableOnPath("bash"))
        try await Cluster.with(http: true) { cluster in
            try await withTemporaryDirectory { folder in
                // What a checkout holds, as the README's commands expect it (the built tools in
                // .build, the fixtures in Tests); the files the commands write stay here.
                let files = FileManager.default
                for entry in [".build", "Tests"] {
                    try files.createSymbolicLink(at: folder.appendingPathComponent(entry),
                                                 withDestinationURL: root.appendingPathComponent(entry))
                }
                let outputs = folder.appendingPathComponent(".readme-steps")
                try files.createDirectory(at: outputs, withIntermediateDirectories: true)
                // (The cluster's data directory is not ./.sofa-data here: its secrets folder is named.)
                var script = "cd \(Self.quoted(folder.path))\nexport SOFA_GATEWAY_URL=\(Self.quoted(cluster.supervisor.gatewayEndpoint))\n"
                    + "export SOFA_KEYS_DIR=\(Self.quoted(TestSecrets.folder.path))\n"
                    + "export SOFA_HTTP=\(Self.quoted(cluster.supervisor.httpURL ?? ""))\n"
                for (number, step) in steps.enumerated() {
                    let out = Self.quoted(outputs.appendingPathComponent("\(number)").path)
                    script += "{ \(step.command)\n} >\(out).out 2>\(out).err </dev/null; status=$?; echo $status >\(out).status\n"
                    if step.expected == nil { script += "[ $status -eq 0 ] || exit 0\n" }
                }
                let file = folder.appendingPathComponent("readme.sh")
                try script.write(to: file, atomically: true, encoding: .utf8)
                _ = try await DeployTests.run(bash, [file.path])
                for (number, step) in steps.enumerated() {
                    let base = outputs.appendingPathComponent("\(number)").path
                    guard let status = (try? String(contentsOfFile: base + ".status", encoding: .utf8))
                        .flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) else {
                        Issue.record("README line \(step.line) did not run: an earlier command failed")
                        break
                    }
                    let out = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
                    let err = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
                    if let expected = step.expected {
                        let printed = (out + err).split(separator: "\n").map(String.init)
                        #expect(printed.count == expected.count && zip(printed, expected).allSatisfy(Self.matches),
                                "README line \(step.line): `\(step.command)` printed\n\(printed.joined(separator: "\n"))\nnot\n\(expected.joined(separator: "\n"))")
                    } else {
                        #expect(status == 0, "README line \(step.line): `\(step.command)` exited \(status):\n\(err)")
                        // A command whose comment says it prints a note may print `sofa: note:` lines.
                        let notes = step.command.contains("prints a note")
                        let unshown = err.split(separator: "\n").filter { !(notes && $0.hasPrefix("sofa: note:")) }
                        #expect(unshown.isEmpty, "README line \(step.line): `\(step.command)` printed on stderr:\n\(err)")
                    }
                }
            }
        }
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}
