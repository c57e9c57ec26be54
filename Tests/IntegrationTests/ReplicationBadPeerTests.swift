import CZeroMQ
import Foundation
import SofaCluster
import SofaClient
import SofaWire
import Synchronization
import Testing

/// A peer that misbehaves: a gateway stand-in bound on a free port that either answers every
/// request with bytes that are no response, or forwards to a real gateway and rewrites some of
/// its answers. Runs on a thread of its own until `stop()`.
final class MisbehavingPeer: Sendable {
    enum Behaviour: Sendable {
        /// Every request is answered with these bytes.
        case garbage([UInt8])
        /// Requests go to `gateway`; each response passes through `rewrite` on its way back.
        case forward(gateway: String, rewrite: @Sendable (Request, Response) -> Response)
    }

    let endpoint: String
    private let stopped = Atomic<Bool>(false)
    private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let done = Atomic<Bool>(false)
    private let bound = Atomic<Bool>(false)

    init(_ behaviour: Behaviour) throws {
        endpoint = "tcp://127.0.0.1:\(try freePort())"
        let endpoint = endpoint
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            self.run(behaviour, endpoint, ready)
        }
        thread.start()
        ready.wait()
        guard bound.load(ordering: .acquiring) else { throw SofaError(.unexpectedError, "cannot bind \(endpoint)") }
    }

    func stop() async {
        stopped.store(true, ordering: .releasing)
        await withCheckedContinuation { continuation in
            let alreadyDone = finished.withLock { slot -> Bool in
                if done.load(ordering: .acquiring) { return true }
                slot = continuation
                return false
            }
            if alreadyDone { continuation.resume() }
        }
    }

    private func run(_ behaviour: Behaviour, _ endpoint: String, _ ready: DispatchSemaphore) {
        let context = zmq_ctx_new()
        let front = zmq_socket(context, ZMQ_ROUTER)!
        var linger: Int32 = 0
        zmq_setsockopt(front, ZMQ_LINGER, &linger, 4)
        // A peer of the test clusters' key (as another cluster deployed with it would be).
        let keys = TestSecrets.cluster
        var one: Int32 = 1
        zmq_setsockopt(front, ZMQ_CURVE_SERVER, &one, 4)
        zmq_setsockopt(front, ZMQ_CURVE_SECRETKEY, keys.secretKey, 40)
        bound.store(zmq_bind(front, endpoint) == 0, ordering: .releasing)
        var back: UnsafeMutableRawPointer?
        if case .forward(let gateway, _) = behaviour {
            back = zmq_socket(context, ZMQ_DEALER)
            zmq_setsockopt(back, ZMQ_LINGER, &linger, 4)
            zmq_setsockopt(back, ZMQ_CURVE_SERVERKEY, keys.publicKey, 40)
            zmq_setsockopt(back, ZMQ_CURVE_PUBLICKEY, keys.publicKey, 40)
            zmq_setsockopt(back, ZMQ_CURVE_SECRETKEY, keys.secretKey, 40)
            zmq_connect(back, gateway)
        }
        ready.signal()
        // Calls in flight to the real gateway: request id → (caller identity, request).
        var inFlight: [UInt64: ([UInt8], Request)] = [:]
        while !stopped.load(ordering: .acquiring) {
            var items = [zmq_pollitem_t(socket: front, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
            if let back { items.append(zmq_pollitem_t(socket: back, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)) }
            guard zmq_poll(&items, Int32(items.count), 20) > 0 else { continue }
            if items[0].revents & Int16(ZMQ_POLLIN) != 0, let frames = Self.receive(front), frames.count >= 2 {
                let identity = frames[0], payload = frames[frames.count - 1]
                switch behaviour {
                case .garbage(let bytes):
                    Self.send(front, [identity, bytes])
                case .forward:
                    // A batch of calls (the SDK sends them to a gateway that takes them) goes on call by call.
                    for call in WireBatch.unpacked(payload).messages {
                        if let request = try? Request.decode(call), let back {
                            inFlight[request.id] = (identity, request)
                            Self.send(back, [call])
                        }
                    }
                }
            }
            if let back, items.count > 1, items[1].revents & Int16(ZMQ_POLLIN) != 0,
               let frames = Self.receive(back), let payload = frames.last,
               case .forward(_, let rewrite) = behaviour,
               let response = try? Response.decode(payload),
               let (identity, request) = inFlight.removeValue(forKey: response.id) {
                Self.send(front, [identity, rewrite(request, response).encoded()])
            }
        }
        zmq_close(front)
        if let back { zmq_close(back) }
        zmq_ctx_term(context)
        let waiter = finished.withLock { slot -> CheckedContinuation<Void, Never>? in
            done.store(true, ordering: .releasing)
            defer { slot = nil }
            return slot
        }
        waiter?.resume()
    }

    private static func receive(_ socket: UnsafeMutableRawPointer) -> [[UInt8]]? {
        var frames: [[UInt8]] = []
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        repeat {
            guard zmq_msg_recv(&message, socket, Int32(ZMQ_DONTWAIT)) >= 0 else { return nil }
            frames.append(Array(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: zmq_msg_size(&message))))
        } while zmq_msg_more(&message) != 0
        return frames
    }

    private static func send(_ socket: UnsafeMutableRawPointer, _ frames: [[UInt8]]) {
        for (index, frame) in frames.enumerated() {
            _ = frame.withUnsafeBytes {
                zmq_send(socket, $0.baseAddress, frame.count, index < frames.count - 1 ? ZMQ_SNDMORE : 0)
            }
        }
    }
}

