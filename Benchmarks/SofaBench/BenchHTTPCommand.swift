internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster
internal import SofaCore
internal import SofaWire

extension Bench {
    /// `sofa-bench http`: CouchDB's HTTP API (sofa-http) beside the ZeroMQ API, in one run of
    /// one temporary cluster: bulk import, gets, attachments, and sofa-http's peak memory.
    struct HTTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "http",
            abstract: "HTTP API figures beside the ZeroMQ ones: _bulk_docs import, GET /db/id, attachments up/down, peak RSS.",
            discussion: """
                Starts a temporary cluster with the HTTP API. Imports --docs documents of 300 bytes in batches of \
                --batch, --in-flight batches at a time, through the SDK (ZeroMQ) and through POST /db/_bulk_docs; \
                gets one 300-byte document --gets times from --connections HTTP connections (p50, p99, requests/s) \
                and 2,000 times from one connection, one at a time (p50, p99), \
                beside the SDK's gets with 64 in flight; moves a --blob-mib MiB attachment up and down over HTTP \
                beside the SDK's blob upload and download; then streams a --stream-mib MiB attachment up and down \
                and reports sofa-http's peak resident memory (VmHWM). The HTTP client is the bench's own \
                (keep-alive HTTP/1.1, one thread per connection); when Debian's wrk is installed, the same gets from wrk too.
                """)
        @Option(help: "Documents to import.") var docs: Int = 100_000
        @Option(help: "Documents per bulk request.") var batch: Int = 1000
        @Option(name: .customLong("in-flight"), help: "Bulk requests outstanding.") var inFlight: Int = 4
        @Option(help: "HTTP connections for the gets.") var connections: Int = 16
        @Option(help: "Gets in all, over the connections.") var gets: Int = 32_000
        @Option(help: "Attachment size of the up/down figures, in MiB.") var blobMib: Int = 256
        @Option(help: "Attachment size of the memory figure, in MiB.") var streamMib: Int = 1024

        func run() async throws {
            try await reporting {
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-http-\(getpid())")
                defer { try? FileManager.default.removeItem(at: scratch) }
                let port = try freePort()
                let supervisor = try Supervisor(.init(dataDirectory: scratch, gatewayPort: try freePort(), httpPort: port,
                                                      queryWorkers: 1, logLevel: "warning")) { _ in }
                do {
                    try await supervisor.start()
                    let figures = try await measure(supervisor, port: port)
                    await supervisor.stop()
                    printJSON(figures)
                } catch {
                    await supervisor.stop()
                    throw error
                }
            }
        }

        func measure(_ supervisor: Supervisor, port: Int) async throws -> JSON {
            let client = try await supervisor.connect(timeout: .seconds(60))
            defer { client.close() }
            guard let admin = supervisor.localAdmin, let httpPID = supervisor.pid(of: "http") else {
                throw SofaError(.unexpectedError, "the cluster has no admin or no sofa-http")
            }
            let (user, password) = (admin.user, admin.password)
            let padding = String(repeating: "x", count: 300 - #"{"pad":""}"#.utf8.count)
            var figures: [(String, JSON)] = [("docs", .int(Int64(docs))), ("batch", .int(Int64(batch)))]

            // Bulk import: ZeroMQ (the SDK), then HTTP.
            let zmqDB = try await client.createDatabase("bench-zmq")
            let batches = stride(from: 0, to: docs, by: batch).map { start in
                (start..<min(docs, start + batch)).map { BulkItem.put(id: String(format: "doc-%07d", $0), rev: "",
                                                                      body: Array(#"{"pad":"\#(padding)"}"#.utf8), deleted: false) }
            }
            var started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<inFlight {
                    group.addTask {
                        for index in stride(from: lane, to: batches.count, by: inFlight) { _ = try await zmqDB.bulk(batches[index]) }
                    }
                }
                try await group.waitForAll()
            }
            let zmqImport = Double(docs) / seconds(since: started)
            _ = try await client.createDatabase("bench-http")
            let bodies = stride(from: 0, to: docs, by: batch).map { start in
                Array(("{\"docs\":[" + (start..<min(docs, start + batch)).map {
                    #"{"_id":"doc-\#(String(format: "%07d", $0))","pad":"\#(padding)"}"#
                }.joined(separator: ",") + "]}").utf8)
            }
            let lanes = inFlight
            started = ContinuousClock.now
            _ = try await onThreads(lanes) { lane in
                let http = try HTTPBenchClient(port: port, user: user, password: password)
                for index in stride(from: lane, to: bodies.count, by: lanes) {
                    let answer = try http.call("POST", "/bench-http/_bulk_docs", body: bodies[index])
                    guard answer.status == 201 else { throw SofaError(.unexpectedError, "_bulk_docs answered \(answer.status)") }
                }
            }
            let httpImport = Double(docs) / seconds(since: started)
            figures += [("zmq_bulk_docs_per_s", .int(Int64(zmqImport))), ("http_bulk_docs_per_s", .int(Int64(httpImport))),
                        ("http_bulk_ratio", ratio(httpImport, zmqImport))]

            // Gets of one 300-byte document.
            let getCount = gets
            started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<64 {
                    group.addTask { for _ in stride(from: lane, to: getCount, by: 64) { _ = try await zmqDB.get(id: "doc-0000001") } }
                }
                try await group.waitForAll()
            }
            let zmqGets = Double(getCount) / seconds(since: started)
            let connections = self.connections
            started = ContinuousClock.now
            let latencies = try await onThreads(connections) { lane -> [UInt64] in
                let http = try HTTPBenchClient(port: port, user: user, password: password)
                var times: [UInt64] = []
                for _ in stride(from: lane, to: getCount, by: connections) {
                    let begin = DispatchTime.now().uptimeNanoseconds
                    let answer = try http.call("GET", "/bench-http/doc-0000001")
                    guard answer.status == 200 else { throw SofaError(.unexpectedError, "GET answered \(answer.status)") }
                    times.append(DispatchTime.now().uptimeNanoseconds - begin)
                }
                return times
            }.flatMap { $0 }
            let httpGets = Double(getCount) / seconds(since: started)
            // One connection, one GET at a time: the latency of a GET with no queue in front of it.
            let alone = try await onThreads(1) { _ -> [UInt64] in
                let http = try HTTPBenchClient(port: port, user: user, password: password)
                return try (0..<2000).map { _ in
                    let begin = DispatchTime.now().uptimeNanoseconds
                    let answer = try http.call("GET", "/bench-http/doc-0000001")
                    guard answer.status == 200 else { throw SofaError(.unexpectedError, "GET answered \(answer.status)") }
                    return DispatchTime.now().uptimeNanoseconds - begin
                }
            }[0]
            figures += [("http_get_p50_us_1_connection", .double(percentile(alone, 0.5))),
                        ("http_get_p99_us_1_connection", .double(percentile(alone, 0.99)))]
            figures += [("zmq_gets_per_s_64_in_flight", .int(Int64(zmqGets))), ("http_gets_per_s", .int(Int64(httpGets))),
                        ("http_get_connections", .int(Int64(connections))),
                        ("http_get_p50_us", .double(percentile(latencies, 0.5))), ("http_get_p99_us", .double(percentile(latencies, 0.99))),
                        ("http_gets_ratio", ratio(httpGets, zmqGets))]
            // The same gets from Debian's wrk, when it is installed (a load generator in C: the
            // bench's own client threads share the 2 cores with the server).
            if let wrk = try await Self.wrk(port: port, user: user, password: password, connections: connections) {
                figures += [("wrk_gets_per_s", .int(Int64(wrk.perSecond))), ("wrk_get_p50_us", .double(wrk.p50)),
                            ("wrk_get_p99_us", .double(wrk.p99)), ("wrk_gets_ratio", ratio(wrk.perSecond, zmqGets))]
            }

            // Attachments up and down, beside the SDK's blobs.
            let size = blobMib << 20
            let chunk = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
            started = ContinuousClock.now
            let blob = try await zmqDB.putBlob(RepeatedChunks(chunk: chunk, total: size))
            let zmqUp = Double(size) / seconds(since: started) / 1e6
            started = ContinuousClock.now
            var read = 0
            for try await piece in zmqDB.blobChunks(blob.key) { read += piece.count }
            let zmqDown = Double(read) / seconds(since: started) / 1e6
            let (httpUp, httpDown) = try await attachmentUpDown(port: port, user: user, password: password, size: size, chunk: chunk)
            figures += [("blob_mib", .int(Int64(blobMib))), ("zmq_blob_up_mb_per_s", .double(round(zmqUp))),
                        ("zmq_blob_down_mb_per_s", .double(round(zmqDown))), ("http_attachment_up_mb_per_s", .double(round(httpUp))),
                        ("http_attachment_down_mb_per_s", .double(round(httpDown))),
                        ("http_attachment_up_ratio", ratio(httpUp, zmqUp)), ("http_attachment_down_ratio", ratio(httpDown, zmqDown))]

            // Peak memory of sofa-http while a large attachment streams up and down.
            _ = try await attachmentUpDown(port: port, user: user, password: password, size: streamMib << 20, chunk: chunk, id: "stream")
            figures += [("stream_mib", .int(Int64(streamMib))), ("http_peak_rss_mib", .double(peakRSSMiB(pid: httpPID)))]
            return .object(JSONObject(figures))
        }

        /// PUT then GET of a `size`-byte attachment over HTTP; MB/s each way.
        func attachmentUpDown(port: Int, user: String, password: String, size: Int, chunk: [UInt8],
                              id: String = "files") async throws -> (Double, Double) {
            try await onThreads(1) { _ -> (Double, Double) in
                let http = try HTTPBenchClient(port: port, user: user, password: password)
                var started = ContinuousClock.now
                let put = try http.upload("PUT", "/bench-http/\(id)/blob.bin", length: size, contentType: "application/octet-stream") { write in
                    var left = size
                    while left > 0 {
                        let piece = min(left, chunk.count)
                        try write(piece == chunk.count ? chunk : Array(chunk[0..<piece]))
                        left -= piece
                    }
                }
                guard put.status == 201 else { throw SofaError(.unexpectedError, "attachment PUT answered \(put.status)") }
                let up = Double(size) / seconds(since: started) / 1e6
                started = ContinuousClock.now
                var received = 0
                let get = try http.call("GET", "/bench-http/\(id)/blob.bin") { received += $0.count }
                guard get.status == 200, received == size else {
                    throw SofaError(.unexpectedError, "attachment GET answered \(get.status) with \(received) of \(size) bytes")
                }
                return (up, Double(size) / seconds(since: started) / 1e6)
            }[0]
        }

        /// `wrk -t2 -c<connections> -d5s --latency` on the 300-byte document; nil when wrk is not on PATH.
        static func wrk(port: Int, user: String, password: String, connections: Int) async throws
            -> (perSecond: Double, p50: Double, p99: Double)? {
            let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            guard let path = paths.map({ "\($0)/wrk" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                return nil
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            let token = Data("\(user):\(password)".utf8).base64EncodedString()
            process.arguments = ["-t2", "-c\(connections)", "-d5s", "--latency", "-H", "Authorization: Basic \(token)",
                                 "http://127.0.0.1:\(port)/bench-http/doc-0000001"]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let output = String(decoding: try pipe.fileHandleForReading.readToEnd() ?? Data(), as: UTF8.self)
            process.waitUntilExit()
            func microseconds(_ label: String) -> Double? {
                guard let line = output.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }),
                      let text = line.split(separator: " ", omittingEmptySubsequences: true).last else { return nil }
                for (unit, scale) in [("us", 1.0), ("ms", 1000.0), ("s", 1_000_000.0)] where text.hasSuffix(unit) {
                    return Double(text.dropLast(unit.count)).map { ($0 * scale).rounded() }
                }
                return nil
            }
            guard let rate = output.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") })
                .flatMap({ Double($0.split(separator: " ", omittingEmptySubsequences: true).last ?? "") }),
                  let p50 = microseconds("50%"), let p99 = microseconds("99%") else {
                throw SofaError(.unexpectedError, "wrk printed no figures:\n\(output)")
            }
            return (rate, p50, p99)
        }


        func ratio(_ a: Double, _ b: Double) -> JSON { .double((a / b * 100).rounded() / 100) }

        func peakRSSMiB(pid: Int32) -> Double {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                  let kib = Double(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else { return -1 }
            return (kib / 1024 * 10).rounded() / 10
        }
    }
}

/// `total` bytes as repeats of one chunk (the last one cut short).
struct RepeatedChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let chunk: [UInt8]
    let total: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int
        let chunk: [UInt8]

        mutating func next() async -> [UInt8]? {
            guard left > 0 else { return nil }
            let count = Swift.min(left, chunk.count)
            left -= count
            return count == chunk.count ? chunk : Array(chunk[0..<count])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: total, chunk: chunk) }
}
