internal import ArgumentParser
internal import Foundation
internal import SofaCore
internal import Synchronization
internal import SofaCluster

struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the whole cluster locally as supervised child processes.",
        discussion: "Prints `ready <gateway endpoint>` once every service is healthy; stops them all on SIGINT/SIGTERM.")

    @Option(help: "Where databases live.") var dataDir: String = "./.sofa-data"
    @Option(help: "The gateway's TCP port on 127.0.0.1.") var port: Int = 7420
    @Option(help: "How many query workers to run.") var queryWorkers: Int = 2
    @Option(help: "Log level of the services.") var logLevel: String = "info"

    func run() async throws {
        try await reporting {
            let data = URL(fileURLWithPath: dataDir).standardizedFileURL
            let supervisor = try Supervisor(
                .init(dataDirectory: data, gatewayPort: port, queryWorkers: queryWorkers, logLevel: logLevel)
            ) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
            let signals = SignalWaiter([SIGINT, SIGTERM])
            do {
                try await supervisor.start()
            } catch {
                await supervisor.stop()
                throw error
            }
            FileHandle.standardOutput.write(Data("ready \(supervisor.gatewayEndpoint)\n".utf8))
            let signal = await signals.wait()
            FileHandle.standardError.write(Data("[supervisor] signal \(signal): stopping the cluster\n".utf8))
            await supervisor.stop()
        }
    }
}

/// Waits for one of the given signals (handled by dispatch sources, not the default action).
final class SignalWaiter: Sendable {
    private let received = Mutex<(signal: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []  // set once in init, then only kept alive

    init(_ signals: [Int32]) {
        for number in signals {
            Foundation.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let waiter = self.received.withLock { state -> CheckedContinuation<Int32, Never>? in
                    if state.signal == nil { state.signal = number }
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: number)
            }
            source.resume()
            sources.append(source)
        }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let already = received.withLock { state -> Int32? in
                if let signal = state.signal { return signal }
                state.waiter = continuation
                return nil
            }
            if let already { continuation.resume(returning: already) }
        }
    }
}
