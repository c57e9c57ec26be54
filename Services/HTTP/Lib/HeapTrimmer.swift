internal import SofaServer
internal import Synchronization
internal import Foundation

/// Gives the heap's free pages back once requests that moved megabytes through this process
/// (bodies of 256 KiB or more, attachments) pause for a second. Measured: after a 20,000-document
/// `_bulk_docs` import, sofa-http's heap kept 9 MB it had freed, which the next attachment stream
/// carried into its peak (61–64 MiB of the 64 MiB bound); giving it back took it to 5 MB, and the
/// peak to 57–61 MiB. Not while they go on: trimming then (once a second) cost a bulk import over
/// HTTP about a sixth of its rate (52k against 62k docs/s), every page given back being faulted
/// in again. Plain GETs never ask for it: a trim holds the allocator's lock while it runs.
final class HeapTrimmer: Sendable {
    static let shared = HeapTrimmer()
    /// Bodies at least this large ask for a trim.
    static let largeBytes = 256 << 10
    /// How long large requests must have paused.
    static let pauseMs: UInt64 = 1000

    /// When the last large request was seen (milliseconds of uptime); 0: none since the last trim.
    private let lastLarge = Atomic<UInt64>(0)

    /// A request moved megabytes: trim once they pause.
    func note() {
        lastLarge.store(max(1, Self.nowMs()), ordering: .relaxed)
    }

    /// `note` for a body of `bytes` bytes when it is a large one.
    func note(bytes: Int) {
        if bytes >= Self.largeBytes { note() }
    }

    /// Looks twice a second, for as long as the process runs.
    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(500))
            let last = lastLarge.load(ordering: .relaxed)
            guard last != 0, Self.nowMs() &- last >= Self.pauseMs,
                  lastLarge.compareExchange(expected: last, desired: 0, ordering: .relaxed).exchanged else { continue }
            ServiceRuntime.releaseFreeMemory()
        }
    }

    static func nowMs() -> UInt64 { DispatchTime.now().uptimeNanoseconds / 1_000_000 }
}
