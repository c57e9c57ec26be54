public import SofaCore
public import SofaFiles
public import SofaServer
internal import Foundation
internal import SofaBus
internal import SofaWire
internal import Synchronization

/// Who is who at the gateway: the server admins (from the secrets folder's `admins.json`), the
/// users of `_users` (cached by name, dropped from the cache when their document changes), and
/// the signed-in connections.
///
/// A sign-in is bound to the connection it came in on — its descriptor, its ZeroMQ identity and
/// the client's CURVE key, which only the holder of the matching secret key can present — and
/// lasts until that connection closes or signs in again. The password is checked once, at sign
/// in; each request then only finds its connection's user here, with the user's roles as they
/// are now (a removed role or user counts from the next request on; a changed password ends the
/// user's sign-ins).
public final class Identities: Sendable {
    /// A user as `_users` holds it (the document `org.couchdb.user:NAME`).
    public struct User: Sendable, Equatable {
        public var roles: [String]
        public var password: PasswordHash?

        public init(roles: [String], password: PasswordHash?) {
            self.roles = roles
            self.password = password
        }
    }

    struct Session: Equatable {
        var name: String
        /// The salt of the password signed in with ("" for a server admin): a new password ends it.
        var salt: String
    }

    struct SessionKey: Hashable {
        var identity: [UInt8]
        var key: String
    }

    struct State {
        /// Sign-ins by connection descriptor, then by identity and key.
        var sessions: [Int32: [SessionKey: Session]] = [:]
        /// Users read from `_users` (nil: known not to exist).
        var users: [String: User?] = [:]
    }

    private let admins: [String: PasswordHash]
    /// The cluster's public key: a peer presenting it is one of the cluster's services.
    private let clusterKey: String?
    /// Whether peers without a key are the cluster's own (the gateway serves an ipc:// socket in
    /// a folder only the service user can enter).
    private let trustsUnkeyedPeers: Bool
    private let state = Mutex(State())
    /// Failed sign-ins by user name and by peer address.
    private let failures = SignInFailures()
    /// Password checks run here, one at a time (each is ~10k rounds of HMAC): never on the
    /// cooperative pool, and a flood of sign-ins cannot take every core.
    private let hashing = DispatchQueue(label: "sofa-gateway-password-checks")
    /// Password checks queued or running: beyond `maxPendingChecks` a sign-in is refused `busy`
    /// at once (a flood of sign-ins cannot queue hours of hashing ahead of the others).
    private let pendingChecks = Atomic<Int>(0)
    static let maxPendingChecks = 64

    public init(admins: [String: PasswordHash], clusterKey: String?, trustsUnkeyedPeers: Bool) {
        self.admins = admins
        self.clusterKey = clusterKey
        self.trustsUnkeyedPeers = trustsUnkeyedPeers
    }

    /// The document ID of user `name` in `_users`.
    public static func documentID(_ name: String) -> String { userPrefix + name }
    public static let userPrefix = "org.couchdb.user:"
    public static let usersDatabase = "_users"

    public enum Lookup: Equatable {
        case anonymous
        case principal(Principal)
        /// Signed in as this user, whose record is not cached: load it (`principal(of:load:)`).
        case unknownUser(String)
    }

    /// The peer's principal from what is cached (on a socket thread: never waits). `acting` is
    /// the user a request names to run as (`Request.actingUser`): a peer holding the cluster's
    /// key (sofa-http, for its own clients) runs the request as that user, or as nobody for
    /// `Request.anonymousActor`; from any other peer the name is ignored.
    public func cachedPrincipal(of peer: BusServer.Peer, acting: String = "") -> Lookup {
        if isCluster(peer) { return acting.isEmpty ? .principal(.cluster) : actor(acting) }
        return state.withLock { state in
            guard let session = state.sessions[peer.connection]?[SessionKey(identity: peer.identity, key: peer.key)] else {
                return .anonymous
            }
            if session.salt.isEmpty { return admins[session.name] != nil ? .principal(Self.admin(session.name)) : .anonymous }
            guard let cached = state.users[session.name] else { return .unknownUser(session.name) }
            guard let user = cached, user.password?.salt == session.salt else { return .anonymous }
            return .principal(Principal(name: session.name, roles: user.roles))
        }
    }

    /// Whether the peer is one of the cluster's own services.
    func isCluster(_ peer: BusServer.Peer) -> Bool {
        if let clusterKey, !peer.key.isEmpty, peer.key == clusterKey { return true }
        return trustsUnkeyedPeers && peer.key.isEmpty
    }

    /// The user a service of the cluster acts as, with that user's roles as they are now (a user
    /// who no longer exists is nobody).
    private func actor(_ name: String) -> Lookup {
        if name == Request.anonymousActor { return .anonymous }
        if admins[name] != nil { return .principal(Self.admin(name)) }
        return state.withLock { state in
            guard let cached = state.users[name] else { return .unknownUser(name) }
            guard let user = cached else { return .anonymous }
            return .principal(Principal(name: name, roles: user.roles))
        }
    }

