import Foundation
import SofaCore
import SofaWire
@testable import SofaBus
@testable import SofaServer
import Synchronization
import Testing

/// `BusServer.Forwarding.limits`: a router with direct forwarding passes on at most `perClient`
/// requests per client; the rest wait at the router and go on as answers come back. The router
/// here forwards echoes to a real echo server but holds each answer until the test releases it,
/// so the test decides when a forwarded request is answered.
@Suite struct FairForwardingTests {
    /// Answers held by the router, and how many requests were forwarded and not yet answered
    /// (with the most there ever were).
    final class Held: Sendable {
        private let state = Mutex<(answers: [@Sendable () -> Void], outstanding: Int, most: Int)>(([], 0, 0))

        func forwarded() { state.withLock { $0.outstanding += 1; $0.most = max($0.most, $0.outstanding) } }
        func hold(_ answer: @escaping @Sendable () -> Void) { state.withLock { $0.answers.append(answer) } }
        var count: Int { state.withLock { $0.answers.count } }
        var most: Int { state.withLock { $0.most } }

        /// Hands back the oldest held answer; false when none is held.
        @discardableResult func release() -> Bool {
            guard let answer = state.withLock({ state -> (@Sendable () -> Void)? in
                guard !state.answers.isEmpty else { return nil }
                state.outstanding -= 1
                return state.answers.removeFirst()
            }) else { return false }
            answer()
            return true
        }
    }

    static func router(to backend: String, limits: ForwardingLimits, timeout: Duration = .seconds(60),
                       held: Held?,
                       local: (@Sendable (ForwardedRequest, @escaping @Sendable (EncodedMessage?) -> Void) -> Bool)? = nil)
        async throws -> (BusServer, BusClient) {
        let upstream = try await BusClient.connect(backend, peerName: "backend")
        var forwarding = BusServer.Forwarding(operations: [DirectForwardingTests.echoField], limits: limits, direct: { request, reply in
            held?.forwarded()
            upstream.forward(request, timeout: timeout) { result in
                let message: EncodedMessage
                switch result {
                case .success(let bytes): message = ForwardedResponse.encoded(bytes, id: request.id)
                case .failure(let error): message = Response.failure(request.id, error).encodedMessage()
                }
                if let held { held.hold { reply(message) } } else { reply(message) }
            }
        }) { _ in
            Issue.record("the task path was taken")
            return Response.failure(0, SofaError(.unexpectedError, "not direct")).encodedMessage()
        }
        forwarding.local = local
        let server = try await BusServer.bind("tcp://127.0.0.1:*", name: "router", cancelOnDisconnect: true, forwarding: forwarding,
                                              logger: .init(label: "sofa-bus-tests")) { request in
            .failure(request.id, SofaError(.unsupported, "only echoes pass here"))
        }
        await waitUntilConnected(upstream)
        return (server, upstream)
    }

