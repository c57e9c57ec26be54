import Foundation
import SofaCore
import SofaWire
@testable import SofaBus
@testable import SofaServer
import Testing

/// `BusServer.Forwarding.direct` with `BusClient.forward(_:timeout:then:)`: a router that passes
/// requests from its server's socket thread to a client's and the answers straight back, as the
/// gateway does. Echo requests (field 18) are forwarded.
@Suite struct DirectForwardingTests {
    static let echoField: UInt32 = 18

    /// A router in front of `backend`, forwarding echoes with `timeout`.
    static func router(to backend: String, timeout: Duration) async throws -> (BusServer, BusClient) {
        let upstream = try await BusClient.connect(backend, peerName: "backend")
        let forwarding = BusServer.Forwarding(operations: [echoField], direct: { request, reply in
            upstream.forward(request, timeout: timeout) { result in
                switch result {
                case .success(let bytes): reply(ForwardedResponse.encoded(bytes, id: request.id))
                case .failure(let error): reply(Response.failure(request.id, error).encodedMessage())
                }
            }
        }) { _ in
            Issue.record("the task path was taken")
            return Response.failure(0, SofaError(.unexpectedError, "not direct")).encodedMessage()
        }
        let server = try await BusServer.bind("tcp://127.0.0.1:*", name: "router", forwarding: forwarding,
                                              logger: .init(label: "sofa-bus-tests")) { request in
            .failure(request.id, SofaError(.unsupported, "only echoes pass here"))
        }
        return (server, upstream)
    }

    @Test func manyCallsInFlightEachGetTheirOwnAnswer() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        let (router, upstream) = try await Self.router(to: backend.endpoint, timeout: .seconds(60))
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close(); upstream.close() }
        await waitUntilConnected(client)
        await waitUntilConnected(upstream)
        let count = 2000
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    let payload = withUnsafeBytes(of: UInt32(index).littleEndian) { Array($0) }
                    let reply = try await client.call(echo(payload, delayMs: UInt32(index % 5)), timeout: .seconds(60))
                    return reply == .echo(payload: payload, instance: "backend") ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        // What is not forwarded is the router's own.
        let own = await callError(client, .health(service: "nobody"), timeout: .seconds(10))
        #expect(own?.is(.unsupported) == true, "\(String(describing: own))")
        await router.close()
        await backend.close()
    }

    @Test func aSlowBackendTimesOutAndAGoneOneIsUnavailable() async throws {
        let backend = try await bindEchoServer(instance: "backend")
        // The router's timeout is 2 s: long enough for a loaded machine to pass an echo on
        // (the connection checks below go through it), far shorter than the slow echo's 10 s.
        let (router, upstream) = try await Self.router(to: backend.endpoint, timeout: .seconds(2))
        let client = try await BusClient.connect(router.endpoint, peerName: "router")
        defer { client.close(); upstream.close() }
        // The router's own link first: the client's echoes go through it.
        await waitUntilConnected(upstream)
        await waitUntilConnected(client)
        let slow = await callError(client, echo([1], delayMs: 10_000), timeout: .seconds(30))
        #expect(slow?.is(.timeout) == true, "\(String(describing: slow))")
        // The router still forwards (retried: on a busy machine one call may outlast 2 s too).
        let after = await eventually("the router to forward after a timeout") { try? await client.call(echo([2])) }
        #expect(after == .echo(payload: [2], instance: "backend"))
        await backend.close()
        // Once the router has seen the backend go (on a loaded machine that can take longer than
        // its 2 s timeout), a call is unavailable at once.
        _ = await eventually("the router to see the backend gone") { upstream.isConnected ? nil : true }
        let gone = await callError(client, echo([3]), timeout: .seconds(30))
        #expect(gone?.is(.unavailable) == true, "\(String(describing: gone))")
        await router.close()
    }
}
