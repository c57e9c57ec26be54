internal import SofaCore
internal import SofaFiles
internal import Synchronization

/// Document IDs as CouchDB makes them by default (its "sequential" algorithm): 26 random hex
/// digits, then a 6-digit hex counter that grows by a random step, and a new random prefix when
/// the counter would overflow. IDs made one after another sort in the order they were made (until
/// the prefix changes), so documents written together land near each other in the ID index (and,
/// as CouchDB's, the next one is close to the last: they are not secrets).
final class SequentialUUIDs: Sendable {
    private struct State {
        var prefix = ""
        var counter: UInt32 = 0
    }

    private let state = Mutex(State())
    static let counterLimit: UInt32 = 0xFF_FFFF

    /// The next ID (32 lower-case hex digits).
    func next() throws -> String {
        var generator = SystemRandomNumberGenerator()
        let step = UInt32.random(in: 1...0xFFE, using: &generator)
        return try state.withLock { state throws -> String in
            if state.prefix.isEmpty || state.counter > Self.counterLimit - step {
                state.prefix = try Self.prefix()  // read from the system only when the counter runs out
                state.counter = UInt32.random(in: 0..<0xFFF, using: &generator)
            } else {
                state.counter += step
            }
            let digits = String(state.counter, radix: 16)
            return state.prefix + String(repeating: "0", count: 6 - digits.count) + digits
        }
    }

    /// 26 random hex digits.
    private static func prefix() throws -> String { String(try randomBytes(13).hexString.prefix(26)) }
}