/// Peers that send malformed frames or revisions with impossible histories: rejected, logged,
/// the rest goes on, and the replicator keeps serving.
@Suite(.serialized) struct ReplicationBadPeerTests {
    @Test func peerSendingMalformedFramesGetsAClearStatus() async throws {
        try await Cluster.with { a in
            _ = try await a.client.createDatabase("local")
            let peer = try MisbehavingPeer(.garbage([0xFF, 0x00, 0x13, 0x37, 0xDE, 0xAD, 0xBE, 0xEF]))
            let handle = try await a.client.replicate(from: "local", to: "\(peer.endpoint)/remote", mode: .continuous)
            let retrying = try await handle.wait(timeout: .seconds(60)) { $0.state == .retrying }
            #expect(retrying.first?.lastError.contains("malformed") == true, "\(retrying)")
            try await handle.stop()
            await peer.stop()
            #expect(try await a.client.health(service: "replicator").service == "replicator")
            // The replicator still replicates.
            let db = try await a.client.database("local").put(id: "x", json: #"{"still":"working"}"#)
            _ = try await a.client.createDatabase("copy")
            let copy = try await a.client.replicate(from: "local", to: "copy")
            #expect(try await copy.wait(timeout: .seconds(60)).first?.state == .completed)
            #expect(try await a.client.database("copy").get(id: "x").rev == db.rev)
        }
    }

    /// A pull through a peer that hands out, for two documents, a history that does not descend
    /// and a body that is no JSON object: the target refuses those two, the status names one, and
    /// every other document arrives.
    @Test func impossibleRevisionsAreRejectedAndTheRestArrives() async throws {
        try await Cluster.with { a in
            let source = try await a.client.createDatabase("src")
            let target = try await a.client.createDatabase("dst")
            var revs: [String: String] = [:]
            for index in 0..<40 {
                let id = String(format: "doc%02d", index)
                let first = try await source.put(id: id, json: #"{"n":\#(index)}"#)
                revs[id] = try await source.put(id: id, json: #"{"n":\#(index),"edited":true}"#, rev: first.rev).rev
            }
            let peer = try MisbehavingPeer(.forward(gateway: a.supervisor.gatewayEndpoint) { request, response in
                guard case .getDocument(let id, _, true, _) = request.operation,
                      case .success(.document(var doc)) = response.outcome else { return response }
                switch id {
                case "doc07": doc.history = [doc.rev, "9-0123456789abcdef"]     // the parent is younger
                case "doc21": doc.body = Array("[1,2,3]".utf8)                 // not a JSON object
                default: return response
                }
                return .ok(response.id, .document(doc))
            })
            defer { Task { await peer.stop() } }
            let handle = try await a.client.replicate(from: "\(peer.endpoint)/src", to: "dst")
            let done = try await handle.wait(timeout: .seconds(120))
            await peer.stop()
            let status = try #require(done.first)
            #expect(status.state == .completed, "\(status)")
            #expect(status.docsWritten == 38, "\(status)")
            #expect(status.lastError.contains("doc07") || status.lastError.contains("doc21"), "\(status)")
            for (id, rev) in revs {
                if id == "doc07" || id == "doc21" {
                    await #expect(throws: SofaError.self, "\(id) should have been refused") { try await target.get(id: id) }
                } else {
                    #expect(try await target.get(id: id).rev == rev, "\(id)")
                }
            }
            #expect(try await a.client.health(service: "replicator").service == "replicator")
        }
    }
}
