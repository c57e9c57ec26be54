import Foundation
import SofaBus
import SofaClient
import SofaServer
import SofaCore
import SofaWire
import Testing

/// BusServer and BusClient over real ZeroMQ sockets.
@Suite struct BusClientServerTests {
    @Test(arguments: ["tcp://127.0.0.1:*", "ipc"])
    func echoRoundTrip(_ endpoint: String) async throws {
        let server = try await bindEchoServer(endpoint == "ipc" ? uniqueIPCEndpoint() : endpoint, instance: "s1")
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        await waitUntilConnected(client)

        // Generous deadlines: at the start of the full suite, a loaded machine may hold even a
        // loopback echo for seconds; what is checked here is the answers, not their speed.
        #expect(try await client.call(echo([1, 2, 3]), timeout: .seconds(60)) == .echo(payload: [1, 2, 3], instance: "s1"))
        #expect(try await client.call(echo([]), timeout: .seconds(60)) == .echo(payload: [], instance: "s1"))
        guard case .health(let health) = try await client.call(.health(service: ""), timeout: .seconds(60)) else {
            Issue.record("expected a health reply")
            return
        }
        #expect(health.service == "test")
        #expect(health.instance == "s1")
        // An error reply travels back as the call's error.
        let error = await callError(client, .listDatabases, timeout: .seconds(60))
        #expect(error?.is(.unimplemented) == true)
        await server.close()
    }

    @Test func concurrentCallsAreMultiplexedByID() async throws {
        let server = try await bindEchoServer()
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        await waitUntilConnected(client)

        let count = 5000
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    let payload = withUnsafeBytes(of: UInt32(index).littleEndian) { Array($0) } + [UInt8(index % 251)]
                    // Spread the answers out of order: some replies are delayed by the server.
                    let reply = try await client.call(echo(payload, delayMs: UInt32(index % 7)), timeout: .seconds(60))
                    return reply == .echo(payload: payload, instance: "server") ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        await server.close()
    }

    @Test func handlerTooSlowFailsWithTimeoutNearTheDeadline() async throws {
        let server = try await bindEchoServer()
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        await waitUntilConnected(client)

        let clock = ContinuousClock()
        let start = clock.now
        let error = await callError(client, echo([1], delayMs: 3000), timeout: .milliseconds(200))
        let elapsed = clock.now - start
        #expect(error?.is(.timeout) == true, "got \(String(describing: error))")
        #expect(elapsed >= .milliseconds(190))
        #expect(elapsed < .seconds(300))  // no hang (a loaded machine once held this process's tasks 37 s); `.timeout` (not the 3 s reply) shows the deadline fired
        // The client still works afterwards (the late reply is dropped).
        #expect(try await client.call(echo([2]), timeout: .seconds(60)) == .echo(payload: [2], instance: "server"))
        await server.close()
    }

    @Test func nobodyListeningFailsFastWithUnavailable() async throws {
        for endpoint in [uniqueIPCEndpoint("nobody"), "tcp://127.0.0.1:1"] {
            let client = try await BusClient.connect(endpoint, peerName: "nobody")
            defer { client.close() }
            let clock = ContinuousClock()
            let start = clock.now
            // Unavailable (not a timeout), long before the deadline even on a loaded machine.
            let error = await callError(client, echo([1]), timeout: .seconds(600))
            #expect(error?.is(.unavailable) == true, "\(endpoint): got \(String(describing: error))")
            #expect(clock.now - start < .seconds(300), "\(endpoint)")
        }
    }

    @Test func callInFlightWhenThePeerGoesAwayFailsWithUnavailable() async throws {
        let endpoint = uniqueIPCEndpoint("drop")
        let started = Flag()
        let slow = Gate()
        defer { slow.open("handler") }  // the handler ends with the test
        let server = try await BusServer.bind(endpoint, name: "test", logger: .init(label: "sofa-bus-tests")) { request in
            guard case .echo = request.operation else { return .ok(request.id) }
            started.set()
            await slow.pass("handler")  // held until the test ends: it never answers in time
            return .ok(request.id)
        }
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        let connected = await eventually("a connection") {
            try? await client.call(.health(service: ""), timeout: .seconds(1))
        }
        try #require(connected == Reply.none)

        let clock = ContinuousClock()
        let start = clock.now
        // The call's timeout is far beyond any wait a loaded machine makes (the whole suite once
        // kept this process's tasks from running for 37 s): ending before it is the closing.
        async let pending = callError(client, echo([1]), timeout: .seconds(600))
        let running = await eventually("the handler to start") { started.isSet ? true : nil }
        try #require(running == true)
        await server.close()
        let error = await pending
        #expect(error?.is(.unavailable) == true, "got \(String(describing: error))")
        #expect(clock.now - start < .seconds(300))  // not the call's timeout: the handler never answered
    }

    /// Waiting for a peer that does not run ends when the waiting task is cancelled (a service
    /// stopping), not at the end of the wait; connecting the SDK says it was cancelled.
    @Test func waitingForAPeerEndsWhenCancelled() async throws {
        let endpoint = uniqueIPCEndpoint("nobody")
        let client = try await BusClient.connect(endpoint, peerName: "test")
        defer { client.close() }
        let clock = ContinuousClock()
        let start = clock.now
        // Waits far beyond any delay a loaded machine makes (the whole suite once kept this
        // process's tasks from running for 37 s): ending before them is the cancellation.
        let waiting = Task { await client.waitUntilConnected(timeout: .seconds(3600)) }
        let connecting = Task { () -> SofaError? in
            do throws(SofaError) {
                _ = try await SofaClient.connect(endpoint, timeout: .seconds(3600))
                return nil
            } catch {
                return error
            }
        }
        waiting.cancel()
        connecting.cancel()
        #expect(await waiting.value == false)
        let error = await connecting.value
        #expect(error?.is(.cancelled) == true, "got \(String(describing: error))")
        #expect(clock.now - start < .seconds(600))  // not the wait's hour
    }

