internal import SofaClient
internal import SofaCluster
internal import Synchronization

/// The two databases a `sofa replicate` names, read as replication endpoints, and which of them
/// receive documents: TARGET for a push, SOURCE for a pull, both for `--both`.
struct ReplicationSides {
    let source: ReplicationEndpoint
    let target: ReplicationEndpoint
    let direction: Replicate.Direction

    init(source: String, target: String, direction: Replicate.Direction) throws(SofaError) {
        self.source = try ReplicationEndpoint.parse(source)
        self.target = try ReplicationEndpoint.parse(target)
        self.direction = direction
    }

    /// Makes sure each receiving database exists: created with `create` (in the versioning of
    /// the database that sends to it), else a missing one fails naming `--create-target`. A
    /// database of another cluster this machine cannot reach is left for the replicator to find
    /// (it may reach what the command cannot). Answers the info of the sending database of a
    /// push, when it could be read.
    func prepareReceiving(create: Bool, client: SofaClient, options: GatewayOptions) async throws(SofaError) -> DatabaseInfo? {
        let pairs: [(receiving: ReplicationEndpoint, sending: ReplicationEndpoint, side: String)] = switch direction {
        case .push: [(target, source, "target")]
        case .pull: [(source, target, "source")]
        case .both: [(target, source, "target"), (source, target, "source")]
        }
        var sendingInfo: DatabaseInfo?
        var clients: [String: SofaClient] = [:]
        defer { for other in clients.values { other.close() } }
        func database(_ endpoint: ReplicationEndpoint) async throws(SofaError) -> Database? {
            guard let gateway = endpoint.gateway else { return client.database(endpoint.database) }
            if let known = clients[gateway] { return known.database(endpoint.database) }
            do {
                let other = try await options.connect(to: gateway)
                clients[gateway] = other
                return other.database(endpoint.database)
            } catch where error.is(.unavailable) && !create {
                return nil
            }
        }
        for (index, pair) in pairs.enumerated() {
            guard let receiving = try await database(pair.receiving) else { continue }
            do {
                _ = try await receiving.info()
            } catch where error.is(.notFound) {
                guard create else {
                    throw SofaError(.notFound, "the \(pair.side) database '\(pair.receiving)' does not exist: "
                                    + "give --create-target to create it")
                }
                let sender = try await database(pair.sending)
                guard let versioning = try await sender?.info().versioning else {
                    throw SofaError(.unavailable, "cannot reach '\(pair.sending)' to read its versioning for --create-target")
                }
                do {
                    _ = try await receiving.client.createDatabase(pair.receiving.database, versioning: versioning)
                } catch where error.is(.databaseExists) {}  // created meanwhile: as good
            }
            if index == 0, direction == .push { sendingInfo = try? await database(pair.sending)?.info() }
        }
        return sendingInfo
    }
}

/// The progress line of a one-shot replication: documents checked (of the source's count, for a
/// push), summed over the replications of `--both`.
final class ReplicationProgress: Sendable {
    let line: ProgressLine
    private let checked = Mutex<[String: UInt64]>([:])

    init(total: UInt64?) {
        line = ProgressLine("replicate", total: total)
    }

    func update(_ status: ReplicationStatus) {
        let sum = checked.withLock { counts in
            counts[status.id] = status.docsChecked
            return counts.values.reduce(0, +)
        }
        line.update(done: sum)
    }
}
