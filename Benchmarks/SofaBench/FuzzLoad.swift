internal import Foundation
public import SofaClient
public import SofaCluster
internal import SofaWire

/// Random and mutated frames, from a fixed seed, to every socket a cluster binds (the gateway's,
/// storage's, sofa-blob's, the replicator's, the broker's, the commit notices'), each from a
/// client holding the cluster's key and from one with a key of its own (on TCP; ipc:// sockets
/// admit the service user alone). Between them a signed-in client's valid requests must keep
/// being answered; at the end no process may have exited and none may have grown without bound.
public struct FuzzLoad: Sendable {
    public struct Options: Sendable {
        /// Frames in all, spread over every socket.
        public var frames = 100_000
        public var seed: UInt64 = 1
        /// A valid request is checked after every this many bad frames.
        public var validEvery = 500
        public init() {}
    }

    public struct Figures: Sendable {
        public var sent = 0
        public var perSocket: [String: Int] = [:]
        public var validAnswered = 0
        public var validFailures: [String] = []
        public var rssBeforeKiB: [String: Int] = [:]
        public var rssAfterKiB: [String: Int] = [:]
        public var restarts: [String: Int] = [:]
        public var seconds = 0.0

        /// The largest growth of any process's resident memory, in KiB.
        public var largestGrowthKiB: Int {
            rssAfterKiB.map { $0.value - (rssBeforeKiB[$0.key] ?? 0) }.max() ?? 0
        }

        public var json: JSON {
            func table(_ values: [String: Int]) -> JSON {
                .object(JSONObject(values.sorted { $0.key < $1.key }.map { ($0.key, JSON.int(Int64($0.value))) }))
            }
            return .object(JSONObject([
                ("frames_sent", .int(Int64(sent))), ("frames_per_socket", table(perSocket)),
                ("valid_answered", .int(Int64(validAnswered))), ("valid_failed", .array(validFailures.map(JSON.string))),
                ("rss_before_kib", table(rssBeforeKiB)), ("rss_after_kib", table(rssAfterKiB)),
                ("largest_rss_growth_kib", .int(Int64(largestGrowthKiB))), ("restarts", table(restarts)),
                ("seconds", .double(seconds)),
            ]))
        }
    }

    let supervisor: Supervisor
    let options: Options

    public init(supervisor: Supervisor, options: Options) {
        self.supervisor = supervisor
        self.options = options
    }

