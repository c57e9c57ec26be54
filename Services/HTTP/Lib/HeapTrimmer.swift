internal import SofaServer
internal import Synchronization

/// Gives the heap's free pages back a moment after requests that moved megabytes through this
/// process (bodies of 256 KiB or more, attachments). Measured: after a 20,000-document
/// `_bulk_docs` import, sofa-http's heap kept 9 MB it had freed, which the next attachment stream
/// carried into its peak (62–64 MiB of the 64 MiB bound); giving it back took it to 5 MB.
/// Plain GETs never ask for it: a trim holds the allocator's lock while it runs.
final class HeapTrimmer: Sendable {
    static let shared = HeapTrimmer()
    /// Bodies at least this large ask for a trim.
    static let largeBytes = 256 << 10

    private let pending = Atomic<Bool>(false)

    /// A request moved megabytes: trim soon.
    func note() {
        pending.store(true, ordering: .relaxed)
    }

    /// `note` for a body of `bytes` bytes when it is a large one.
    func note(bytes: Int) {
        if bytes >= Self.largeBytes { note() }
    }

    /// Trims at most once a second, when asked since the last time; for as long as the process runs.
    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if pending.exchange(false, ordering: .relaxed) { ServiceRuntime.releaseFreeMemory() }
        }
    }
}
