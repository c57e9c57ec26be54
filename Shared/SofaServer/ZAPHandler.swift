public import SofaBus
public import SofaCore
public import Logging
internal import CZeroMQ

/// This process's ZAP handler (ZeroMQ's authentication protocol, RFC 27): libzmq asks it, for
/// every connection to a CURVE server socket of the process, whether to admit the client, by the
/// socket's domain and the client's public key.
///
/// * `Curve.internalDomain` (storage, blob, the replicator, the broker, commit notices): only a
///   client holding the cluster's key; any other is refused and the refusal is audited.
/// * `Curve.clientDomain` (the gateway's client socket): every key; the client then signs in
///   (a user's password), or holds the cluster's key (another Sofa service).
///
/// The client's key (Z85) becomes the connection's user id, which each message it sends carries
/// (`ZMQSocket.lastPeerKey`).
public final class ZAPHandler: Sendable {
    private let loop: SocketLoop<Never>

    private init(loop: SocketLoop<Never>) { self.loop = loop }

    /// ZeroMQ's fixed address of the ZAP handler in a context.
    static let endpoint = "inproc://zeromq.zap.01"

    /// Binds the handler (once per process, before any CURVE server socket).
    public static func start(cluster: CurveKeyPair, logger: Logger) async throws(SofaError) -> ZAPHandler {
        let handler = try await SocketLoop<Never>.start(name: "zap") { loop throws(SofaError) in
            let socket = try ZMQSocket(type: ZMQ_REP)
            try socket.bind(endpoint)
            return (ZAPHandler(loop: loop), ZAPDriver(socket: socket, clusterKey: cluster.publicKey, logger: logger))
        }
        Curve.markZAPRunning(true)
        return handler
    }

    /// The thread of the handler's socket, for a lifecycle service to follow.
    public var socketLoop: any SocketLoopControl { loop }

    /// The decision for one request: status code, text and user id.
    static func decide(domain: String, mechanism: String, key: [UInt8], clusterKey: String) -> (String, String, String) {
        guard mechanism == "CURVE", key.count == 32 else { return ("400", "CURVE only", "") }
        let z85 = Curve.z85(key)
        switch domain {
        case Curve.internalDomain:
            return z85 == clusterKey ? ("200", "OK", z85) : ("400", "not a member of this cluster", "")
        case Curve.clientDomain:
            // At the limit, only the cluster's own services (its key) still get in.
            if z85 != clusterKey, ClientConnections.isFull {
                return ("400", "too many connections (SOFA_MAX_CONNECTIONS: \(ClientConnections.count) are open)", "")
            }
            return ("200", "OK", z85)
        default:
            return ("400", "unknown domain", "")
        }
    }
}

private final class ZAPDriver: SocketLoopDriver {
    let socket: ZMQSocket
    let sockets: [ZMQSocket]
    let clusterKey: String
    let logger: Logger
    var pollTimeoutMs: Int { 1000 }

    init(socket: ZMQSocket, clusterKey: String, logger: Logger) {
        self.socket = socket
        self.sockets = [socket]
        self.clusterKey = clusterKey
        self.logger = logger
    }

    func turn(posted: [Never], readable: [Bool]) {
        guard readable[0] else { return }
        while case .message(let frames)? = try? socket.receive(limit: 4096) {
            // version, request id, domain, address, routing id, mechanism, credentials…
            guard frames.count >= 6 else {
                _ = try? socket.send([Array("1.0".utf8), frames.count > 1 ? frames[1] : [], Array("500".utf8),
                                      Array("malformed ZAP request".utf8), [], []])
                continue
            }
            let domain = String(decoding: frames[2], as: UTF8.self)
            let address = String(decoding: frames[3], as: UTF8.self)
            let mechanism = String(decoding: frames[5], as: UTF8.self)
            let key = frames.count > 6 ? frames[6] : []
            let (status, text, user) = ZAPHandler.decide(domain: domain, mechanism: mechanism, key: key, clusterKey: clusterKey)
            if status != "200" {
                logger.warning("audit: connection refused", metadata: [
                    "peer": "\(address)", "domain": "\(domain)", "mechanism": "\(mechanism)", "reason": "\(text)",
                    "key": "\(Curve.z85(key))",
                ])
            }
            _ = try? socket.send([frames[0], frames[1], Array(status.utf8), Array(text.utf8), Array(user.utf8), []])
        }
    }

    func finish(posted: [Never]) {
        Curve.markZAPRunning(false)
    }
}
