import SofaCore
import SofaFiles
import SofaGateway
import SofaWire
import Testing

/// CouchDB 3's rules as the gateway applies them, without a cluster.
@Suite struct AccessRulesTests {
    static let security = SecurityObject(admins: .init(names: ["dan"], roles: ["owners"]),
                                         members: .init(names: ["ann"], roles: ["staff"]))
    static let admin = Principal(name: "root", roles: ["_admin"])
    static let dan = Principal(name: "dan", roles: [])
    static let owner = Principal(name: "olga", roles: ["owners"])
    static let ann = Principal(name: "ann", roles: [])
    static let staff = Principal(name: "sam", roles: ["staff"])
    static let bob = Principal(name: "bob", roles: ["other"])

    func outcome(_ kind: OperationKind, _ principal: Principal?, design: Bool = false,
                 security: SecurityObject = security) -> SofaError.Code? {
        AccessRules.check(kind, database: "app", designWrite: design, principal: principal, security: security)?.sofaCode
    }

    @Test func standingInADatabase() {
        #expect(Self.security.access(of: Self.admin) == .admin)
        #expect(Self.security.access(of: Self.dan) == .admin)
        #expect(Self.security.access(of: Self.owner) == .admin)
        #expect(Self.security.access(of: Self.ann) == .member)
        #expect(Self.security.access(of: Self.staff) == .member)
        #expect(Self.security.access(of: Self.bob) == SecurityObject.Access.none)
        #expect(Self.security.access(of: nil) == SecurityObject.Access.none)
        // Admin-only until given members; open to everyone once members are empty.
        #expect(SecurityObject.adminOnly.access(of: Self.ann) == SecurityObject.Access.none)
        #expect(SecurityObject().access(of: nil) == .member)
    }

    @Test func documentsQueriesAndBlobsAreForMembers() {
        for kind in [OperationKind.getDocument, .putDocument, .bulkWrite, .query, .changes, .allDocs, .blobRead, .blobWriteBegin] {
            #expect(outcome(kind, Self.staff) == nil, "\(kind)")
            #expect(outcome(kind, Self.bob) == .forbidden, "\(kind)")
            #expect(outcome(kind, nil) == .unauthorized, "\(kind)")
        }
    }

    @Test func designDocumentsSecurityAndIndexesAreForDatabaseAdmins() {
        #expect(outcome(.putDocument, Self.ann, design: true) == .forbidden)
        #expect(outcome(.putDocument, Self.dan, design: true) == nil)
        #expect(outcome(.putDocument, Self.owner, design: true) == nil)
        for kind in [OperationKind.setSecurity, .createIndex, .deleteIndex, .compact, .purge] {
            #expect(outcome(kind, Self.ann) == .forbidden, "\(kind)")
            #expect(outcome(kind, Self.dan) == nil, "\(kind)")
        }
        #expect(outcome(.getSecurity, Self.ann) == nil)
    }

