internal import CSofaSpawn
internal import Foundation
internal import SofaCore
internal import Synchronization

/// A service process started by the supervisor (`sofa_spawn`: no inherited descriptors, stdin
/// /dev/null, stdout and stderr into one pipe).
///
/// Its end is learnt by a thread blocked in `waitpid` on its pid, so it is seen at once and
/// never missed. (Foundation's `Process` learns it from the end of a socketpair the child
/// holds; a child some other thread starts at the same moment can inherit that descriptor
/// too, and then the first child's death goes unnoticed for as long as the second one lives.)
final class ChildProcess: Sendable {
    enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)

        var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "killed by signal \(signal)"
            }
        }
    }

    let pid: Int32
    /// The read end of its stdout and stderr.
    private let output: Int32
    private let ended = Mutex<Termination?>(nil)

    private init(pid: Int32, output: Int32) {
        self.pid = pid
        self.output = output
    }

    /// Whether it has not ended (and been reaped) yet.
    var isRunning: Bool { ended.withLock { $0 == nil } }

    var termination: Termination? { ended.withLock { $0 } }

    /// Starts `executable` with `environment`. Nothing reads its output or waits for it until
    /// `watch` (so the caller can record it first).
    static func start(_ executable: String, environment: [String: String]) throws(SofaError) -> ChildProcess {
        let variables = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        var output: Int32 = -1
        let rc = withCStrings([executable]) { argv in
            withCStrings(variables) { envp in sofa_spawn(executable, argv, envp, &pid, &output) }
        }
        guard rc == 0 else {
            throw SofaError(.cantOpenFile, "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        return ChildProcess(pid: pid, output: output)
    }

    /// Hands each line the child prints to `line`, and its end to `exited` (on the thread that
    /// reaped it). Called once.
    func watch(name: String, line: @escaping @Sendable (String) -> Void,
               exited: @escaping @Sendable (ChildProcess, Termination) -> Void) {
        let output = self.output
        let reader = Thread { Self.readLines(output, line) }
        reader.name = "log-\(name)"
        reader.start()
        let waiter = Thread {
            var status: Int32 = 0
            while waitpid(self.pid, &status, 0) < 0 {
                guard errno == EINTR else {
                    // Not ours to reap (cannot happen for a child of this process): say it ended.
                    status = 0
                    break
                }
            }
            let how: Termination = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
            self.ended.withLock { $0 = how }
            exited(self, how)
        }
        waiter.name = "wait-\(name)"
        waiter.start()
    }

    /// Reads `fd` to its end, handing over each line (without its newline), then closes it.
    private static func readLines(_ fd: Int32, _ line: @Sendable (String) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.append(contentsOf: chunk[..<count])
            var start = buffer.startIndex
            while let newline = buffer[start...].firstIndex(of: 10) {
                line(String(decoding: buffer[start..<newline], as: UTF8.self))
                start = newline + 1
            }
            buffer.removeSubrange(..<start)
        }
        if !buffer.isEmpty { line(String(decoding: buffer, as: UTF8.self)) }
        close(fd)
    }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings, valid during the call.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
