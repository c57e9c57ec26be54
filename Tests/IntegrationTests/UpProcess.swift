import Foundation
import SofaCluster

/// A `sofa up` run through the real executable, its output collected as it comes, for the tests
/// of what `sofa up` does with busy ports, a busy data directory and signals. Every wait here
/// ends on the event (a line, the exit) or at its deadline.
final class UpProcess: @unchecked Sendable {  // safe: `process` is set up in init and only read after; the output behind `lock`
    let process = Process()
    let dataDirectory: URL
    private let lock = NSLock()
    private var stdoutText = ""
    private var stderrText = ""
    private var stdoutEnded = false
    private let exited = DispatchSemaphore(value: 0)
    private let outputChanged = NSCondition()

    init(_ arguments: [String], dataDirectory: URL) throws {
        self.dataDirectory = dataDirectory
        process.executableURL = Supervisor.defaultBinDirectory.appendingPathComponent("sofa")
        // The HTTP API on a free port unless the test names one (5984 may be another cluster's).
        let http = arguments.contains("--http-port") ? [] : ["--http-port", "\(try freePort())"]
        process.arguments = ["up", "--data-dir", dataDirectory.path] + http + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        for (pipe, isOut) in [(out, true), (err, false)] {
            Thread { [self] in
                let handle = pipe.fileHandleForReading
                while true {
                    let data = handle.availableData
                    let text = String(decoding: data, as: UTF8.self)
                    lock.withLock {
                        if isOut { stdoutText += text } else { stderrText += text }
                        if isOut && data.isEmpty { stdoutEnded = true }
                    }
                    outputChanged.lock()
                    outputChanged.broadcast()  // also at the end of the output
                    outputChanged.unlock()
                    if data.isEmpty { break }
                }
            }.start()
        }
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { lock.withLock { stdoutText } }
    var stderr: String { lock.withLock { stderrText } }

    /// Waits (on a thread of its own) until stdout contains `text`; false at the deadline.
    func waitForOutput(_ text: String, within timeout: Duration) async -> Bool {
        await blocking {
            let deadline = Date().addingTimeInterval(seconds(timeout))
            self.outputChanged.lock()
            defer { self.outputChanged.unlock() }
            while !self.stdout.contains(text) {
                guard !self.lock.withLock({ self.stdoutEnded }), self.outputChanged.wait(until: deadline) else {
                    return self.stdout.contains(text)
                }
            }
            return true
        }
    }

    /// Its exit status, or nil if it is still running at the deadline.
    func waitForExit(within timeout: Duration) async -> Int32? {
        await blocking {
            guard self.exited.wait(timeout: .now() + seconds(timeout)) == .success else { return nil }
            self.exited.signal()  // for a later wait
            return self.process.terminationStatus
        }
    }

    /// The pids of its child processes now (from /proc: the processes whose parent it is).
    var children: [Int32] { childPIDs(of: pid) }

    /// Waits (on a thread of its own, looking at /proc again a millisecond after each look: a
    /// task on a loaded cooperative pool can wake too late, when the cluster is already up) until
    /// it has started a child, and sends it `signal` at once. The children seen then; [] when
    /// none came before the deadline or it ended first.
    func signalOnFirstChild(_ signal: Int32, within timeout: Duration) async -> [Int32] {
        await blocking {
            let deadline = Date().addingTimeInterval(seconds(timeout))
            while Date() < deadline && self.process.isRunning {
                let children = self.children
                if !children.isEmpty {
                    kill(self.pid, signal)
                    return children
                }
                usleep(1000)  // back-off between looks at /proc
            }
            return []
        }
    }

    /// Kills it if it still runs (a test that failed half-way), and removes its data directory.
    func cleanUp() {
        if process.isRunning { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: dataDirectory)
    }
}

/// The pids of the processes whose parent is `parent`, read from /proc/<pid>/stat.
func childPIDs(of parent: Int32) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { Int32($0) }.filter { pid in
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        // After "pid (comm)": state, then the parent's pid.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 && Int32(fields[1]) == parent
    }
}

/// Whether `pid` names a live process (not gone, not a zombie).
func isAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
}

/// Runs a blocking wait on a thread of its own, not on the cooperative pool.
private func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
