import SofaTestSupport
@testable import SofaBus
@testable import SofaServer
import Testing

/// `ClientInFlight`, the bookkeeping of fair forwarding, without sockets.
@Suite struct ClientInFlightTests {
    typealias Queues = ClientInFlight<String>
    static let a: [UInt8] = [0xA], b: [UInt8] = [0xB], c: [UInt8] = [0xC]

    enum Step {
        case admit([UInt8], String, bytes: Int, Queues.Admission)
        case finish([UInt8])
        /// `next` hands out these, in order, then nil.
        case next([String])
    }

    /// One table per rule: the steps, and what each admission and `next` must give.
    static let rules: [(name: String, perClient: Int, waitingBytes: Int, total: Int?, steps: [Step])] = [
        ("under the limit a request goes at once", 2, 1000, nil, [
            .admit(a, "a1", bytes: 10, .forward(cost: 0)), .admit(a, "a2", bytes: 10, .forward(cost: 0)), .admit(b, "b1", bytes: 10, .forward(cost: 0)),
            .next([]),
        ]),
        ("over it the request waits until one is answered", 2, 1000, nil, [
            .admit(a, "a1", bytes: 10, .forward(cost: 0)), .admit(a, "a2", bytes: 10, .forward(cost: 0)), .admit(a, "a3", bytes: 10, .wait),
            .admit(a, "a4", bytes: 10, .wait), .next([]), .finish(a), .next(["a3"]), .finish(a), .finish(a), .next(["a4"]),
        ]),
        ("a client's requests keep their order: a new one waits behind its waiting ones", 1, 1000, nil, [
            .admit(a, "a1", bytes: 10, .forward(cost: 0)), .admit(a, "a2", bytes: 10, .wait), .finish(a),
            .admit(a, "a3", bytes: 10, .wait), .next(["a2"]), .finish(a), .next(["a3"]),
        ]),
        ("one client's waiting requests do not hold up another's", 1, 1000, nil, [
            .admit(a, "a1", bytes: 10, .forward(cost: 0)), .admit(a, "a2", bytes: 10, .wait), .admit(a, "a3", bytes: 10, .wait),
            .admit(b, "b1", bytes: 10, .forward(cost: 0)), .admit(b, "b2", bytes: 10, .wait), .finish(b), .next(["b2"]),
        ]),
        ("waiting bytes are bounded; a client with nothing waiting may always queue one", 1, 100, nil, [
            .admit(a, "a1", bytes: 500, .forward(cost: 0)), .admit(a, "a2", bytes: 500, .wait), .admit(a, "a3", bytes: 1, .refuse(waitingBytes: 500)),
            .finish(a), .next(["a2"]), .admit(a, "a4", bytes: 60, .wait), .admit(a, "a5", bytes: 40, .wait),
            .admit(a, "a6", bytes: 1, .refuse(waitingBytes: 100)), .admit(b, "b1", bytes: 1, .forward(cost: 0)),
        ]),
        ("with a total, clients take turns (round-robin)", 2, 1000, 2, [
            .admit(a, "a1", bytes: 1, .forward(cost: 0)), .admit(a, "a2", bytes: 1, .forward(cost: 0)), .admit(a, "a3", bytes: 1, .wait),
            .admit(a, "a4", bytes: 1, .wait), .admit(b, "b1", bytes: 1, .wait), .admit(b, "b2", bytes: 1, .wait),
            .admit(c, "c1", bytes: 1, .wait), .finish(a), .next(["a3"]), .finish(a), .next(["b1"]), .finish(a),
            .next(["c1"]), .finish(b), .next(["a4"]), .finish(c), .next(["b2"]), .finish(a), .finish(b), .next([]),
        ]),
    ]

