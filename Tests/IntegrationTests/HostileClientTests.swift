import Foundation
import SofaBench
import SofaClient
import SofaCore
import Testing

/// The hostile-client suite, short: deep queries, huge requests, clients that never read,
/// worker-hogging joins and oversized bulks against one cluster, while a well-behaved client
/// measures its latency. No process dies or restarts, the limits refuse the hostile requests, and
/// the well-behaved client keeps being served. (Its latency under that load is measured and
/// printed by `sofa-bench hostile`; here the bound is only that it keeps making calls — the load
/// lasting until it has made five — for a shared two-core machine that the hostile clients alone
/// can saturate.)
@Suite(.serialized) struct HostileClientTests {
    @Test func wellBehavedClientIsServedUnderHostileLoad() async throws {
        try await Cluster.with(queryWorkers: 2) { cluster in
            var options = HostileLoad.Options()
            options.phase = .seconds(3)
            options.minimumCalls = 5  // under load, however loaded the machine
            options.nonReaders = 2
            options.nonReaderRequests = 100
            options.largeDocumentBytes = 2 << 20
            options.hogs = 6
            options.joinDocuments = 2_000
            if let only = ProcessInfo.processInfo.environment["SOFA_HOSTILE_ACTORS"] {
                options.actors = Set(only.split(separator: ",").map(String.init))
            }
            let figures = try await HostileLoad(gateway: cluster.supervisor.access, options: options).run()
            #expect(figures.hostileRequests > 0)
            #expect(figures.hostileRefused > 0, "\(figures.json.compactString)")
            #expect(figures.loaded.count >= 5, "the well-behaved client made \(figures.loaded.count) calls under load")
            for name in cluster.supervisor.childNames {
                #expect(cluster.supervisor.restartCount(of: name) == 0, "\(name) restarted")
            }
            print("hostile-client suite: \(figures.json.compactString)")
        }
    }
}
