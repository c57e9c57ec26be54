import Foundation
import SofaCore
import SofaWire
@testable import SofaBus
@testable import SofaServer
import Synchronization
import Testing

/// A fresh ipc endpoint no other test uses.
func uniqueIPCEndpoint(_ tag: String = "bus") -> String {
    "ipc:///tmp/sofa-test-\(tag)-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
}

/// Binds a server that answers like every Sofa process (health, echo with `delayMs`).
func bindEchoServer(_ endpoint: String = "tcp://127.0.0.1:*", instance: String = "server",
                    maxRequestBytes: Int = 16 << 20) async throws -> BusServer {
    let handler = BasicHandler(service: "test", instance: instance)
    return try await BusServer.bind(endpoint, name: "test", maxRequestBytes: maxRequestBytes,
                                    logger: .init(label: "sofa-bus-tests")) { request in
        await handler.handle(request)
    }
}

func echo(_ payload: [UInt8], delayMs: UInt32 = 0) -> Op {
    .echo(payload: payload, delayMs: delayMs, service: "")
}

/// Repeats `attempt` until it returns a value or `deadline` passes (then records a failure).
/// For waiting on something that happens in the background (a connection, a worker joining):
/// the loop waits on the event itself, with a deadline, never for a fixed time.
func eventually<T>(
    within deadline: Duration = .seconds(30), _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ attempt: () async -> T?
) async -> T? {
    let end = ContinuousClock.now + deadline
    while true {
        // Tried once more after the deadline: a test starved of CPU by the rest of the suite may
        // wake from its back-off past the deadline, with the event long there.
        if let value = await attempt() { return value }
        guard ContinuousClock.now < end else { break }
        try? await Task.sleep(for: .milliseconds(10))  // back-off between polls, not a wait for the event
    }
    Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
    return nil
}

/// Waits until a call through `client` is answered (ZeroMQ connects in the background).
@discardableResult
func waitUntilConnected(_ client: BusClient, sourceLocation: SourceLocation = #_sourceLocation) async -> Reply? {
    _ = await client.waitUntilConnected(timeout: .seconds(10))
    return await eventually("a connection to \(client.endpoint)", sourceLocation: sourceLocation) {
        try? await client.call(echo([0]), timeout: .seconds(2))
    }
}

/// The error a call fails with, or nil (and a recorded issue) when it succeeds.
func callError(_ client: BusClient, _ operation: Op, timeout: Duration,
               sourceLocation: SourceLocation = #_sourceLocation) async -> SofaError? {
    do {
        let reply = try await client.call(operation, timeout: timeout)
        Issue.record("expected an error, got \(reply)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Sends `messages` (each a list of frames) from a raw DEALER socket on its own thread, and
/// collects replies until `count` arrived or `timeoutMs` passed. Lets a test send what a
/// `BusClient` never would: garbage, several frames, oversized messages. The timeout only guards
/// against a hang: replies come from handlers on the cooperative pool, which the parallel suite
/// keeps busy for up to 40 s at its start.
func rawExchange(_ endpoint: String, _ messages: [[[UInt8]]], expecting count: Int,
                 timeoutMs: UInt64 = 120_000) async throws -> [[[UInt8]]] {  // ends as soon as the replies are in
    let result: Result<[[[UInt8]]], SofaError> = await withCheckedContinuation { continuation in
        let thread = Thread {
            do throws(SofaError) {
                let socket = try ZMQSocket(type: 5)  // ZMQ_DEALER (CZeroMQ is not a dependency of this target)
                try socket.connect(endpoint)
                for message in messages {
                    guard try socket.send(message) else { throw SofaError(.unavailable, "raw send refused") }
                }
                var replies: [[[UInt8]]] = []
                let end = monotonicMs() + timeoutMs
                while replies.count < count, monotonicMs() < end {
                    guard try poll([socket], fds: [], timeoutMs: 50)[0] else { continue }
                    while case .message(let frames)? = try socket.receive() { replies.append(frames) }
                }
                continuation.resume(returning: .success(replies))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        thread.start()
    }
    return try result.get()
}

/// A flag set by one task (e.g. a handler) and watched by the test.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Holds whoever passes `name`'s gate (a worker's requests, a slow handler) until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Set<String>, waiting: [String: [CheckedContinuation<Void, Never>]])>(([], [:]))

    /// Returns once `instance`'s gate is open.
    func pass(_ instance: String) async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if state.open.contains(instance) { return true }
                state.waiting[instance, default: []].append(continuation)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }

    func open(_ instance: String) {
        let waiting = state.withLock { state in
            state.open.insert(instance)
            return state.waiting.removeValue(forKey: instance) ?? []
        }
        for continuation in waiting { continuation.resume() }
    }
}
