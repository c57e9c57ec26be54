internal import SofaBus
internal import Synchronization

/// How long a server holds each refusal of a request refused for a size limit, per client: the
/// first `BusLimits.refusalDelayMs`, each one that follows within `memory` of the last twice the
/// one before, up to `longest`. A client that keeps sending what it is refused (a loop retrying
/// an oversized request or bulk, one after the other) is slowed to one every few seconds, so the
/// bytes it makes the server receive stop taking the cores from the other clients; a client that
/// stops is forgotten after `memory`. Requests within the limits are never held.
final class RefusalPacer: Sendable {
    static let longest: Duration = .seconds(5)
    static let memory: Duration = .seconds(10)
    /// Clients remembered at most (beyond it, those quiet for `memory` are forgotten first, then all).
    static let maxClients = 10_000

    private let clients = Mutex<[[UInt8]: (count: Int, last: ContinuousClock.Instant)]>([:])

    /// How many clients are remembered.
    var count: Int { clients.withLock { $0.count } }

    /// The delay of a refusal to `client` now (and it is counted).
    func delay(for client: [UInt8], now: ContinuousClock.Instant = .now) -> Duration {
        clients.withLock { clients in
            if clients.count >= Self.maxClients {
                clients = clients.filter { now - $0.value.last < Self.memory }
                if clients.count >= Self.maxClients { clients = [:] }
            }
            var entry = clients[client] ?? (0, now)
            if now - entry.last >= Self.memory { entry.count = 0 }
            entry.count += 1
            entry.last = now
            clients[client] = entry
            let first = Duration.milliseconds(BusLimits.refusalDelayMs)
            return entry.count > 12 ? Self.longest : min(Self.longest, first * (1 << (entry.count - 1)))
        }
    }
}
