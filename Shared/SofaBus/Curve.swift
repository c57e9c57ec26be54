internal import CZeroMQ
public import SofaCore
internal import Synchronization

/// A CURVE key pair (Curve25519), both halves as Z85 text of 40 characters — the form ZeroMQ's
/// tools print and its options take.
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    public init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random pair.
    public static func generate() throws(SofaError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw zmqError("zmq_curve_keypair") }
        return CurveKeyPair(publicKey: Curve.text(publicKey), secretKey: Curve.text(secretKey))
    }

    /// The pair of a secret key; nil when `secretKey` is not a Z85 key.
    public init?(secretKey: String) {
        guard let publicKey = Curve.publicKey(of: secretKey) else { return nil }
        self.init(publicKey: publicKey, secretKey: secretKey)
    }
}

/// How a process's TCP sockets are secured: ZeroMQ's CURVE (encryption, and the server's
/// proof that it holds the key a client pinned), with a ZAP handler deciding which clients a
/// server accepts. `ipc://` sockets are not encrypted: they live in a folder only the service
/// user can enter, and whoever can connect there can read the data files anyway.
public enum Curve {
    /// Whether this libzmq can speak CURVE (it is built with libsodium): a service refuses to
    /// start without it rather than serve in clear.
    public static var isAvailable: Bool { zmq_has("curve") != 0 }

    /// Whether an endpoint is one CURVE secures (TCP; not ipc:// or inproc://).
    public static func applies(to endpoint: String) -> Bool { endpoint.hasPrefix("tcp://") }

    /// The ZAP domain of the sockets only the cluster's own processes may reach (storage, blob,
    /// the replicator, the broker, commit notices): a peer must present the cluster's key.
    public static let internalDomain = "sofa-internal"
    /// The ZAP domain of the gateway's client socket: any key may connect; the client then
    /// proves who it is (a user's password, or the cluster's key).
    public static let clientDomain = "sofa-clients"

    /// What this process's servers and internal clients use (set once at start by a service:
    /// see `ServiceRuntime`); nil: CURVE is off (a benchmark's comparison only).
    public static var cluster: CurveKeyPair? {
        get { state.withLock { $0.cluster } }
    }

    /// Whether this process answers ZAP requests (a server refuses to bind CURVE without it:
    /// libzmq would let every client in).
    public static var zapRunning: Bool {
        get { state.withLock { $0.zapRunning } }
    }

    public static func configure(cluster: CurveKeyPair?) {
        state.withLock { $0.cluster = cluster }
    }

    public static func markZAPRunning(_ running: Bool) {
        state.withLock { $0.zapRunning = running }
    }

    private static let state = Mutex<(cluster: CurveKeyPair?, zapRunning: Bool)>((nil, false))

    /// The client side of this process's connections to other services: as the cluster.
    public static var internalClient: ClientKeys? {
        cluster.map { ClientKeys(serverKey: $0.publicKey, keys: $0) }
    }

    /// The public key of a secret one; nil when it is not Z85 text of 40 characters.
    public static func publicKey(of secretKey: String) -> String? {
        guard isKey(secretKey) else { return nil }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { return nil }
        return text(publicKey)
    }

    /// Whether `text` has the shape of a Z85 key (40 characters of ZeroMQ's Z85 alphabet).
    public static func isKey(_ text: String) -> Bool {
        let alphabet = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
        return text.utf8.count == 40 && text.utf8.allSatisfy(alphabet.contains)
    }

    /// The Z85 text of a raw 32-byte key.
    public static func z85(_ key: [UInt8]) -> String {
        guard key.count == 32 else { return "" }
        var out = [CChar](repeating: 0, count: 41)
        _ = key.withUnsafeBufferPointer { zmq_z85_encode(&out, $0.baseAddress, 32) }
        return text(out)
    }

    static func text(_ chars: [CChar]) -> String {
        String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A key that is not Z85 text of 40 characters.
    public static func badKey(_ what: String) -> SofaError {
        SofaError(.invalidParameter, "\(what) is not a CURVE key (40 characters of Z85 text, as `sofa status` prints it)")
    }
}

/// A client's CURVE settings: the server's public key it pins, and its own pair (a fresh one per
/// connection for a user; the cluster's own for a service).
public struct ClientKeys: Sendable, Equatable {
    public var serverKey: String
    public var keys: CurveKeyPair

    public init(serverKey: String, keys: CurveKeyPair) {
        self.serverKey = serverKey
        self.keys = keys
    }

    /// Pins `serverKey` with a fresh pair of the client's own.
    public static func pinning(_ serverKey: String) throws(SofaError) -> ClientKeys {
        guard Curve.isKey(serverKey) else { throw Curve.badKey("the server key '\(serverKey)'") }
        return ClientKeys(serverKey: serverKey, keys: try .generate())
    }
}

extension ZMQSocket {
    /// Makes this socket a CURVE server as `keys`, its clients checked by the ZAP handler under
    /// `domain` (before `bind`). Refuses when no ZAP handler runs in this process.
    public func serveCurve(_ keys: CurveKeyPair, domain: String) throws(SofaError) {
        guard Curve.zapRunning else {
            throw SofaError(.unexpectedError, "no ZAP handler runs in this process: a CURVE server would admit any client")
        }
        try set(ZMQ_CURVE_SERVER, 1)
        try set(ZMQ_CURVE_SECRETKEY, bytes: Array(keys.secretKey.utf8))
        try set(ZMQ_ZAP_DOMAIN, bytes: Array(domain.utf8))
        readsPeerKey = true
    }

    /// Makes this socket a CURVE client of a server holding `client.serverKey` (before `connect`).
    public func useCurve(_ client: ClientKeys) throws(SofaError) {
        try set(ZMQ_CURVE_SERVERKEY, bytes: Array(client.serverKey.utf8))
        try set(ZMQ_CURVE_PUBLICKEY, bytes: Array(client.keys.publicKey.utf8))
        try set(ZMQ_CURVE_SECRETKEY, bytes: Array(client.keys.secretKey.utf8))
    }

    /// Binds `endpoint`, as a CURVE server when it is TCP and this process has the cluster's keys.
    public func bindSecured(_ endpoint: String, domain: String = Curve.internalDomain) throws(SofaError) {
        if Curve.applies(to: endpoint), let keys = Curve.cluster { try serveCurve(keys, domain: domain) }
        try bind(endpoint)
    }

    /// Connects to `endpoint`, as a CURVE client when it is TCP and `keys` are given.
    public func connectSecured(_ endpoint: String, _ keys: ClientKeys?) throws(SofaError) {
        if Curve.applies(to: endpoint), let keys { try useCurve(keys) }
        try connect(endpoint)
    }
}