    /// A client pipelining 40 calls with a limit of 3: 3 are forwarded, 37 wait; as answers come
    /// back one at a time, the next go on; every call gets its own answer, never more than 3 were
    /// out at once, and nothing is left counted.
    @Test func aPipeliningClientLosesNothingAndHasAtMostItsLimitOut() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let held = Held()
        let (router, upstream) = try await Self.router(to: backend.endpoint, limits: ForwardingLimits(perClient: 3, bytesPerClient: nil), held: held)
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close(); upstream.close() }
        #expect(await client.waitUntilConnected(timeout: .seconds(30)))  // (a call would be held)
        let count = 40
        let calls = Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let payload = Array("call \(index)".utf8)
                        return try await client.call(echo(payload), timeout: .seconds(60)) == .echo(payload: payload, instance: "backend")
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        _ = await eventually("3 forwarded and 37 waiting") {
            held.count == 3 && router.forwardingTotals == (3, count - 3) ? true : nil
        }
        for answered in 1...count {
            // The next waiting one goes on as soon as one is answered.
            #expect(held.release())
            let out = min(3, count - answered)
            _ = await eventually("\(out) out after \(answered) answers") { held.count == out ? true : nil }
        }
        let results = try await calls.value
        #expect(results.count == count && results.allSatisfy { $0 })
        #expect(held.most == 3)
        #expect(router.forwardingTotals == (0, 0))
        await router.close()
        await backend.close()
    }

    /// `Forwarding.local`: a request the router answers itself is not counted among its client's
    /// in flight, so it is answered while the client is at its limit; one it hands back (nil)
    /// is counted and waits its turn as any other.
    @Test func requestsAnsweredLocallyAreNotCounted() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let held = Held()
        let (router, upstream) = try await Self.router(
            to: backend.endpoint, limits: ForwardingLimits(perClient: 1, bytesPerClient: nil), held: held) { request, reply in
            guard let decoded = try? Request.decode(request.bytes(id: request.id, deadline: request.deadline)),
                  case .echo(let payload, _, _) = decoded.operation else { return false }
            switch String(decoding: payload, as: UTF8.self) {
            case "local": reply(Response.ok(request.id, .echo(payload: payload, instance: "router")).encodedMessage())
            case "handed back": reply(nil)
            default: return false
            }
            return true
        }
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close(); upstream.close() }
        #expect(await client.waitUntilConnected(timeout: .seconds(30)))
        let first = Task { try await client.call(echo(Array("first".utf8)), timeout: .seconds(60)) }
        _ = await eventually("the first forwarded and held") { held.count == 1 ? true : nil }
        // The client is at its limit of 1; the router's own answer comes anyway.
        let local = try await client.call(echo(Array("local".utf8)), timeout: .seconds(30))
        #expect(local == .echo(payload: Array("local".utf8), instance: "router"))
        #expect(router.forwardingTotals == (1, 0))
        // One handed back waits behind the first.
        let handedBack = Task { try await client.call(echo(Array("handed back".utf8)), timeout: .seconds(60)) }
        _ = await eventually("the handed-back call waiting") { router.forwardingTotals == (1, 1) ? true : nil }
        held.release()
        _ = await eventually("the handed-back call forwarded") { held.count == 1 ? true : nil }
        held.release()
        #expect(try await first.value == .echo(payload: Array("first".utf8), instance: "backend"))
        #expect(try await handedBack.value == .echo(payload: Array("handed back".utf8), instance: "backend"))
        _ = await eventually("nothing counted") { router.forwardingTotals == (0, 0) ? true : nil }
        await router.close()
        await backend.close()
    }

    /// The request beyond a client's waiting bytes is refused with `.busy` naming the setting;
    /// another client is not affected.
    @Test func waitingBeyondTheBytesLimitIsRefused() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let held = Held()
        let (router, upstream) = try await Self.router(to: backend.endpoint, limits: ForwardingLimits(perClient: 1, bytesPerClient: nil, waitingBytes: 1000),
                                                       held: held)
        defer { upstream.close() }
        let big = [UInt8](repeating: 7, count: 600)
        let requests = (1...3).map { [Request(id: UInt64($0), operation: echo(big)).encoded()] }
        // 1 is forwarded (its answer held), 2 waits, 3 would take the waiting bytes over 1000.
        let replies = try await rawExchange(router.endpoint, requests, expecting: 1)
        let refused = try Response.decode(try #require(replies.first?.last))
        #expect(refused.id == 3)
        guard case .failure(let error) = refused.outcome else { Issue.record("\(refused)"); return }
        #expect(error.is(.busy) && error.message.contains("SOFA_CLIENT_WAITING_BYTES"), "\(error)")
        // The raw client went away: its waiting request is dropped, the forwarded one counted out when answered.
        _ = await eventually("the waiting request dropped") { router.forwardingTotals.waiting == 0 ? true : nil }
        _ = await eventually("the forwarded answer held") { held.count == 1 ? true : nil }
        held.release()
        _ = await eventually("nothing counted") { router.forwardingTotals == (0, 0) ? true : nil }
        let other = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { other.close() }
        #expect(await other.waitUntilConnected(timeout: .seconds(30)))
        let call = Task { try await other.call(echo(big), timeout: .seconds(60)) }
        _ = await eventually("the other client's call forwarded") { held.release() ? true : nil }
        #expect(try await call.value == .echo(payload: big, instance: "backend"))
        await router.close()
        await backend.close()
    }

    /// Every path counts a request out: timeouts of the service and errors (the service gone).
    /// After each, the client is not blocked.
    @Test func everyPathCountsOut() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let (router, upstream) = try await Self.router(to: backend.endpoint, limits: ForwardingLimits(perClient: 2, bytesPerClient: nil),
                                                       timeout: .milliseconds(300), held: nil)
        defer { upstream.close() }
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close() }
        await waitUntilConnected(client)
        // Timeouts: 6 slow echoes with a limit of 2 each time out at the router's forward.
        let slow = await withTaskGroup(of: SofaError?.self) { group in
            for _ in 0..<6 { group.addTask { await callError(client, echo([1], delayMs: 3000), timeout: .seconds(30)) } }
            return await group.reduce(into: [SofaError?]()) { $0.append($1) }
        }
        #expect(slow.allSatisfy { $0?.is(.timeout) == true }, "\(slow)")
        #expect(router.forwardingTotals == (0, 0))
        // Not blocked (retried: on a busy machine a call may outlast the router's 300 ms too).
        let after = await eventually("a call to go through after the timeouts") { try? await client.call(echo([2]), timeout: .seconds(30)) }
        #expect(after == .echo(payload: [2], instance: "backend"))
        // Errors: the service is gone.
        await backend.close()
        let gone = await withTaskGroup(of: SofaError?.self) { group in
            for _ in 0..<5 { group.addTask { await callError(client, echo([4]), timeout: .seconds(30)) } }
            return await group.reduce(into: [SofaError?]()) { $0.append($1) }
        }
        #expect(gone.allSatisfy { $0 != nil }, "\(gone)")
        #expect(router.forwardingTotals == (0, 0))
        await router.close()
    }

    /// A request whose deadline passes while it waits is taken out (answered with a timeout),
    /// without going on; it never counted in flight.
    @Test func aWaitingRequestPastItsDeadlineTimesOut() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let held = Held()
        let (router, upstream) = try await Self.router(to: backend.endpoint, limits: ForwardingLimits(perClient: 1, bytesPerClient: nil),
                                                       held: held)
        defer { upstream.close() }
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close() }
        #expect(await client.waitUntilConnected(timeout: .seconds(30)))
        let first = Task { try await client.call(echo([1]), timeout: .seconds(60)) }
        _ = await eventually("the first call forwarded") { held.count == 1 ? true : nil }
        // The client gives up at the deadline too; the router then drops the request (and answers it).
        let late = await callError(client, echo([2]), timeout: .milliseconds(300))
        #expect(late?.is(.timeout) == true, "\(String(describing: late))")
        _ = await eventually("the late request taken out") { router.forwardingTotals == (1, 0) ? true : nil }
        held.release()
        #expect(try await first.value == .echo(payload: [1], instance: "backend"))
        #expect(router.forwardingTotals == (0, 0) && held.count == 0)
        await router.close()
        await backend.close()
    }

    /// A client that goes away with 2 requests in flight and 8 waiting: the waiting ones are
    /// dropped, the in-flight ones counted out when their answers come; a new client is served.
    @Test func aClientThatGoesAwayIsCountedOut() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let held = Held()
        let (router, upstream) = try await Self.router(to: backend.endpoint, limits: ForwardingLimits(perClient: 2, bytesPerClient: nil), held: held)
        defer { upstream.close() }
        let leave = DispatchSemaphore(value: 0)
        let left = Flag()
        let thread = Thread {
            guard let socket = try? ZMQSocket(type: 5), (try? socket.connect(router.endpoint)) != nil else { return left.set() }
            for id in 1...10 { _ = try? socket.send([Request(id: UInt64(id), operation: echo([3])).encoded()]) }
            leave.wait()  // until the test has seen the requests arrive
            withExtendedLifetime(socket) {}
            _ = consume socket
            left.set()
        }
        thread.start()
        _ = await eventually("2 in flight, 8 waiting") { router.forwardingTotals == (2, 8) && held.count == 2 ? true : nil }
        leave.signal()
        _ = await eventually("the client gone") { left.isSet ? true : nil }
        _ = await eventually("its waiting requests dropped") { router.forwardingTotals == (2, 0) ? true : nil }
        #expect(held.release() && held.release())
        _ = await eventually("nothing counted") { router.forwardingTotals == (0, 0) ? true : nil }
        #expect(held.count == 0, "a dropped request was forwarded")
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close() }
        #expect(await client.waitUntilConnected(timeout: .seconds(30)))
        let call = Task { try await client.call(echo([4]), timeout: .seconds(60)) }
        _ = await eventually("the new client's call forwarded") { held.release() ? true : nil }
        #expect(try await call.value == .echo(payload: [4], instance: "backend"))
        await router.close()
        await backend.close()
    }
}
