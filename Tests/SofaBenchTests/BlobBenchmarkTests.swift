import Foundation
@testable import SofaBench
import SofaTestSupport
import Testing

@Suite struct BenchmarkTests {
    /// The benchmark runs end to end (on 8 MiB; `BlobBenchmarks.run` uses 256 MiB).
    @Test func benchmarkRuns() async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                let results = BlobBenchmarks.run(directory: dir, size: 8 * 1024 * 1024)
                #expect(results.map(\.name) == ["blob write plain 8 MiB", "blob read plain 8 MiB",
                                                "blob write encrypted 8 MiB", "blob read encrypted 8 MiB"])
                #expect(results.allSatisfy { $0.megabytesPerSecond > 0 })
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
            }
        }
    }

    /// The full 256 MiB figures, printed: `SOFA_BLOB_BENCH=1 swift test --filter fullBenchmark`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SOFA_BLOB_BENCH"] != nil))
    func fullBenchmark() async throws {
        try await offPool {
            try withTemporaryDirectory { dir throws in
                for (name, rate) in BlobBenchmarks.run(directory: dir) {
                    print("\(name): \(String(format: "%.0f", rate)) MB/s")
                }
            }
        }
    }
}