    @Test func clientReconnectsWhenThePeerRestarts() async throws {
        let endpoint = uniqueIPCEndpoint("restart")
        let first = try await bindEchoServer(endpoint, instance: "first")
        let client = try await BusClient.connect(endpoint, peerName: "test")
        defer { client.close() }
        let before = await waitUntilConnected(client)
        #expect(before == .echo(payload: [0], instance: "first"))

        await first.close()
        let second = try await bindEchoServer(endpoint, instance: "second")
        let after = await eventually("an answer from the restarted server") {
            try? await client.call(echo([9]), timeout: .seconds(1))
        }
        #expect(after == .echo(payload: [9], instance: "second"))
        await second.close()
    }

    /// Whatever a peer sends that is not one request gets an error response (with the request's id
    /// when it can be read, else 0), and the server keeps serving: the valid request sent right
    /// after it is answered.
    static let badMessages: [(String, [[UInt8]], SofaError.Code)] = [
        ("garbage", [[0xDE, 0xAD, 0xBE, 0xEF]], .malformedMessage),
        ("empty frame", [[]], .malformedMessage),
        ("two frames", [Request(id: 5, operation: echo([5])).encoded(), [1]], .malformedMessage),
        ("oversized", [[UInt8](repeating: 0x41, count: 2000)], .messageTooLarge),
        ("oversized request", [Request(id: 6, operation: echo([UInt8](repeating: 7, count: 1500))).encoded()],
         .messageTooLarge),
    ]

    @Test(arguments: badMessages)
    func badMessageGetsAnErrorAndTheServerKeepsServing(_ name: String, _ frames: [[UInt8]], _ code: SofaError.Code) async throws {
        let server = try await bindEchoServer(maxRequestBytes: 1024)
        let valid = Request(id: 42, operation: echo([4, 2]))
        let replies = try await rawExchange(server.endpoint, [frames, [valid.encoded()]], expecting: 2)
        let responses = try replies.map { frames in try Response.decode(try #require(frames.last)) }
        #expect(responses.count == 2, "\(name)")
        let failure = responses.first { $0.id != 42 }
        guard case .failure(let error)? = failure?.outcome else {
            Issue.record("\(name): no error response among \(responses)")
            await server.close()
            return
        }
        #expect(error.sofaCode == code, "\(name): \(error)")
        #expect(responses.contains(.ok(42, .echo(payload: [4, 2], instance: "server"))), "\(name)")
        await server.close()
    }

    /// A BusClient whose request is over the server's limit should hear why, at once, rather than
    /// wait out its whole timeout: the server answers `.messageTooLarge` with the id read from the
    /// request's first bytes.
    @Test func oversizedCallFailsWithMessageTooLarge() async throws {
        let server = try await bindEchoServer(maxRequestBytes: 1024)
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        await waitUntilConnected(client)
        let clock = ContinuousClock()
        let start = clock.now
        let error = await callError(client, echo([UInt8](repeating: 1, count: 4000)), timeout: .seconds(600))
        #expect(error?.is(.messageTooLarge) == true, "got \(String(describing: error))")  // answered, not timed out
        #expect(clock.now - start < .seconds(300))
        // And the connection still serves normal calls.
        #expect(try await client.call(echo([1])) == .echo(payload: [1], instance: "server"))
        await server.close()
    }

    /// BusClient watches its DEALER with zmq_socket_monitor and, when it closes, drops the monitor's
    /// PAIR without first stopping the monitor (`zmq_socket_monitor(socket, NULL, 0)`). If the
    /// DEALER's connection drops in that moment, ZeroMQ's I/O thread blocks for ever sending the
    /// DISCONNECTED event to a PAIR nobody reads (libzmq issue #3575), and every ZeroMQ socket of
    /// the process stops moving. Here: clients and their servers closed at the same time, then a
    /// fresh pair must still talk.
    @Test func closingClientsAsTheirPeersGoAwayDoesNotFreezeZeroMQ() async throws {
        for round in 0..<40 {
            let server = try await bindEchoServer(uniqueIPCEndpoint("freeze"), instance: "r\(round)")
            let client = try await BusClient.connect(server.endpoint, peerName: "test")
            let connected = await eventually("round \(round) to connect") {
                try? await client.call(echo([0]), timeout: .seconds(1))
            }
            client.close()
            await server.close()
            if connected == nil { return }  // frozen: the issue is recorded
        }
        let server = try await bindEchoServer()
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        defer { client.close() }
        let reply = await eventually("a fresh client and server to talk") {
            try? await client.call(echo([1]), timeout: .seconds(1))
        }
        #expect(reply == .echo(payload: [1], instance: "server"))
        await server.close()
    }

    @Test func closedClientRefusesCalls() async throws {
        let server = try await bindEchoServer()
        let client = try await BusClient.connect(server.endpoint, peerName: "test")
        await waitUntilConnected(client)
        client.close()
        let error = await callError(client, echo([1]), timeout: .seconds(5))
        #expect(error?.is(.shuttingDown) == true, "got \(String(describing: error))")
        await server.close()
    }

    @Test func bindingAnEndpointTwiceFails() async throws {
        let server = try await bindEchoServer("tcp://127.0.0.1:*")
        // The bound TCP port is taken: a second bind on it fails with a zmq error, not a crash.
        await #expect(throws: SofaError.self) { _ = try await bindEchoServer(server.endpoint) }
        await server.close()
    }
}
