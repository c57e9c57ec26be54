internal import Synchronization
internal import SofaBus

/// Failed sign-ins, counted by what they came from (`user:NAME`, `peer:ADDRESS`…), and the
/// delay a new sign-in from one of them waits: nothing for the first three failures, then 250 ms
/// doubling up to 8 s; a failure is forgotten 15 minutes after the last one, all of a key's at a
/// success. The gateway counts its clients' names and addresses; sofa-http its clients' addresses.
public final class SignInFailures: Sendable {
    static let memoryMs: UInt64 = 15 * 60 * 1000
    private let failures = Mutex<[String: (count: Int, atMs: UInt64)]>([:])

    public init() {}

    /// How long a sign-in from `keys` waits first (the longest of their delays), in ms.
    public func delayMs(_ keys: [String]) -> Int {
        let now = monotonicMs()
        let count = failures.withLock { failures in
            keys.map { key -> Int in
                guard let entry = failures[key], now &- entry.atMs < Self.memoryMs else { return 0 }
                return entry.count
            }.max() ?? 0
        }
        guard count >= 3 else { return 0 }
        return min(8_000, 250 << min(5, count - 3))
    }

    public func failed(_ keys: [String]) {
        let now = monotonicMs()
        failures.withLock { failures in
            for key in keys {
                let old = failures[key].flatMap { now &- $0.atMs < Self.memoryMs ? $0.count : nil } ?? 0
                failures[key] = (old + 1, now)
            }
            if failures.count > 100_000 { failures = failures.filter { now &- $0.value.atMs < Self.memoryMs } }
        }
    }

    public func succeeded(_ keys: [String]) {
        failures.withLock { failures in for key in keys { failures[key] = nil } }
    }
}