    public func run() async throws -> Figures {
        var figures = Figures()
        let client = try await supervisor.connect(timeout: .seconds(30))
        defer { client.close() }
        let db = try await client.createDatabase("fuzz-\(getpid())")
        let known = try await db.put(id: "known", json: #"{"kept":true}"#)
        let pids = Dictionary(uniqueKeysWithValues: supervisor.childNames.compactMap { name in supervisor.pid(of: name).map { (name, $0) } })
        figures.rssBeforeKiB = pids.mapValues(Self.residentKiB)
        let started = ContinuousClock.now
        // The targets: every bound socket, as the cluster and as a stranger.
        let access = supervisor.access
        var targets: [(String, String, String?)] = []  // name, endpoint, secret key (nil: a fresh one)
        for (name, endpoint) in supervisor.endpoints.sorted(by: { $0.key < $1.key }) {
            targets.append(("\(name)/cluster", endpoint, access.clusterSecretKey))
            if endpoint.hasPrefix("tcp://") { targets.append(("\(name)/stranger", endpoint, nil)) }
        }
        // The frames are about another database: a frame that the cluster's own key makes a valid
        // request may delete or change that one (a holder of the cluster key is trusted), not
        // the one the valid requests read.
        let target = try await client.createDatabase("fuzz-target-\(getpid())")
        _ = try await target.put(id: "known", json: #"{"kept":true}"#)
        let samples = Self.samples(database: target.name)
        let sender = FuzzSender(targets: targets, serverKey: access.serverKey, samples: samples, seed: options.seed)
        var remaining = options.frames
        while remaining > 0 {
            let batch = min(options.validEvery, remaining)
            await sender.send(batch)
            remaining -= batch
            do {
                let document = try await db.get(id: "known")
                if document.rev == known.rev { figures.validAnswered += 1 } else { figures.validFailures.append("known changed") }
            } catch {
                figures.validFailures.append("\(error)")
            }
        }
        figures.seconds = (ContinuousClock.now - started) / .seconds(1)
        figures.sent = options.frames
        figures.perSocket = await sender.counts
        await sender.close()
        figures.rssAfterKiB = pids.mapValues(Self.residentKiB)
        figures.restarts = Dictionary(uniqueKeysWithValues: supervisor.childNames.map { ($0, supervisor.restartCount(of: $0)) })
        return figures
    }

    /// Valid requests of many kinds, encoded: the material the mutations start from.
    static func samples(database: String) -> [[UInt8]] {
        let body = Array(#"{"a":[1,2,{"b":"c"}],"d":null}"#.utf8)
        let ops: [Op] = [
            .health(service: ""), .getDocument(id: "known", rev: ""), .putDocument(id: "x", rev: "", body: body, deleted: false),
            .bulkWrite([.put(id: "y", rev: "", body: body, deleted: false)]), .changes(ChangesQuery(since: 0)),
            .allDocs(AllDocsQuery(includeBodies: true)), .query(QuerySpec(text: "SELECT a FROM _ WHERE d IS NULL", isN1QL: true)),
            .blobWriteBegin(expectedKey: ""), .authenticate(name: "admin", password: "guess"), .session,
            .setSecurity(.object(JSONObject([("members", .object(JSONObject([("names", .array(["x"]))])))]))),
            .rawGet(store: "info", key: "_security"), .revsDiff([RevsDiffEntry(id: "x", revs: ["1-ab"])]),
            .createIndex(IndexDefinition(kind: 0, name: "i", descriptor: .array(["a"]))),
        ]
        return ops.enumerated().map { index, op in Request(id: UInt64(index + 1), database: database, operation: op).encoded() }
    }

    /// A process's resident memory (VmRSS of /proc), in KiB; 0 when it cannot be read.
    static func residentKiB(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

/// The sockets of the fuzz (confined to one serial queue, where they are used one call at a
/// time) and the frames they send.
private actor FuzzSender {
    private let names: [String]
    private let sockets: Confined<[RawSocket]>
    private let samples: [[UInt8]]
    private var random: SplitMix
    private(set) var counts: [String: Int] = [:]
    private var next = 0

    init(targets: [(String, String, String?)], serverKey: String?, samples: [[UInt8]], seed: UInt64) {
        names = targets.map(\.0)
        sockets = Confined(targets.map { RawSocket($0.1, serverKey: serverKey, secretKey: $0.2) }, label: "sofa-bench-fuzz")
        self.samples = samples
        random = SplitMix(seed)
    }

    func send(_ count: Int) async {
        var frames: [(Int, [[UInt8]])] = []
        for _ in 0..<count {
            frames.append((next % names.count, mutated()))
            next += 1
        }
        let batch = frames
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            sockets.async { sockets in
                for (index, message) in batch {
                    sockets[index].send(frames: message)
                    if index == 0 { for socket in sockets { _ = socket.drain() } }
                }
                for socket in sockets { _ = socket.drain() }
                continuation.resume()
            }
        }
        for (index, _) in frames { counts[names[index], default: 0] += 1 }
    }

    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            sockets.async { sockets in
                for socket in sockets { _ = socket.drain() }
                continuation.resume()
            }
        }
    }

    /// One message: random bytes, or a valid request flipped, cut, spliced or padded, sometimes
    /// in several frames.
    private func mutated() -> [[UInt8]] {
        var sample = samples[Int(random.next() % UInt64(samples.count))]
        switch random.next() % 7 {
        case 0:
            sample = (0..<Int(random.next() % 512)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        case 1:
            for _ in 0...Int(random.next() % 4) where !sample.isEmpty {
                sample[Int(random.next() % UInt64(sample.count))] ^= UInt8(1 << (random.next() % 8))
            }
        case 2:
            sample = Array(sample.prefix(Int(random.next() % UInt64(sample.count + 1))))
        case 3:
            let other = samples[Int(random.next() % UInt64(samples.count))]
            sample = Array(sample.prefix(Int(random.next() % UInt64(sample.count + 1)))) + other.suffix(Int(random.next() % UInt64(other.count + 1)))
        case 4:
            // A length that claims far more than follows.
            sample += [0x12, 0xff, 0xff, 0xff, 0x7f] + (0..<Int(random.next() % 16)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        case 5:
            return [sample, Array(sample.reversed()), []]
        default:
            break
        }
        return [sample]
    }
}

/// SplitMix64: a small, seeded generator (the same frames for the same seed; the lookups' keys,
/// without a system call for each as the system generator makes).
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

