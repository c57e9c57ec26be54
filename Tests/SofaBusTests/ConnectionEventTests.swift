import Foundation
import SofaBus
import SofaServer
import SofaCore
import SofaWire
import Testing

/// `BusClient.waitUntilConnected` follows the socket monitor's events: false while no peer
/// listens, true once the handshake is done, and true again after the peer restarts.
@Suite struct ConnectionEventTests {
    @Test func waitsForTheHandshakeAndFollowsRestarts() async throws {
        let endpoint = "ipc:///tmp/sofa-connection-\(UUID().uuidString.prefix(8)).sock"
        let client = try await BusClient.connect(endpoint, peerName: "test")
        defer { client.close() }
        #expect(await client.waitUntilConnected(timeout: .milliseconds(200)) == false)

        let first = try await bindEchoServer(endpoint, instance: "first")
        #expect(await client.waitUntilConnected(timeout: .seconds(10)))
        await first.close()

        let second = try await bindEchoServer(endpoint, instance: "second")
        #expect(await client.waitUntilConnected(timeout: .seconds(10)))
        #expect(await waitUntilConnected(client) == .echo(payload: [0], instance: "second"))
        await second.close()
    }

    @Test func aClosedClientIsNeverConnected() async throws {
        let client = try await BusClient.connect("tcp://127.0.0.1:1", peerName: "nobody")
        client.close()
        #expect(await client.waitUntilConnected(timeout: .seconds(5)) == false)
    }
}
