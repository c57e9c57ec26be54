public import SofaCore
internal import Foundation
internal import CSofaSpawn
internal import CPosix

/// A `sofa-js` child process (Services/JS: design documents' JavaScript in Duktape) and the line
/// protocol to it: one command, one answer, each a line of JSON. A command that is not answered
/// within its time (an endless loop) kills the child; so does one that makes it die (memory);
/// the next command starts another, with the functions added before added again. The caller
/// gets an error for that one command and nothing else stalls.
///
/// One thread at a time uses it (a worker's queue): it blocks that thread while it waits.
public final class JavaScriptProcess {
    public struct Answer: Sendable {
        public var result: JSON
        /// What the functions `log()`ged while answering.
        public var logs: [String]
    }

    private let executable: String
    private var pid: pid_t = 0
    private var input: Int32 = -1
    private var output: Int32 = -1
    private var buffer: [UInt8] = []
    /// The functions added since the last reset, added again to a new child.
    private var functions: [String] = []
    /// The modules `require` reads since the last reset (`addLibrary`), given again to a new child.
    private var library: JSON?
    /// Whose functions the child's heap has run since it was last new (`isolate`).
    private var tenant: String?

    /// `executable` nil: `sofa-js` beside this process's own executable.
    public init(executable: String? = nil) {
        self.executable = executable ?? Self.besideThisExecutable("sofa-js")
    }

    deinit { stop() }

    public static func besideThisExecutable(_ name: String) -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Forgets the added functions, and everything they left in the heap (a new one), which
    /// then runs `tenant`'s functions (see `isolate`).
    public func reset(for tenant: String? = nil, timeout: Duration = .seconds(5)) throws(SofaError) {
        functions = []
        library = nil
        self.tenant = nil
        _ = try call(["reset"], timeout: timeout)
        self.tenant = tenant
    }

    /// Makes sure the heap has run no one else's functions (another database's) since it was
    /// new: what one database's functions leave in globals, another's cannot read. True when it
    /// was made new (the functions added before are gone).
    @discardableResult
    public func isolate(for tenant: String, timeout: Duration = .seconds(5)) throws(SofaError) -> Bool {
        guard self.tenant != tenant else { return false }
        try reset(for: tenant, timeout: timeout)
        return true
    }

    /// Adds a function (its source); `.invalidQuery` with the engine's reason when it does not compile.
    public func add(function source: String, timeout: Duration = .seconds(5)) throws(SofaError) {
        let answer = try call(["add_fun", .string(source)], timeout: timeout)
        if let reason = answer.result["reason"]?.stringValue {
            throw SofaError(.invalidQuery, "the function does not compile: \(reason)")
        }
        functions.append(source)
    }

    /// The modules the functions added next may `require` (a design document's `views.lib`, as
    /// CouchDB's `add_lib` gives it to map functions: `require('views/lib/name')`).
    public func addLibrary(_ lib: JSON, timeout: Duration = .seconds(5)) throws(SofaError) {
        library = lib
        _ = try call(["add_lib", lib], timeout: timeout)
    }

    /// Sends one command and waits up to `timeout` for its answer.
    public func call(_ command: JSON, timeout: Duration) throws(SofaError) -> Answer {
        try send(command.compactBytes())
        return try receive(until: ContinuousClock.now + timeout)
    }

    /// Sends one command (a JSON array's bytes, without the newline) without waiting for its
    /// answer, which `receive` reads: the child works on it meanwhile. One command at a time.
    public func send(_ command: [UInt8]) throws(SofaError) {
        if pid == 0 { try start() }
        do throws(SofaError) {
            try write(command + [0x0A])
        } catch {
            stop()
            throw error
        }
    }

    /// The answer to the command sent, waited for until `deadline`.
    public func receive(until deadline: ContinuousClock.Instant) throws(SofaError) -> Answer {
        do throws(SofaError) {
            guard pid != 0 else { throw SofaError(.ioError, "sofa-js is not running: no command to answer") }
            let text = try readLine(until: deadline)
            guard let answer = JSON.tryParse(text), let result = answer["result"] else {
                throw SofaError(.corruptData, "sofa-js answered something that is not an answer")
            }
            return Answer(result: result, logs: answer["logs"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        } catch {
            stop()
            throw error
        }
    }

    /// How long a new child may take to come up and answer its first command.
    static let startAllowance: Duration = .seconds(30)

    private func start() throws(SofaError) {
        var childPID: pid_t = 0, childInput: Int32 = -1, childOutput: Int32 = -1
        let arguments = [executable]
        let cArguments = arguments.map { strdup($0) } + [nil]
        // The child ends itself when this process is gone (see sofa-js's `outliveNoParent`).
        var variables = ProcessInfo.processInfo.environment
        variables[ChildProcess.parentVariable] = String(getpid())
        let environment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in cArguments { free(pointer) }
            for pointer in environment { free(pointer) }
        }
        let rc = sofa_spawn_piped(executable, cArguments, environment, &childPID, &childInput, &childOutput)
        guard rc == 0 else { throw SofaError(.posix, rc, "cannot start \(executable): \(String(cString: strerror(rc)))") }
        (pid, input, output, buffer) = (childPID, childInput, childOutput, [])
        // The child answers a first `reset` once it is up, within a start-up allowance of its
        // own: a function's time limit then counts the function alone, not the loading of a
        // new process (seconds on a loaded machine, where a first call ran out of its 5 s).
        do throws(SofaError) {
            try write(Array(#"["reset"]"#.utf8) + [0x0A])
            _ = try readLine(until: ContinuousClock.now + Self.startAllowance)
        } catch {
            stop()
            throw error
        }
        let added = functions
        functions = []
        if let library { try addLibrary(library) }
        for source in added { try add(function: source) }
    }

    /// Ends the child (killed: it may be in an endless loop) and forgets it.
    private func stop() {
        guard pid != 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(input)
        close(output)
        (pid, input, output, buffer) = (0, -1, -1, [])
        tenant = nil
    }

    private func write(_ bytes: [UInt8]) throws(SofaError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw SofaError(.ioError, "sofa-js is gone (writing: \(String(cString: strerror(errno))))") }
            offset += written
        }
    }

    private func readLine(until deadline: ContinuousClock.Instant) throws(SofaError) -> [UInt8] {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            let left = deadline - ContinuousClock.now
            let ms = Int32(clamping: max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            guard ms > 0 else { throw SofaError(.timeout, "the JavaScript function did not finish in time (it was stopped)") }
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, ms)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw SofaError(.ioError, "sofa-js ended while running the function (out of memory?)") }
            buffer += chunk[0..<count]
            guard buffer.count <= 64 << 20 else { throw SofaError(.messageTooLarge, "sofa-js's answer is larger than 64 MiB") }
        }
    }
}
