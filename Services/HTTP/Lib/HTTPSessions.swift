internal import Hummingbird
internal import HTTPTypes
internal import SofaClient
internal import SofaCore
internal import SofaFiles
internal import Logging
internal import Foundation
internal import Synchronization
internal import SofaServer

/// Who an HTTP client is, as CouchDB tells: basic auth on any request, or the `AuthSession`
/// cookie that `POST /_session` gives.
struct HTTPUser: Sendable, Equatable {
    var name: String
    /// "default" (basic auth) or "cookie".
    var method: String
    /// A fresh cookie to send back (a cookie past half its life is renewed, as CouchDB does).
    var renewedCookie: String?
}

/// Passwords are checked by the gateway (which delays repeated failures); a name and password
/// that passed are remembered (as a digest) until that user's document changes, so basic auth
/// costs no password hashing per request. The cookie is `name:time:mac` (base64url), the MAC an
/// HMAC-SHA-256 with this cluster's cookie secret over the name, the time and the salt of the
/// user's password: a new password ends the user's cookies. Changes to `_users` are followed to
/// forget what is remembered.
final class HTTPSessions: Sendable {
    static let cookieName = "AuthSession"
    static let cookieLifetime: Int = 600

    let gateway: GatewayPool
    private let secret: [UInt8]
    private let admins: [String: PasswordHash]
    private let logger: Logger
    private let state = Mutex<State>(State())
    /// Failed sign-ins by client address.
    private let failures = SignInFailures()

    struct State {
        /// Names and passwords the gateway accepted (as digests), until the user's document changes.
        var verified: [String: Set<[UInt8]>] = [:]
        /// Users' password salts (the cookies' MAC keys), until their documents change.
        var salts: [String: String] = [:]
        /// `Authorization` headers already checked, and whose they are: a request with one of them
        /// costs a lookup, not a decode and a digest.
        var headers: [String: String] = [:]

        mutating func forget(_ name: String) {
            verified[name] = nil
            salts[name] = nil
            headers = headers.filter { $0.value != name }
        }
    }

    init(gateway: GatewayPool, secret: [UInt8], admins: [String: PasswordHash], logger: Logger) {
        self.gateway = gateway
        self.secret = secret
        self.admins = admins
        self.logger = logger
    }

