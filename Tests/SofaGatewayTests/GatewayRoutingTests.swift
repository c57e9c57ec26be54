import SofaCore
import SofaGateway
import SofaWire
import Testing

/// Where the gateway sends each request (`GatewayService.destination(of:)`), from the routing
/// table alone, without a cluster.
@Suite struct GatewayRoutingTests {
    typealias Destination = GatewayService.Destination

    static func destination(_ operation: Op, database: String = "app") -> Destination {
        GatewayService.destination(of: Request(id: 1, database: database, operation: operation))
    }

    /// The operations the gateway passes on undecoded, by field number: document reads and
    /// writes, changes, all-docs and revs-diff to storage; blob transfers to sofa-blob; queries
    /// and view queries to the broker.
    @Test func passedThroughAreDocumentsChangesAllDocsRevsDiffBlobTransfersAndQueries() {
        #expect(GatewayService.passedThrough == [15, 16, 17, 23, 24, 31, 32, 60, 37, 38, 39, 40, 41, 42, 43, 80])
        let blob = OperationKind.allCases.filter { $0.route.passedThrough && $0.route.service == .blob }
        #expect(blob == [.blobWriteBegin, .blobWriteChunk, .blobWriteEnd, .blobWriteAbort, .blobRead, .blobStat])
    }

    /// Of the passed-through operations, a long poll and a bulk write over the item limit are
    /// decoded by the gateway instead (the bulk is then refused there, never reaching storage).
    @Test func longPollsAndOversizedBulksAreNotPassedOn() {
        func passesOn(_ operation: Op, maxBulkItems: Int = 2) -> Bool {
            let encoded = Request(id: 1, database: "app", operation: operation).encoded()
            let peeked = encoded.withUnsafeBytes { bytes in
                ForwardedRequest.peek(bytes, operations: GatewayService.passedThrough) { field, payload in
                    GatewayService.passesOn(field, payload, maxBulkItems: maxBulkItems)
                }
            }
            return peeked != nil
        }
        let item = BulkItem.put(id: "", rev: "", body: Array("{}".utf8), deleted: false)
        #expect(passesOn(.bulkWrite([item, item])))
        #expect(!passesOn(.bulkWrite([item, item, item])))
        #expect(passesOn(.changes(ChangesQuery())))
        #expect(!passesOn(.changes(ChangesQuery(waitMs: 100))))
        #expect(passesOn(.getDocument(id: "a", rev: ""), maxBulkItems: 0))
    }

    @Test func healthAndEchoGoToTheServiceTheyName() {
        #expect(Self.destination(.health(service: "")) == .gateway)
        #expect(Self.destination(.health(service: "gateway")) == .gateway)
        #expect(Self.destination(.health(service: "storage"), database: "") == .service(.storage, timeout: .seconds(30)))
        #expect(Self.destination(.echo(payload: [1], delayMs: 0, service: "query")) == .service(.query, timeout: .seconds(30)))
        #expect(Self.destination(.echo(payload: [], delayMs: 0, service: "replicator")) == .service(.replicator, timeout: .seconds(30)))
        guard case .refused(let error) = Self.destination(.health(service: "printer")) else {
            Issue.record("an unknown service was not refused")
            return
        }
        #expect(error == SofaError(.invalidParameter, "unknown service 'printer': use storage, query, blob, replicator or gateway"))
    }

    /// A request about one database that names none is refused at the gateway, whichever service
    /// would answer it; the cluster-wide ones go on.
    @Test(arguments: [Op.getDocument(id: "a", rev: ""), .query(QuerySpec(text: "SELECT 1", isN1QL: true)),
                      .rekeyDatabase(currentKey: nil, newKey: nil), .blobStat(key: "k"), .compact, .changes(ChangesQuery(waitMs: 100))])
    func aDatabaseOperationWithoutADatabaseIsRefused(_ operation: Op) {
        #expect(Self.destination(operation, database: "")
            == .refused(SofaError(.invalidParameter, "\(operation.name) needs a database name")))
    }

    /// Compaction's request to delete blobs is storage's to send to sofa-blob directly.
    @Test func aServiceToServiceRequestFromAClientIsRefused() {
        #expect(Self.destination(.deleteBlobs(keys: ["sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="]))
            == .refused(SofaError(.invalidParameter, "deleteBlobs is sent by one Sofa service to another, not by clients")))
        #expect(Self.destination(.dropBlobs)
            == .refused(SofaError(.invalidParameter, "dropBlobs is sent by one Sofa service to another, not by clients")))
    }

    @Test func clusterWideOperationsNeedNoDatabase() {
        #expect(Self.destination(.clusterStatus, database: "") == .gateway)
        #expect(Self.destination(.listDatabases, database: "") == .service(.storage, timeout: .seconds(30)))
        #expect(Self.destination(.startReplication(ReplicationSpec(source: "a", target: "b")), database: "")
            == .service(.replicator, timeout: .seconds(30)))
        #expect(Self.destination(.stopReplication(id: "r"), database: "") == .service(.replicator, timeout: .seconds(30)))
    }

    @Test func specialRoutes() throws {
        // A changes request that waits is the gateway's long poll, unless it reads backwards.
        #expect(Self.destination(.changes(ChangesQuery(waitMs: 1000))) == .longPoll)
        #expect(Self.destination(.changes(ChangesQuery(descending: true, waitMs: 1000))) == .service(.storage, timeout: .seconds(30)))
        #expect(Self.destination(.changes(ChangesQuery())) == .service(.storage, timeout: .seconds(30)))
        // A key makes creation the gateway's two-step work.
        let key = try EncryptionKey(bytes: [UInt8](repeating: 3, count: 32))
        #expect(Self.destination(.createDatabase(encryptionKey: key)) == .encryptedCreate)
        #expect(Self.destination(.createDatabase()) == .service(.storage, timeout: .seconds(30)))
        // Rekeying rewrites every blob: an hour. A status wait adds its wait to the usual margin.
        #expect(Self.destination(.rekeyDatabase(currentKey: nil, newKey: key)) == .service(.blob, timeout: .seconds(3600)))
        #expect(Self.destination(.listReplications(id: "r", afterVersion: 1, waitMs: 5000), database: "")
            == .service(.replicator, timeout: .seconds(35)))
        #expect(Self.destination(.listReplications(id: "r", afterVersion: 1, waitMs: 900_000), database: "")
            == .service(.replicator, timeout: .seconds(90)))
        #expect(Self.destination(.query(QuerySpec(text: "SELECT 1", isN1QL: true))) == .service(.query, timeout: .seconds(30)))
    }
}
