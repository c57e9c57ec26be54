internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster

extension Bench {
    struct Fuzz: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Random and mutated frames (fixed seed) to every socket of a temporary cluster, as the cluster "
                + "and as strangers, with valid requests between them.",
            discussion: "Prints how many frames went where, the valid requests answered, every process's resident "
                + "memory before and after, and restarts (there should be none).")
        @Option(help: "Frames in all.") var frames: Int = 100_000
        @Option(help: "The seed of the frames.") var seed: UInt64 = 1

        func run() async throws {
            try await reporting {
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-bench-fuzz-\(getpid())")
                defer { try? FileManager.default.removeItem(at: directory) }
                let supervisor = try Supervisor(.init(dataDirectory: directory, gatewayPort: try freePort(), queryWorkers: 1,
                                                      logLevel: "error")) { _ in }
                try await supervisor.start()
                var options = FuzzLoad.Options()
                options.frames = frames
                options.seed = seed
                do {
                    let figures = try await FuzzLoad(supervisor: supervisor, options: options).run()
                    await supervisor.stop()
                    printJSON(figures.json)
                } catch {
                    await supervisor.stop()
                    throw error
                }
            }
        }
    }
}
