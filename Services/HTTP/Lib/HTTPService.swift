public import SofaServer
public import Logging
internal import SofaClient
internal import SofaBus
internal import SofaCore
internal import SofaFiles
internal import Hummingbird
internal import HummingbirdTLS
internal import HummingbirdCore
internal import NIOSSL
internal import NIOPosix
internal import NIOCore
internal import ServiceLifecycle
internal import Foundation
internal import SofaWire
internal import Synchronization

/// `sofa-http`: CouchDB's HTTP API, served beside the gateway as a client of it.
///
/// Its own process rather than a part of the gateway: the gateway's socket thread stays free of
/// HTTP parsing and of JSON work per request, an HTTP client that misbehaves (slow bodies, a
/// continuous feed nobody reads) costs this process's memory and not the gateway's, and it scales
/// or restarts on its own. It holds the cluster's key, checks who each HTTP client is (basic
/// auth, or a signed `AuthSession` cookie) and sends each request on to the gateway as that user
/// (`Request.actingUser`), so the gateway applies the same permissions as to any other client.
/// Plain document gets it reads itself from the database files when it can reach them and tell
/// who may read without asking the gateway (`HTTPReads`).
public enum HTTPService {
    /// The connections to the gateway requests are spread over (each is one client there, with its
    /// own share of requests in flight).
    static let gatewayConnections = 1
    /// The `Server` header of every answer.
    static let serverName = "Sofa/\(ServiceRuntime.version)"

    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        let (host, port) = try address(settings.string(.httpAddress, default: "127.0.0.1:5984"))
        let gateway = try await connectToGateway(settings.gatewayURL, logger: logger)
        let cookieSecret = try settings.keysFolder.readOrCreate("http-cookie.key") { try randomBytes(32) }
        let admins = try AdminsFile.read(in: settings.keysFolder)?.admins ?? [:]
        let sessions = HTTPSessions(gateway: gateway, secret: cookieSecret, admins: admins, logger: logger)
        let cert = settings.string(.httpTLSCert, default: ""), key = settings.string(.httpTLSKey, default: "")
        let api = CouchAPI(gateway: gateway, sessions: sessions, logger: logger,
                           limits: .init(maxRequestBytes: settings.maxRequestBytes, maxDocumentBytes: settings.maxDocumentBytes),
                           cors: CORSRules(settings.string(.corsOrigins, default: "")),
                           uuid: try serverUUID(),
                           reads: settings.value(Setting.dataDir.rawValue).map {
                               HTTPReads(dataDirectory: URL(fileURLWithPath: $0), admins: Set(admins.keys))
                           }, scheme: cert.isEmpty && key.isEmpty ? "http" : "https", listenPort: String(port))
        let server: HTTPServerBuilder
        if !cert.isEmpty || !key.isEmpty {
            guard !cert.isEmpty, !key.isEmpty else {
                throw SofaError(.invalidParameter, "HTTPS needs both SOFA_HTTP_TLS_CERT and SOFA_HTTP_TLS_KEY")
            }
            let chain = try NIOSSLCertificate.fromPEMFile(cert).map { NIOSSLCertificateSource.certificate($0) }
            let tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain,
                                                               privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            server = try .tls(SofaHTTPChannel.builder(configuration: .init(idleTimeout: .seconds(300)), api: api), tlsConfiguration: tls)
        } else {
            server = SofaHTTPChannel.builder(configuration: .init(idleTimeout: .seconds(300)), api: api)
        }
        let app = Application(
            responder: CallbackResponder { (request: Request, context: CouchContext) in await api.respond(request, context) },
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: serverName,
                                                    availableConnectionsDelegate: MaximumAvailableConnections(
                                                        settings.int(.maxConnections, default: ClientConnections.defaultLimit))),
            onServerRunning: { channel in
                logger.info("http serving", metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? "")",
                                                       "tls": "\(!cert.isEmpty)"])
            },
            logger: logger)
        return [BackgroundService { await sessions.followUsers() }, BackgroundService { await HeapTrimmer.shared.run() },
                HTTPPart(app: app, gateway: gateway)]
    }

    /// Makes NIO's event loops Swift Concurrency's global executor, before any task runs: a
    /// request's handler then runs on the thread that read it, not on another pool (measured: the
    /// hand-offs between the pools were most of sofa-http's time per request on 2 cores).
    public static func runTasksOnEventLoops() {
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }

    /// `HOST:PORT` (an IPv6 host in brackets).
    static func address(_ text: String) throws(SofaError) -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw SofaError(.invalidParameter, "SOFA_HTTP_ADDRESS must be HOST:PORT, not '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// The gateway, as the cluster (its key): a few connections, each waited for up to a minute
    /// (the gateway may start after this process).
    static func connectToGateway(_ endpoint: String, logger: Logger) async throws(SofaError) -> GatewayPool {
        let cluster = Curve.cluster
        var clients: [SofaClient] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while clients.count < gatewayConnections {
            do {
                clients.append(try await SofaClient.connect(endpoint, serverKey: cluster?.publicKey, clientSecretKey: cluster?.secretKey,
                                                            timeout: .seconds(60), connectTimeout: .seconds(5)))
            } catch where error.is(.unavailable) && ContinuousClock.now < deadline {
                logger.info("waiting for the gateway", metadata: ["gateway": "\(endpoint)"])
            }
        }
        return GatewayPool(clients)
    }

    /// The server's `uuid` (CouchDB's welcome): stable for a cluster, from its public key.
    static func serverUUID() throws -> String {
        guard let key = Curve.cluster?.publicKey else { return "00000000000000000000000000000000" }
        return String(try sha256(Array(key.utf8)).hexString.prefix(32))
    }
}

/// The gateway connections, taken in turn.
final class GatewayPool: Sendable {
    let clients: [SofaClient]
    private let next = Atomic<UInt64>(0)

    init(_ clients: [SofaClient]) { self.clients = clients }

    /// A connection as the cluster itself (a server admin): for the process's own reads.
    var cluster: SofaClient { clients[Int(next.add(1, ordering: .relaxed).oldValue % UInt64(clients.count))] }

    /// A connection whose requests run as `user` (nil: nobody).
    func acting(as user: String?) -> SofaClient { cluster.acting(as: user ?? SofaWire.Request.anonymousActor) }

    func close() { for client in clients { client.close() } }
}

/// A request's context: Hummingbird's, and the client's address (failed sign-ins are delayed per
/// address, as the gateway delays its own clients').
struct CouchContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let clientAddress: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress ?? ""
    }
}

/// The HTTP server as a part of the process; it closes the gateway connections when it stops.
struct HTTPPart: ProcessPart {
    let app: Application<CallbackResponder<CouchContext>>
    let gateway: GatewayPool

    func run() async throws {
        defer { gateway.close() }
        try await app.run()
    }
}