    /// The request's user: nil when it carries no credentials (or a cookie no longer valid);
    /// basic credentials that are wrong are `401`.
    func user(of call: CouchCall) async throws(CouchError) -> HTTPUser? {
        if let authorization = call.header(.authorization), let name = knownUser(authorization: authorization) {
            return HTTPUser(name: name, method: "default")
        }
        if let authorization = call.header(.authorization), authorization.lowercased().hasPrefix("basic "),
           !Self.isNobody(authorization) {
            guard let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
                  let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
                throw CouchError(.unauthorized, "unauthorized", "Name or password is incorrect.")
            }
            let name = String(text[..<colon]), password = String(text[text.index(after: colon)...])
            try await check(name: name, password: password, from: call.clientAddress)
            state.withLock { state in
                if state.headers.count > 10_000 { state.headers.removeAll() }
                state.headers[authorization] = name
            }
            return HTTPUser(name: name, method: "default")
        }
        if let cookie = Self.cookie(Self.cookieName, in: call.header(.cookie)), !cookie.isEmpty {
            return try await validate(cookie)
        }
        return nil
    }

    /// Basic credentials `_:_`: how a browser forgets its basic credentials, so none (CouchDB's
    /// rule; a session cookie still counts).
    static func isNobody(_ authorization: String) -> Bool {
        String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces) == "Xzpf"
    }

    /// Whose an `Authorization` header already checked is (nil: not one checked, or forgotten since).
    func knownUser(authorization: String) -> String? {
        state.withLock { $0.headers[authorization] }
    }

    /// Checks a name and password (the gateway's answer, or a match remembered from it). After
    /// three failures from one address, each further check from it waits first (250 ms doubling
    /// up to 8 s, forgotten 15 minutes after the last failure); the gateway delays by name too.
    func check(name: String, password: String, from address: String) async throws(CouchError) {
        let digest = (try? sha256(Array("\(name):\(password)".utf8))) ?? []
        if state.withLock({ $0.verified[name]?.contains(digest) == true }) { return }
        let keys = ["peer:" + address]
        let delay = failures.delayMs(keys)
        if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }  // the growing delay of failed sign-ins
        do {
            _ = try await gateway.cluster.verify(SofaClient.Credentials(name: name, password: password))
        } catch where error.is(.unauthorized) {
            failures.failed(keys)
            throw CouchError(.unauthorized, "unauthorized", "Name or password is incorrect.")
        } catch {
            throw CouchError(error)
        }
        failures.succeeded(keys)
        state.withLock { state in
            if state.verified.count > 10_000 { state.verified.removeAll() }
            state.verified[name, default: []].insert(digest)
        }
    }

    // MARK: Cookies

    /// A new `AuthSession` value for `name`.
    func makeCookie(for name: String) async -> String? {
        guard let salt = await salt(of: name) else { return nil }
        let time = String(Int(Date().timeIntervalSince1970), radix: 16, uppercase: true)
        guard let mac = try? hmacSHA256(key: secret, Array("\(name):\(time):\(salt)".utf8)) else { return nil }
        return Self.base64url(Array("\(name):\(time):\(mac.hexString)".utf8))
    }

    /// A session cookie lasts as long as the session (CouchDB's persistent cookie: `Max-Age` and
    /// `Expires`), so a client can tell when to sign in again; `maxAge` 0 clears it.
    func setCookieHeader(_ value: String, maxAge: Int? = nil) -> String {
        let age = maxAge ?? Self.cookieLifetime
        let expires = age > 0 ? "; Expires=" + IMFDate.text(time(nil) + time_t(age)) : ""
        return "\(Self.cookieName)=\(value); Version=1; Path=/; HttpOnly; Max-Age=\(age)" + expires
    }

    /// The cookie's user; nil for one expired or not signed by this server (it counts as none).
    /// One that is not `name:time:mac` at all is refused, as CouchDB refuses it.
    private func validate(_ cookie: String) async throws(CouchError) -> HTTPUser? {
        guard let bytes = Self.unbase64url(cookie), let text = String(bytes: bytes, encoding: .utf8),
              case let parts = text.split(separator: ":", omittingEmptySubsequences: false), parts.count >= 3 else {
            throw CouchError(.badRequest, "bad_request", "Malformed AuthSession cookie. Please clear your cookies.")
        }
        guard let time = Int(parts[parts.count - 2], radix: 16) else { return nil }
        let name = parts.dropLast(2).joined(separator: ":")
        let now = Int(Date().timeIntervalSince1970)
        guard now - time < Self.cookieLifetime, time <= now + 60, let salt = await salt(of: name),
              let expected = try? hmacSHA256(key: secret, Array("\(name):\(parts[parts.count - 2]):\(salt)".utf8)),
              Self.constantTimeEqual(Array(expected.hexString.utf8), Array(parts[parts.count - 1].utf8)) else { return nil }
        var user = HTTPUser(name: name, method: "cookie")
        if now - time > Self.cookieLifetime / 2 { user.renewedCookie = await makeCookie(for: name) }
        return user
    }

    /// The salt of the user's password (a server admin's from the admins file); nil: no such user.
    private func salt(of name: String) async -> String? {
        if let admin = admins[name] { return admin.salt }
        if let known = state.withLock({ $0.salts[name] }) { return known }
        let users = gateway.cluster.database("_users")
        guard let document = try? await users.get(id: "org.couchdb.user:\(name)"), !document.deleted,
              let salt = (try? document.json())?["salt"]?.stringValue else { return nil }
        state.withLock { state in
            if state.salts.count > 10_000 { state.salts.removeAll() }
            state.salts[name] = salt
        }
        return salt
    }

    /// Forgets every name, password and salt remembered (a user's document was written here).
    func forgetEveryone() {
        state.withLock { $0 = State() }
    }

    /// Forgets what is remembered of the users whose documents change, for as long as the process runs.
    func followUsers() async {
        let users = gateway.cluster.database("_users")
        var since = (try? await users.info().lastSequence) ?? 0
        while !Task.isCancelled {
            do {
                let batch = try await users.changes(ChangesQuery(since: since, limit: 1000, waitMs: 30_000))
                state.withLock { state in
                    for change in batch.changes { state.forget(String(change.id.dropFirst("org.couchdb.user:".count))) }
                }
                since = max(since, batch.lastSequence)
            } catch {
                // No `_users` yet (nothing to forget), or the gateway restarting: look again shortly.
                state.withLock { $0 = State() }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    // MARK: Helpers

    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            if pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
        }
        return nil
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func unbase64url(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
