import Foundation
import SofaCluster
import SofaCore
import SofaServer
import Testing

/// Design documents' JavaScript in `sofa-js` (Duktape, a process of its own), through
/// `JavaScriptProcess`: CouchDB's functions and their line protocol; a function that throws fails
/// alone; one that loops or allocates without end is stopped within its time and the next command
/// is served by a new process.
@Suite struct JavaScriptProcessTests {
    static func process() -> JavaScriptProcess {
        JavaScriptProcess(executable: Supervisor.defaultBinDirectory.appendingPathComponent("sofa-js").path)
    }

    @Test func mapFunctionsEmitRowsLogAndFailAlone() throws {
        let js = Self.process()
        try js.add(function: "function (doc) { if (doc.type) { emit([doc.type, doc.n], doc.n * 2); } }")
        try js.add(function: "function (doc) { log('mapping ' + doc._id); emit(doc.name.toUpperCase(), null); }")
        let ann = try js.call(["map_doc", ["_id": "ann", "type": "person", "n": 3, "name": "ann"]], timeout: .seconds(5))
        #expect(ann.result == [[[["person", 3], 6]], [["ANN", nil]]])
        #expect(ann.logs == ["mapping ann"])
        // The second function throws on a document without a name: its rows are an error, the first's stand.
        let nameless = try js.call(["map_doc", ["_id": "x", "type": "thing", "n": 1]], timeout: .seconds(5))
        #expect(nameless.result.arrayValue?.first == [[["thing", 1], 2]])
        #expect(nameless.result.arrayValue?.last?["error"]?.stringValue == "map_error")
        let error = #expect(throws: SofaError.self) { try js.add(function: "function (doc) { emit(") }
        #expect(error?.is(.invalidQuery) == true)
        let helpers = JavaScriptProcessTests.process()
        try helpers.add(function: "function (doc) { emit(isArray(doc.list), [sum(doc.list), toJSON(doc.list)]); }")
        #expect(try helpers.call(["map_doc", ["list": [1, 2, 3]]], timeout: .seconds(5)).result == [[[true, [6, "[1,2,3]"]]]])
    }

    @Test func reduceRereduceValidateAndFilter() throws {
        let js = Self.process()
        let total = "function (keys, values, rereduce) { return sum(values); }"
        #expect(try js.call(["reduce", [.string(total)], [[["a", "1"], 2], [["b", "2"], 5]]], timeout: .seconds(5)).result == [true, [7]])
        #expect(try js.call(["rereduce", [.string(total)], [7, 10]], timeout: .seconds(5)).result == [true, [17]])
        let validate = """
            function (newDoc, oldDoc, userCtx, secObj) {
              if (!newDoc.author) { throw({forbidden: 'an author is required'}); }
              if (userCtx.name !== newDoc.author) { throw({unauthorized: 'not yours'}); }
            }
            """
        let context: JSON = ["name": "ann", "roles": []]
        #expect(try js.call(["validate", .string(validate), ["author": "ann"], nil, context, [:]], timeout: .seconds(5)).result == 1)
        #expect(try js.call(["validate", .string(validate), [:], nil, context, [:]], timeout: .seconds(5)).result
                == ["forbidden": "an author is required"])
        #expect(try js.call(["validate", .string(validate), ["author": "bob"], nil, context, [:]], timeout: .seconds(5)).result
                == ["unauthorized": "not yours"])
        let filter = "function (doc, req) { return doc.kind === req.query.kind; }"
        #expect(try js.call(["filter", .string(filter), [["kind": "a"], ["kind": "b"]], ["query": ["kind": "b"]]],
                            timeout: .seconds(5)).result == [true, [false, true]])
    }

    @Test func anEndlessLoopIsStoppedInItsTimeAndTheNextCommandIsServed() throws {
        let js = Self.process()
        try js.add(function: "function (doc) { while (true) {} }")
        let started = ContinuousClock.now
        let error = #expect(throws: SofaError.self) { _ = try js.call(["map_doc", ["_id": "a"]], timeout: .milliseconds(500)) }
        #expect(error?.is(.timeout) == true)
        #expect(ContinuousClock.now - started < .seconds(5))
        try js.reset()
        try js.add(function: "function (doc) { emit(doc._id, 1); }")
        #expect(try js.call(["map_doc", ["_id": "b"]], timeout: .seconds(5)).result == [[["b", 1]]])
    }

    @Test func anAllocationWithoutEndFailsWithinItsBoundAndTheNextCommandIsServed() throws {
        let js = Self.process()
        try js.add(function: "function (doc) { var all = [], s = 'x'; while (true) { s = s + s; all.push(s + all.length); } }")
        let started = ContinuousClock.now
        do {
            let answer = try js.call(["map_doc", ["_id": "a"]], timeout: .seconds(20))
            #expect(answer.result.arrayValue?.first?["error"] != nil, "\(answer.result)")
        } catch {
            #expect(error.is(.ioError) || error.is(.timeout), "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(25))
        try js.reset()
        try js.add(function: "function (doc) { emit(doc._id, null); }")
        #expect(try js.call(["map_doc", ["_id": "c"]], timeout: .seconds(5)).result == [[["c", nil]]])
    }
}

/// A `sofa-js` whose parent dies (killed while a function loops) ends too: it is never left
/// running on its own.
@Suite struct JavaScriptOrphanTests {
    @Test func aLoopingChildEndsWhenItsParentIsKilled() async throws {
        let bash = try #require(DeployTests.executableOnPath("bash"))
        let js = Supervisor.defaultBinDirectory.appendingPathComponent("sofa-js").path
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-orphan-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("js.pid").path
        // The parent (a shell) feeds sofa-js a function that loops, notes its pid, then is killed
        // (the feeding `sleep` ends on its own). The shell and sofa-js share one stderr, a pipe
        // only they hold: its end of file is the event of both being gone.
        let script = """
            { echo '["add_fun", "function (doc) { while (true) {} }"]'; echo '["map_doc", {}]'; sleep 3; } 2>/dev/null |
              SOFA_JS_PARENT=$$ '\(js)' > /dev/null &
            echo $! > '\(pidFile)'
            kill -9 $$
            """
        let shell = Process()
        let stderr = Pipe()
        shell.executableURL = bash
        shell.arguments = ["-c", script]
        (shell.standardInput, shell.standardOutput, shell.standardError) = (FileHandle.nullDevice, FileHandle.nullDevice, stderr)
        try shell.run()
        try stderr.fileHandleForWriting.close()
        let reader = stderr.fileHandleForReading.fileDescriptor
        let ended = await onThread { Self.endOfFile(reader, within: .seconds(20)) }
        let pid = Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(ended, "sofa-js \(pid.map(String.init) ?? "?") still runs without its parent")
        if !ended, let pid { kill(pid, SIGKILL) }
    }

    /// Whether `fd` reaches its end of file within `timeout` (what arrives before is read and dropped).
    static func endOfFile(_ fd: Int32, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return true }
            if count < 0 && errno != EINTR { return false }
        }
    }
}
