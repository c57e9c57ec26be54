internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster

extension Bench {
    struct Hostile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A well-behaved client's p99 with and without hostile clients beside it (deep queries, huge "
                + "requests, clients that never read, worker-hogging joins, oversized bulks).",
            discussion: "Starts a temporary cluster with --query-workers workers and prints the figures and the "
                + "restarts of every process (there should be none).")
        @Option(help: "Seconds of each phase (without, then with the hostile load).") var seconds: Double = 20
        @Option(help: "Query workers of the temporary cluster.") var queryWorkers: Int = 2
        @Option(help: "Clients that ask for a large document and never read.") var nonReaders: Int = 4
        @Option(help: "Cross joins kept running by the hogging client.") var hogs: Int = 8
        @Option(help: "The hostile clients, comma-separated: deep, huge, nonReaders, hogs, bulk.")
        var actors: String = "deep,huge,nonReaders,hogs,bulk"

        func run() async throws {
            try await reporting {
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-hostile-\(getpid())")
                let supervisor = try Supervisor(.init(dataDirectory: directory, gatewayPort: try freePort(),
                                                      queryWorkers: queryWorkers, logLevel: "warning")) { _ in }
                try await supervisor.start()
                var options = HostileLoad.Options()
                options.phase = .milliseconds(Int(seconds * 1000))
                options.nonReaders = nonReaders
                options.hogs = hogs
                options.actors = Set(actors.split(separator: ",").map(String.init))
                let figures: HostileLoad.Figures
                do {
                    figures = try await HostileLoad(gateway: supervisor.access, options: options).run()
                } catch {
                    await supervisor.stop()
                    try? FileManager.default.removeItem(at: directory)
                    throw error
                }
                let restarts = supervisor.childNames.map { ($0, JSON.int(Int64(supervisor.restartCount(of: $0)))) }
                await supervisor.stop()
                try? FileManager.default.removeItem(at: directory)
                guard case .object(var json) = figures.json else { return }
                json["restarts"] = .object(JSONObject(restarts))
                printJSON(.object(json))
            }
        }
    }
}