    /// The peer's principal (nil: nobody signed in on its connection), loading its user's
    /// record when it is not cached. A load that fails counts as signed out for this request.
    public func principal(of peer: BusServer.Peer, acting: String = "",
                          load: (String) async throws(SofaError) -> User?) async throws(SofaError) -> Principal? {
        switch cachedPrincipal(of: peer, acting: acting) {
        case .anonymous: return nil
        case .principal(let principal): return principal
        case .unknownUser(let name):
            let user = try await load(name)
            state.withLock { $0.users[name] = .some(user) }
            return cachedPrincipal(of: peer, acting: acting).principal
        }
    }

    /// Checks `name` and `password` and signs the peer's connection in as that user (or server
    /// admin). Every failure is the same `unauthorized` (an unknown name and a wrong password
    /// cannot be told apart), answered after a delay that grows with the failures of that name
    /// and of that peer.
    public func signIn(name: String, password: String, peer: BusServer.Peer,
                       load: (String) async throws(SofaError) -> User?) async throws(SofaError) -> Principal {
        // A service of the cluster checks passwords for many clients of its own (sofa-http): their
        // failures count against the names they tried, not against that service's address.
        let address = isCluster(peer) ? "" : peer.address
        let keys = Self.failureKeys(name: name, address: address)
        let delay = failures.delayMs(keys)
        if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }  // the growing delay of failed sign-ins
        let key = SessionKey(identity: peer.identity, key: peer.key)
        if let hash = admins[name] {
            if try await check(password, against: hash) {
                failures.succeeded(keys)
                state.withLock { $0.sessions[peer.connection, default: [:]][key] = Session(name: name, salt: "") }
                return Self.admin(name)
            }
        } else if !name.isEmpty, let user = try await load(name), let hash = user.password {
            state.withLock { $0.users[name] = .some(user) }
            if try await check(password, against: hash) {
                failures.succeeded(keys)
                state.withLock { $0.sessions[peer.connection, default: [:]][key] = Session(name: name, salt: hash.salt) }
                return Principal(name: name, roles: user.roles)
            }
        } else {
            _ = try await check(password, against: Self.decoy)  // as long as a real check: the name's existence does not show
        }
        failures.failed(keys)
        state.withLock { $0.sessions[peer.connection]?[key] = nil }
        throw Self.badCredentials
    }

    /// The one refusal of a sign-in, whatever was wrong.
    public static let badCredentials = SofaError.unauthorized("name or password is incorrect")

    /// The connections that closed: their sign-ins end.
    public func connectionsClosed(_ connections: Set<Int32>) {
        state.withLock { state in for connection in connections { state.sessions[connection] = nil } }
    }

    /// User `name`'s document changed (or may have): read it again when next needed.
    public func userChanged(_ name: String) {
        _ = state.withLock { $0.users.removeValue(forKey: name) }
    }

    /// The peer's own password changed (by this connection): its sign-in stays, with the new salt.
    public func renew(_ peer: BusServer.Peer, name: String, salt: String) {
        state.withLock { state in
            let key = SessionKey(identity: peer.identity, key: peer.key)
            guard state.sessions[peer.connection]?[key]?.name == name else { return }
            state.sessions[peer.connection]?[key]?.salt = salt
        }
    }

    /// Some user documents changed (a commit notice of `_users`): read each again when needed.
    public func usersChanged() {
        state.withLock { $0.users.removeAll() }
    }

    static func admin(_ name: String) -> Principal { Principal(name: name, roles: [Principal.adminRole]) }

    private static let decoy = (try? PasswordHash.make("decoy")) ?? PasswordHash(salt: "00", iterations: 1, derivedKey: "00")

    private func check(_ password: String, against hash: PasswordHash) async throws(SofaError) -> Bool {
        guard pendingChecks.add(1, ordering: .relaxed).newValue <= Self.maxPendingChecks else {
            pendingChecks.subtract(1, ordering: .relaxed)
            throw SofaError(.busy, "too many sign-ins are being checked at once: try again shortly")
        }
        let matched = await withCheckedContinuation { continuation in
            hashing.async { continuation.resume(returning: hash.matches(password)) }
        }
        pendingChecks.subtract(1, ordering: .relaxed)
        return matched
    }

    /// Failures older than this are forgotten.
    /// What a sign-in's failures count against: its name and, unless it came from one of the
    /// cluster's own services (""), its peer's address.
    static func failureKeys(name: String, address: String) -> [String] {
        ["user:" + name] + (address.isEmpty ? [] : ["peer:" + address])
    }

}

extension Identities.Lookup {
    var principal: Principal? {
        if case .principal(let principal) = self { return principal }
        return nil
    }
}
