internal import CZeroMQ
internal import Foundation
internal import SofaCore
internal import Synchronization

/// The floor under the lookups' figure: messages through a bare ZeroMQ chain of the cluster's
/// shape, with nothing done at any hop but passing them on. A client's DEALER sends to a broker's
/// ROUTER on loopback TCP (as an application reaches the gateway); the broker passes each message
/// to a worker's DEALER through a second ROUTER on an ipc:// path (as `sofa up` joins the gateway
/// and its query workers); the worker sends it straight back, and the broker back to the client.
/// Three threads of this process play the three parts, each with its own ZeroMQ context (so its
/// own I/O thread, as a process has): hand-offs between threads cost less than between
/// processes, so if anything the floor comes out too high.
enum BareChain {
    /// Messages of `size` bytes per second through the chain, `count` of them, `inFlight` outstanding.
    static func messagesPerSecond(inFlight: Int, count: Int, size: Int, scratch: URL) throws -> Double {
        let backend = "ipc://" + scratch.appendingPathComponent("bare-chain-\(getpid())").path
        let frontend = Frontend()
        let broker = Thread {
            runBroker(backend: backend) { endpoint in
                frontend.endpoint.withLock { $0 = endpoint }
                frontend.bound.signal()
            }
        }
        broker.start()
        frontend.bound.wait()
        guard let endpoint = frontend.endpoint.withLock({ $0 }) else { throw SofaError(.unexpectedError, "the bare chain's broker could not bind") }
        let worker = Thread { runWorker(backend: backend) }
        worker.start()
        return try runClient(endpoint, inFlight: max(1, inFlight), count: count, size: size)
    }

    /// Where the broker's frontend listens, once it does.
    private final class Frontend: Sendable {
        let endpoint = Mutex<String?>(nil)
        let bound = DispatchSemaphore(value: 0)
    }

    /// Passes every message on until the client's empty one has gone to the worker and come back.
    /// `bound` gets the frontend's TCP endpoint (nil: no chain).
    private static func runBroker(backend: String, bound: (String?) -> Void) {
        let context = zmq_ctx_new()
        defer { zmq_ctx_term(context) }
        let front = zmq_socket(context, ZMQ_ROUTER), back = zmq_socket(context, ZMQ_ROUTER)
        var linger: Int32 = 1000  // the last message (the stop) still goes out
        zmq_setsockopt(front, ZMQ_LINGER, &linger, 4)
        zmq_setsockopt(back, ZMQ_LINGER, &linger, 4)
        defer { zmq_close(front); zmq_close(back) }
        guard zmq_bind(back, backend) == 0, zmq_bind(front, "tcp://127.0.0.1:*") == 0 else { return bound(nil) }
        bound(lastEndpoint(of: front))
        var worker = [UInt8](repeating: 0, count: 256), client = [UInt8](repeating: 0, count: 256)
        var payload = [UInt8](repeating: 0, count: 1 << 16)
        // The worker's first message says where it is; until then the client's messages wait.
        let workerSize = zmq_recv(back, &worker, worker.count, 0)
        guard workerSize > 0 else { return }
        _ = zmq_recv(back, &payload, payload.count, 0)
        var items = [zmq_pollitem_t(socket: front, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                     zmq_pollitem_t(socket: back, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
        while zmq_poll(&items, 2, -1) >= 0 {
            if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                // client → worker: [client][payload] becomes [worker][client][payload]
                while true {
                    let clientSize = zmq_recv(front, &client, client.count, ZMQ_DONTWAIT)
                    if clientSize < 0 { break }
                    let size = zmq_recv(front, &payload, payload.count, 0)
                    zmq_send(back, worker, Int(workerSize), ZMQ_SNDMORE)
                    zmq_send(back, client, Int(clientSize), ZMQ_SNDMORE)
                    zmq_send(back, payload, Int(max(0, size)), 0)
                }
            }
            if items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                // worker → client: [worker][client][payload] becomes [client][payload]
                while zmq_recv(back, &worker, worker.count, ZMQ_DONTWAIT) >= 0 {
                    let clientSize = zmq_recv(back, &client, client.count, 0)
                    let size = zmq_recv(back, &payload, payload.count, 0)
                    zmq_send(front, client, Int(clientSize), ZMQ_SNDMORE)
                    zmq_send(front, payload, Int(max(0, size)), 0)
                    if size == 0 { return }
                }
            }
        }
    }

    /// Sends every message back as it came, until an empty one.
    private static func runWorker(backend: String) {
        let context = zmq_ctx_new()
        defer { zmq_ctx_term(context) }
        let socket = zmq_socket(context, ZMQ_DEALER)
        var linger: Int32 = 1000  // the last message (the stop) still goes out
        zmq_setsockopt(socket, ZMQ_LINGER, &linger, 4)
        defer { zmq_close(socket) }
        zmq_connect(socket, backend)
        var client = [UInt8](repeating: 0, count: 256), payload = [UInt8](repeating: 0, count: 1 << 16)
        zmq_send(socket, [UInt8(0x52)], 1, 0)  // READY
        while true {
            let clientSize = zmq_recv(socket, &client, client.count, 0)
            if clientSize < 0 { return }
            let size = zmq_recv(socket, &payload, payload.count, 0)
            zmq_send(socket, client, Int(clientSize), ZMQ_SNDMORE)
            zmq_send(socket, payload, Int(max(0, size)), 0)
            if size <= 0 { return }
        }
    }

    private static func runClient(_ endpoint: String, inFlight: Int, count: Int, size: Int) throws -> Double {
        let context = zmq_ctx_new()
        defer { zmq_ctx_term(context) }
        let socket = zmq_socket(context, ZMQ_DEALER)
        var linger: Int32 = 0
        zmq_setsockopt(socket, ZMQ_LINGER, &linger, 4)
        defer { zmq_close(socket) }
        guard zmq_connect(socket, endpoint) == 0 else { throw SofaError(.zmq, zmq_errno(), "connect to the bare chain failed") }
        let message = [UInt8](repeating: 0x61, count: max(1, size))
        var reply = [UInt8](repeating: 0, count: 1 << 16)
        let started = DispatchTime.now().uptimeNanoseconds
        var sent = 0, received = 0
        while sent < min(inFlight, count) {
            zmq_send(socket, message, message.count, 0)
            sent += 1
        }
        while received < count {
            let size = zmq_recv(socket, &reply, reply.count, 0)
            guard size == message.count else { throw SofaError(.zmq, zmq_errno(), "the bare chain answered \(size) bytes") }
            received += 1
            if sent < count {
                zmq_send(socket, message, message.count, 0)
                sent += 1
            }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        zmq_send(socket, message, 0, 0)  // stop: worker and broker end once it has come back
        var timeout: Int32 = 5000
        zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout, 4)
        _ = zmq_recv(socket, &reply, reply.count, 0)
        return Double(count) / elapsed
    }
}
