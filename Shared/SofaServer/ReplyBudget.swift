import SofaBus
public import SofaCore
internal import Synchronization

/// How many bytes of replies a server holds for clients that have not taken them yet: from the
/// moment a reply is ready until ZeroMQ lets go of its buffer (it is in the kernel's socket
/// buffer, on its way, or dropped with its connection). A client that sends requests and never
/// reads their replies fills its own budget and no more:
/// * A reply that would take a client over `perClient` is dropped and replaced by a short
///   `.busy` error naming the limit (a client holding nothing always gets its reply, however big,
///   as does any client while nothing is held at all).
/// * Past `total` across clients, a reply is kept only within the client's fair share of the
///   total (`total` / the clients holding bytes): clients that read keep being served.
/// * A new request from a client over its budget (or over its fair share while the total is
///   exceeded) is refused with that error before any work is done for it; so is one whose reply
///   would not fit, judged by the size of the last reply dropped for that client (a client that
///   does not read large replies has them refused, not fetched and dropped one after another).
/// * Errors are small and kept up to `errorSlack` bytes beyond the limits; past that a client,
///   which is evidently not reading, gets no answer at all.
public final class ReplyBudget: Sendable {
    public let perClient: Int
    public let total: Int
    public static let errorSlack = 1 << 20
    /// Bytes held per client and in total; per client holding bytes, the size of its last reply
    /// dropped for its own budget (the expected size of its next one).
    private let state = Mutex<(held: [[UInt8]: Int], total: Int, dropped: [[UInt8]: Int])>(([:], 0, [:]))

    public init(perClient: Int, total: Int) {
        self.perClient = max(1, perClient)
        self.total = max(1, total)
    }

    /// Bytes held now for `client`, and for every client.
    public func held(by client: [UInt8]) -> Int { state.withLock { $0.held[client] ?? 0 } }
    public var heldInTotal: Int { state.withLock { $0.total } }

    /// Why a new request of `client` is refused now; nil when it may go ahead.
    public func refusal(for client: [UInt8]) -> SofaError? {
        state.withLock { state in
            let held = state.held[client] ?? 0
            guard held > 0 else { return nil }  // a client holding nothing always gets its reply
            if held >= perClient || held + (state.dropped[client] ?? 0) > perClient { return overClient(held) }
            if state.total >= total, held >= fairShare(state.held.count) { return overTotal(state.total) }
            return nil
        }
    }

    /// Counts a reply of `bytes` for `client` if it fits; otherwise the error to answer instead.
    public func reserve(_ bytes: Int, for client: [UInt8]) -> SofaError? {
        state.withLock { state in
            let held = state.held[client] ?? 0
            if held > 0 && held + bytes > perClient {
                state.dropped[client] = bytes
                return overClient(held, dropping: bytes)
            }
            if state.total > 0, state.total + bytes > total,
               held + bytes > fairShare(state.held.count + (held == 0 ? 1 : 0)) {
                return overTotal(state.total, dropping: bytes)
            }
            state.held[client] = held + bytes
            state.total += bytes
            return nil
        }
    }

    /// Counts an error reply of `bytes` if it fits within the limits plus `errorSlack`.
    public func reserveError(_ bytes: Int, for client: [UInt8]) -> Bool {
        state.withLock { state in
            let held = state.held[client] ?? 0
            guard held + bytes <= perClient + Self.errorSlack else { return false }
            state.held[client] = held + bytes
            state.total += bytes
            return true
        }
    }

    /// ZeroMQ let go of a reply counted for `client`.
    public func release(_ bytes: Int, for client: [UInt8]) {
        state.withLock { state in
            let left = (state.held[client] ?? 0) - bytes
            state.held[client] = left > 0 ? left : nil
            if left <= 0 { state.dropped[client] = nil }
            state.total -= bytes
        }
    }

    private func fairShare(_ clients: Int) -> Int { total / max(1, clients) }

    private func overClient(_ held: Int, dropping bytes: Int? = nil) -> SofaError {
        SofaError(.busy, (bytes.map { "a reply of \($0) bytes was dropped: " } ?? "refused: ")
            + "the gateway already holds \(held) bytes of replies this client has not read, and a client may "
            + "hold at most \(perClient) (SOFA_CLIENT_REPLY_BYTES); read the replies before asking for more")
    }

    private func overTotal(_ heldInTotal: Int, dropping bytes: Int? = nil) -> SofaError {
        SofaError(.busy, (bytes.map { "a reply of \($0) bytes was dropped: " } ?? "refused: ")
            + "the gateway holds \(heldInTotal) bytes of replies its clients have not read, over its limit of "
            + "\(total) (SOFA_TOTAL_REPLY_BYTES), and this client holds more than its share; read the replies "
            + "before asking for more")
    }
}