    @Test func serverTasksAreForServerAdmins() {
        for kind in [OperationKind.createDatabase, .deleteDatabase, .listDatabases, .rawGet, .rawPut] {
            #expect(outcome(kind, Self.dan) == .forbidden, "\(kind)")
            #expect(outcome(kind, Self.admin) == nil, "\(kind)")
            #expect(outcome(kind, nil) == .unauthorized, "\(kind)")
        }
        for kind in [OperationKind.health, .authenticate, .session] { #expect(outcome(kind, nil) == nil, "\(kind)") }
        // Replications: any signed-in user, whose databases the gateway then checks one by one.
        #expect(outcome(.startReplication, Self.bob) == nil)
        #expect(outcome(.startReplication, nil) == .unauthorized)
    }

    @Test func whichWritesTouchDesignDocuments() {
        #expect(AccessRules.writesDesignDocument(.putDocument(id: "_design/v", rev: "", body: [], deleted: false)))
        #expect(!AccessRules.writesDesignDocument(.putDocument(id: "design/v", rev: "", body: [], deleted: false)))
        #expect(AccessRules.writesDesignDocument(.bulkWrite([.put(id: "a", rev: "", body: [], deleted: false),
                                                             .put(id: "_design/x", rev: "", body: [], deleted: true)])))
        #expect(AccessRules.writesDesignDocument(.deleteDocument(id: "_design/v", rev: "1-a")))
    }

    @Test func userDocumentsAreCheckedAndHashed() throws {
        let body = Array(#"{"name":"ann","type":"user","roles":["staff"],"password":"pw"}"#.utf8)
        let stored = try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: body, deleted: false, principal: Self.admin, stored: nil)
        let fields = try #require(JSON.tryParse(stored)?.objectValue)
        #expect(fields["password"] == nil && fields["password_scheme"] == "pbkdf2" && fields["pbkdf2_prf"] == "sha256")
        let user = try #require(UsersDatabase.user(from: stored))
        #expect(user.roles == ["staff"] && user.password?.matches("pw") == true && user.password?.matches("pW") == false)
        #expect(UsersDatabase.withoutCredentials(stored) == Array(#"{"name":"ann","type":"user","roles":["staff"]}"#.utf8))
        // A user changes their password, not their roles; creates no one.
        let ann = Principal(name: "ann", roles: ["staff"])
        let newPassword = Array(#"{"name":"ann","type":"user","roles":["staff"],"password":"pw2"}"#.utf8)
        _ = try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: newPassword, deleted: false, principal: ann, stored: stored)
        let promoted = Array(#"{"name":"ann","type":"user","roles":["staff","boss"]}"#.utf8)
        #expect(throws: SofaError.self) {
            try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: promoted, deleted: false, principal: ann, stored: stored)
        }
        #expect(throws: SofaError.self) {
            try UsersDatabase.prepare(id: "org.couchdb.user:bo", body: Array(#"{"name":"bo","type":"user","roles":[],"password":"x"}"#.utf8),
                                      deleted: false, principal: ann, stored: nil)
        }
        // CouchDB's rules, each with its words (a server admin writing).
        let refused: [(String, String)] = [
            (#"{"name":"eve","type":"user","roles":[],"password":"x"}"#, "Doc ID must be of the form org.couchdb.user:name"),
            (#"{"name":"ann","roles":[],"password":"x"}"#, "doc.type must be user"),
            (#"{"name":"ann","type":"user","password":"x"}"#, "doc.roles must exist"),
            (#"{"name":"ann","type":"user","roles":["_admin"],"password":"x"}"#, "No system roles (starting with underscore) in users db."),
        ]
        for (body, reason) in refused {
            do throws(SofaError) {
                _ = try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: Array(body.utf8), deleted: false,
                                              principal: Self.admin, stored: nil)
                Issue.record("\(body) was taken")
            } catch {
                #expect(error.sofaCode == .forbidden && error.message == reason, "\(error)")
            }
        }
        // An update without roles keeps the stored ones (documents written before roles were required).
        let old = Array(#"{"name":"ann","type":"user"}"#.utf8)
        let kept = try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: Array(#"{"name":"ann","type":"user","password":"pw3"}"#.utf8),
                                             deleted: false, principal: ann, stored: old)
        #expect(JSON.tryParse(kept)?["roles"] == .array([]))
        #expect(throws: SofaError.self) {  // a stored document with roles: an update must give them
            try UsersDatabase.prepare(id: "org.couchdb.user:ann", body: Array(#"{"name":"ann","type":"user","password":"pw3"}"#.utf8),
                                      deleted: false, principal: ann, stored: stored)
        }
    }

    @Test func securityObjectsAreCheckedWhole() throws {
        #expect(throws: SofaError.self) { try SecurityObject(json: .object(JSONObject([("members", .int(5))]))) }
        #expect(throws: SofaError.self) {
            try SecurityObject(json: .object(JSONObject([("admins", .object(JSONObject([("names", .array([.int(1)]))])))])))
        }
        #expect(try SecurityObject(json: Self.security.json) == Self.security)
    }
}
