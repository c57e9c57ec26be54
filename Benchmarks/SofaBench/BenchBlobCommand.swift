internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster

extension Bench {
    /// `sofa-bench blob`: a large blob up and down through the gateway, next to `cp` of the same
    /// file on the same disk, and the peak resident memory of every Sofa process.
    struct Blob: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload/download MB/s of a large blob through the gateway vs. cp, and each process's peak RSS.",
            discussion: """
                Starts a temporary cluster (so that it can read every process's peak resident memory, \
                VmHWM), writes a --megabytes file, times `cp` of it on the same disk (and `cp` then \
                `sync`, since an upload — and a download to a file — is durable when it ends), then uploads it \
                with the SDK from the file and downloads it back to a file, into a plain database and \
                into one encrypted with a password (AES-256, LiteCore's format). Peak RSS is each \
                process's VmHWM, reset (/proc/PID/clear_refs) before each transfer; the highest of a database's. \
                Every timed step starts after a `sync`, so no step pays for the write-back of the one \
                before. Each figure is the median of --trials interleaved runs (all of them are printed too). \
                Nothing large is deleted until the end (each `cp` writes its own copy; a download's \
                file, written past the page cache, leaves none): on a virtual machine whose memory \
                is handed back to the host when the guest frees it (free page reporting), a `cp` \
                right after a gigabyte of page cache was freed reuses those pages and runs several \
                times faster than one into memory the host has to fault in again.
                """)
        @Option(help: "Size of the blob in MiB.") var megabytes: Int = 1024
        @Option(help: "Runs of each timed step; the median is reported.") var trials: Int = 3

        func run() async throws {
            try await reporting {
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-blob-\(getpid())")
                try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: scratch) }
                let supervisor = try Supervisor(.init(dataDirectory: scratch.appendingPathComponent("data"),
                                                      gatewayPort: try freePort(), queryWorkers: 1, logLevel: "warning")) { _ in }
                try await supervisor.start()
                do {
                    let figures = try await measure(supervisor, scratch: scratch)
                    await supervisor.stop()
                    printJSON(figures)
                } catch {
                    await supervisor.stop()
                    throw error
                }
            }
        }

        private func measure(_ supervisor: Supervisor, scratch: URL) async throws -> JSON {
            let bytes = max(1, megabytes) << 20
            let source = scratch.appendingPathComponent("source.bin")
            let sourcePath = source.path
            try await onThread { try Self.writeFile(sourcePath, bytes: bytes) }
            // Every timed step starts with nothing left to write back from the one before
            // (otherwise the kernel's write-back of the last gigabyte throttles the next one).
            try await onThread { sync() }
            let runs = max(1, trials)
            let client = try await supervisor.connect(timeout: .seconds(120))
            defer { client.close() }
            let databases = [try await client.createDatabase("bench-blob-plain"),
                             try await client.createDatabase("bench-blob-encrypted", password: "sofa bench blob")]
            let pids = supervisor.childNames.compactMap { name in supervisor.pid(of: name).map { (name, $0) } }
                + [("sofa (client)", getpid())]
            var cpTrials: [Double] = [], cpSyncTrials: [Double] = []
            var uploads: [[Double]] = [[], []], downloads: [[Double]] = [[], []]
            var peaks: [[String: Double]] = [[:], [:]]
            // Trials interleaved (cp, then each database up and down), so that what the machine
            // does meanwhile falls on every kind of step alike.
            for trial in 0..<runs {
                // Each copy is kept until the end: deleting a gigabyte of page cache right before
                // the next timed step makes that step fast for a reason of the machine, not of the
                // step (see `discussion`).
                let copy = scratch.appendingPathComponent("copy-\(trial).bin").path
                let cpSeconds = try await onThread { try Self.timeCommand("/bin/cp", [sourcePath, copy]) }
                // The copy made durable too: uploads are (sofa-blob fsyncs each blob before it exists).
                let syncSeconds = try await onThread { () throws -> Double in
                    let started = ContinuousClock.now
                    sync()
                    return seconds(ContinuousClock.now - started)
                }
                cpTrials.append(cpSeconds)
                cpSyncTrials.append(cpSeconds + syncSeconds)
                for (index, db) in databases.enumerated() {
                    for (_, pid) in pids { Self.resetPeakResident(pid) }
                    // The same content each time: every upload streams, hashes and fsyncs it all,
                    // then finds the blob already installed.
                    var started = ContinuousClock.now
                    let info = try await db.putBlob(contentsOf: source)
                    uploads[index].append(seconds(ContinuousClock.now - started))
                    let target = scratch.appendingPathComponent("download.bin")
                    try await onThread { sync() }
                    started = ContinuousClock.now
                    try await db.downloadBlob(info.key, to: target)  // the SDK checks the SHA-1 of what it wrote
                    downloads[index].append(seconds(ContinuousClock.now - started))
                    let downloaded = (try? FileManager.default.attributesOfItem(atPath: target.path)[.size] as? Int) ?? -1
                    try? FileManager.default.removeItem(at: target)
                    guard downloaded == bytes else {
                        throw SofaError(.corruptData, "downloaded \(downloaded) bytes of \(bytes)")
                    }
                    for (name, pid) in pids {
                        if let peak = Self.peakResidentMiB(pid) { peaks[index][name] = max(peak, peaks[index][name] ?? 0) }
                    }
                    try await onThread { sync() }
                }
            }
            for db in databases { try await client.deleteDatabase(db.name) }

            let cpSeconds = median(cpTrials), cpSyncSeconds = median(cpSyncTrials)
            let mb = Double(bytes) / 1_048_576
            let round = { (value: Double) -> JSON in .double((value * 10).rounded() / 10) }
            let ratio = { (value: Double) -> JSON in .double((value * 100).rounded() / 100) }
            let rates = { (trials: [Double]) -> JSON in .array(trials.map { round(mb / $0) }) }
            var result = JSONObject([("megabytes", .int(Int64(megabytes))), ("trials", .int(Int64(runs))),
                                     ("cp_mb_per_s", round(mb / cpSeconds)), ("cp_then_sync_mb_per_s", round(mb / cpSyncSeconds)),
                                     ("cp_trials_mb_per_s", rates(cpTrials)), ("cp_then_sync_trials_mb_per_s", rates(cpSyncTrials))])
            for (index, mode) in ["plain", "encrypted"].enumerated() {
                let upload = median(uploads[index]), download = median(downloads[index])
                let memory = JSONObject(pids.compactMap { name, _ in peaks[index][name].map { (name, JSON.double($0)) } })
                result[mode] = .object(JSONObject([
                    ("upload_mb_per_s", round(mb / upload)), ("download_mb_per_s", round(mb / download)),
                    ("upload_ratio_to_cp", ratio(cpSeconds / upload)), ("download_ratio_to_cp", ratio(cpSeconds / download)),
                    ("upload_ratio_to_cp_then_sync", ratio(cpSyncSeconds / upload)),
                    ("download_ratio_to_cp_then_sync", ratio(cpSyncSeconds / download)),
                    ("upload_trials_mb_per_s", rates(uploads[index])), ("download_trials_mb_per_s", rates(downloads[index])),
                    ("peak_rss_mib", .object(memory)),
                ]))
            }
            return .object(result)
        }

        /// Resets a process's peak resident set (VmHWM) to its current one (Linux: writing 5 to
        /// /proc/PID/clear_refs), so each transfer's peak is its own. Best effort.
        static func resetPeakResident(_ pid: Int32) {
            guard let handle = FileHandle(forWritingAtPath: "/proc/\(pid)/clear_refs") else { return }
            try? handle.write(contentsOf: Data("5".utf8))
            try? handle.close()
        }

        /// A file of `bytes` pseudo-random bytes (one random MiB repeated), written in 1 MiB steps.
        static func writeFile(_ path: String, bytes: Int) throws {
            var generator = SystemRandomNumberGenerator()
            let block = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw SofaError(.unexpectedError, "cannot create \(path)")
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            var written = 0
            var counter: UInt64 = 0
            while written < bytes {
                var chunk = block
                // Vary each MiB so no two are alike.
                withUnsafeBytes(of: counter) { chunk.replaceSubrange(0..<8, with: $0) }
                counter += 1
                let count = min(chunk.count, bytes - written)
                try handle.write(contentsOf: chunk.prefix(count))
                written += count
            }
            try handle.synchronize()
        }

        /// Seconds a command takes (it must exit 0).
        static func timeCommand(_ path: String, _ arguments: [String]) throws -> Double {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            let started = ContinuousClock.now
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw SofaError(.unexpectedError, "\(path) exited with \(process.terminationStatus)")
            }
            return seconds(ContinuousClock.now - started)
        }

        /// VmHWM (peak resident set) of a process, in MiB.
        static func peakResidentMiB(_ pid: Int32) -> Double? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                  let kib = Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty } ?? "") else { return nil }
            return (kib / 1024 * 10).rounded() / 10
        }
    }
}
