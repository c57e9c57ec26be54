import Foundation
import SofaCluster
import SofaCore

/// Runs a tool built beside the tests under a pseudo-terminal (util-linux's `script`), as a
/// person at a terminal would: what the tool writes to stdout and stderr comes back as the
/// terminal showed it. The wait happens on a thread of its own, bounded by the process's end.
func runInTerminal(_ arguments: [String], gateway: String, executable: String = "sofa") async throws -> (status: Int32, output: String) {
    let command = ([Supervisor.defaultBinDirectory.appendingPathComponent(executable).path] + arguments)
        .map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
        .joined(separator: " ")
    return try await withCheckedThrowingContinuation { continuation in
        Thread {
            do {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
                // -q: no banner; -e: the command's exit status; -c: the command; the log to /dev/null.
                process.arguments = ["-qec", command, "/dev/null"]
                var environment = ProcessInfo.processInfo.environment
                environment["SOFA_GATEWAY_URL"] = gateway
                if environment[Setting.keysDir.variable] == nil { environment[Setting.keysDir.variable] = TestSecrets.folder.path }
                // Each of these commands is run against a cluster that is up: on a machine the
                // whole suite loads, its handshake can take longer than the 1 s default (it did once).
                if environment[Setting.connectTimeoutMs.variable] == nil { environment[Setting.connectTimeoutMs.variable] = "10000" }
                process.environment = environment
                let out = Pipe()
                process.standardOutput = out
                process.standardError = out
                process.standardInput = FileHandle.nullDevice
                try process.run()
                let data = out.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            } catch {
                continuation.resume(throwing: error)
            }
        }.start()
    }
}