    @Test(arguments: rules.indices) func rule(_ index: Int) {
        let rule = Self.rules[index]
        var queues = Queues(perClient: rule.perClient, waitingBytes: rule.waitingBytes, total: rule.total)
        for (number, step) in rule.steps.enumerated() {
            switch step {
            case .admit(let client, let item, let bytes, let expected):
                let got = queues.admit(client, item, bytes: bytes, connection: 1, deadline: 0)
                #expect(got == expected, "\(rule.name): step \(number), \(item)")
            case .finish(let client):
                queues.finish(client)
            case .next(let expected):
                var got: [String] = []
                while let next = queues.next() { got.append(next.waiting.item) }
                #expect(got == expected, "\(rule.name): step \(number)")
                #expect(!queues.hasStartable)
            }
            for (client, count) in queues.inFlight { #expect(count <= rule.perClient, "\(rule.name): \(client) over") }
        }
    }

    /// With a bytes limit of 1000 (and 4 requests at most): a new client has one request out
    /// until its first answer (cost: its bytes plus the limit); then its requests cost their bytes
    /// plus its last answer's. Small answers: up to 4 out; large ones: one.
    @Test func bytesInFlightFollowTheLastAnswer() {
        var queues = Queues(perClient: 4, waitingBytes: 1 << 20, bytesPerClient: 1000)
        let a = Self.a
        #expect(queues.admit(a, "a1", bytes: 10, connection: 1, deadline: 0) == .forward(cost: 1010))
        #expect(queues.admit(a, "a2", bytes: 10, connection: 1, deadline: 0) == .wait)
        #expect(queues.admit(a, "a3", bytes: 10, connection: 1, deadline: 0) == .wait)
        #expect(queues.admit(a, "a4", bytes: 10, connection: 1, deadline: 0) == .wait)
        queues.finish(a, cost: 1010, answerBytes: 90)  // small answers: 100 each
        var started: [(String, Int)] = []
        while let next = queues.next() { started.append((next.waiting.item, next.cost)) }
        #expect(started.map(\.0) == ["a2", "a3", "a4"] && started.allSatisfy { $0.1 == 100 })
        #expect(queues.admit(a, "a5", bytes: 10, connection: 1, deadline: 0) == .forward(cost: 100))
        for n in 6...9 { #expect(queues.admit(a, "a\(n)", bytes: 10, connection: 1, deadline: 0) == .wait, "4 out: the count limit") }
        #expect(queues.next() == nil)
        queues.finish(a, cost: 100, answerBytes: 5000)  // a large answer: the next costs 5010
        #expect(queues.next() == nil, "300 bytes out, 5010 more would pass 1000")
        queues.finish(a, cost: 100, answerBytes: 5000)
        queues.finish(a, cost: 100, answerBytes: 5000)
        #expect(queues.next() == nil)
        queues.finish(a, cost: 100, answerBytes: 5000)
        #expect(queues.next()?.cost == 5010, "none out: one goes, however large")
        #expect(queues.next() == nil)
        queues.finish(a, cost: 5010, answerBytes: 5000)
        #expect(queues.next()?.waiting.item == "a7")
        queues.finish(a, cost: 5010, answerBytes: 50)
        #expect(queues.next()?.waiting.item == "a8")
        #expect(queues.next()?.waiting.item == "a9")
        queues.finish(a, cost: 60, answerBytes: 50)
        queues.finish(a, cost: 60, answerBytes: 50)
        // Nothing left of the client: it is forgotten, and starts again with one out.
        #expect(queues.inFlight.isEmpty && queues.waitingCount == 0)
        #expect(queues.admit(a, "a10", bytes: 10, connection: 1, deadline: 0) == .forward(cost: 1010))
        #expect(queues.admit(Self.b, "b1", bytes: 10, connection: 2, deadline: 0) == .forward(cost: 1010), "another client is apart")
    }

    @Test func waitingRequestsOfAClosedConnectionOrPastTheirDeadlineAreTakenOut() {
        var queues = Queues(perClient: 1, waitingBytes: 1 << 20)
        #expect(queues.admit(Self.a, "a1", bytes: 1, connection: 7, deadline: 0) == .forward(cost: 0))
        #expect(queues.admit(Self.a, "a2", bytes: 1, connection: 7, deadline: 500) == .wait)
        #expect(queues.admit(Self.a, "a3", bytes: 1, connection: 7, deadline: 0) == .wait)
        #expect(queues.admit(Self.b, "b1", bytes: 1, connection: 8, deadline: 0) == .forward(cost: 0))
        #expect(queues.admit(Self.b, "b2", bytes: 1, connection: 8, deadline: 900) == .wait)
        #expect(queues.removeExpired(now: 499).isEmpty)
        #expect(queues.removeExpired(now: 500).map(\.waiting.item) == ["a2"])
        #expect(queues.waitingCount == 2)
        #expect(queues.removeWaiting(connections: [7]).map(\.waiting.item) == ["a3"])
        #expect(queues.waitingBytes(of: Self.a) == 0)
        queues.finish(Self.a)
        #expect(queues.next() == nil, "nothing of a's left to start")
        queues.finish(Self.b)
        #expect(queues.next()?.waiting.item == "b2")
        queues.finish(Self.b)
        #expect(queues.inFlightTotal == 0 && queues.inFlight.isEmpty && queues.waitingCount == 0)
    }

    /// Random admissions, answers, disconnects and expiries (a fixed seed): no client ever has
    /// more than its limits in flight (count and bytes), every request is forwarded, refused or taken out exactly
    /// once, and once everything is answered nothing is left counted.
    @Test func everyRequestIsAccountedForExactlyOnce() {
        var random = SplitMix64(seed: 42)
        let clients: [[UInt8]] = (0..<5).map { [UInt8($0)] }
        var queues = ClientInFlight<Int>(perClient: 3, waitingBytes: 400, bytesPerClient: 300, total: 8)
        var inFlight: [Int: (client: [UInt8], cost: Int)] = [:]  // forwarded, not yet answered
        var outcomes: [Int: String] = [:]
        func record(_ id: Int, _ outcome: String) {
            #expect(outcomes[id] == nil, "request \(id) accounted for twice")
            outcomes[id] = outcome
        }
        var now: UInt64 = 1000
        for id in 0..<20_000 {
            now += 1
            switch random.next() % 10 {
            case 0...4:
                let client = clients[Int(random.next() % 5)]
                let bytes = Int(random.next() % 150) + 1
                switch queues.admit(client, id, bytes: bytes, connection: Int32(client[0]), deadline: now + random.next() % 200) {
                case .forward(let cost): inFlight[id] = (client, cost)
                case .wait: break
                case .refuse: record(id, "refused")
                }
            case 5...7:
                guard let (answered, out) = inFlight.randomElement(using: &random) else { continue }
                inFlight[answered] = nil
                queues.finish(out.client, cost: out.cost, answerBytes: Int(random.next() % 200))
                record(answered, "answered")
                while let next = queues.next() { inFlight[next.waiting.item] = (next.client, next.cost) }
            case 8:
                for expired in queues.removeExpired(now: now) { record(expired.waiting.item, "expired") }
            default:
                let gone = Int32(random.next() % 5)
                for dropped in queues.removeWaiting(connections: [gone]) { record(dropped.waiting.item, "dropped") }
            }
            for client in clients {
                let out = inFlight.values.filter { $0.client == client }
                #expect(out.count <= 3 && (queues.inFlight[client] ?? 0) == out.count)
                #expect(out.count <= 1 || out.reduce(0) { $0 + $1.cost } <= 300, "over the bytes limit")
            }
            #expect(queues.inFlightTotal == inFlight.count && queues.inFlightTotal <= 8)
        }
        while let (answered, out) = inFlight.first {
            inFlight[answered] = nil
            queues.finish(out.client, cost: out.cost, answerBytes: 10)
            record(answered, "answered")
            while let next = queues.next() { inFlight[next.waiting.item] = (next.client, next.cost) }
        }
        #expect(queues.inFlightTotal == 0 && queues.inFlight.isEmpty && queues.waitingCount == 0)
        let admitted = outcomes.count
        #expect(admitted > 5_000, "\(admitted)")
        #expect(Set(outcomes.values) == ["answered", "refused", "expired", "dropped"])
    }
}

