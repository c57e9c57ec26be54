import SofaCluster
import Testing

/// The text of a progress line: one table per rule.
struct ProgressTextTests {
    @Test(arguments: [
        (0.0, "0:00"), (5.2, "0:05"), (59.0, "0:59"), (60.0, "1:00"), (754.0, "12:34"), (3600.0, "1:00:00"),
        (3723.0, "1:02:03"), (1e9, "99:59:59"),
    ])
    func clock(_ seconds: Double, _ text: String) {
        #expect(ProgressText.clock(seconds) == text)
    }

    @Test(arguments: [(UInt64(0), "0"), (999, "999"), (1000, "1,000"), (123_456, "123,456"), (1_234_567, "1,234,567")])
    func grouped(_ value: UInt64, _ text: String) {
        #expect(ProgressText.grouped(value) == text)
    }

    @Test(arguments: [
        (UInt64(1000), 2.0, ProgressText.Unit.items("docs"), "500 docs/s"),
        (UInt64(12_345_678), 1.0, .items("docs"), "12,345,678 docs/s"),
        (UInt64(3 << 20), 2.0, .bytes, "1.5 MiB/s"),
        (UInt64(512), 1.0, .bytes, "512.0 B/s"),
        (UInt64(10), 0.0, .items("docs"), "- docs/s"),
    ])
    func rate(_ done: UInt64, _ seconds: Double, _ unit: ProgressText.Unit, _ text: String) {
        #expect(ProgressText.rate(done, seconds, unit) == text)
    }

    /// The time left at the rate so far.
    @Test(arguments: [
        (UInt64(25), UInt64(100), 5.0, "0:15"), (UInt64(1), UInt64(1000), 1.0, "16:39"), (UInt64(1), UInt64(10_000), 1.0, "2:46:39"),
        (UInt64(0), UInt64(100), 3.0, "--:--"), (UInt64(100), UInt64(100), 3.0, "0:00"), (UInt64(3), UInt64(10), 0.5, "0:02"),
    ])
    func eta(_ done: UInt64, _ total: UInt64, _ seconds: Double, _ text: String) {
        #expect(ProgressText.eta(done: done, total: total, seconds: seconds) == text)
    }

    @Test func lines() {
        #expect(ProgressText.line(label: "import", done: 42_000, total: 100_000, unit: .items("docs"), elapsed: .seconds(5), frame: 0)
                == "import  42,000/100,000 docs  42%  8,400 docs/s  ETA 0:07")
        #expect(ProgressText.line(label: "blob put", done: 12 << 20, total: 100 << 20, unit: .bytes, elapsed: .milliseconds(250), frame: 0)
                == "blob put  12.0/100.0 MiB  12%  48.0 MiB/s  ETA 0:02")
        // More done than the total (a source that grew) shows the total, never over 100 %.
        #expect(ProgressText.line(label: "replicate", done: 12, total: 10, unit: .items("docs"), elapsed: .seconds(1), frame: 0)
                == "replicate  10/10 docs  100%  10 docs/s  ETA 0:00")
        #expect(ProgressText.line(label: "compact", done: 0, total: nil, unit: .items("docs"), elapsed: .milliseconds(3240), frame: 1)
                == "compact  / 3.2 s")
        #expect(ProgressText.line(label: "replicate", done: 1500, total: nil, unit: .items("docs"), elapsed: .seconds(75), frame: 2)
                == "replicate  - 1,500 docs  20 docs/s  1:15")
    }

}
