internal import ArgumentParser
internal import Foundation
internal import SofaCore
internal import Synchronization
internal import SofaCluster

struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the whole cluster locally as supervised child processes.",
        discussion: """
            Prints `ready <gateway endpoint>` once every service it started is healthy. Refuses to start \
            (exit 1) when the gateway's port or the data directory is taken by another cluster. Stops them \
            all on SIGINT/SIGTERM, at any moment (exit 128 + the signal's number while starting, 0 once ready).
            """)

    @Option(help: "Where databases live.") var dataDir: String = "./.sofa-data"
    @Option(help: "The gateway's TCP port on 127.0.0.1.") var port: Int = 7420
    @Option(help: "The HTTP API's port on 127.0.0.1 (CouchDB's REST API; 0: none).") var httpPort: Int = 5984
    @Option(help: "How many query workers to run.") var queryWorkers: Int = 2
    @Option(help: "Log level of the services.") var logLevel: String = "info"

    func run() async throws {
        // Signals are taken over first: a SIGINT or SIGTERM at any moment from here on stops
        // whatever has been started, and nothing more is.
        let signals = SignalWaiter([SIGINT, SIGTERM])
        let signalled = Task { await signals.wait() }
        try await reporting {
            let data = URL(fileURLWithPath: dataDir).standardizedFileURL
            let supervisor = try Supervisor(
                .init(dataDirectory: data, gatewayPort: port, httpPort: httpPort == 0 ? nil : httpPort, queryWorkers: queryWorkers,
                      logLevel: logLevel)
            ) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
            switch await Self.firstOf(starting: supervisor, signalled: signalled) {
            case .started:
                break
            case .failed(let error):
                await supervisor.stop()
                throw error
            case .signal(let signal):
                FileHandle.standardError.write(Data("[supervisor] signal \(signal) while starting: stopping the cluster\n".utf8))
                await supervisor.stop()
                throw ExitCode(128 + signal)
            }
            FileHandle.standardOutput.write(Data("ready \(supervisor.gatewayEndpoint)\n".utf8))
            // How to reach it: the key to pin, and where the first admin's password is.
            if let http = supervisor.httpURL {
                FileHandle.standardError.write(Data("[supervisor] HTTP API (CouchDB's) on \(http)\n".utf8))
            }
            if let key = supervisor.serverKey {
                FileHandle.standardError.write(Data("[supervisor] server key \(key) (clients pin it: SOFA_SERVER_KEY)\n".utf8))
            }
            if let admin = supervisor.localAdmin {
                let path = supervisor.localAdminPath
                FileHandle.standardError.write(Data(("[supervisor] server admin '\(admin.user)'"
                    + (supervisor.createdAdmin ? " created" : "") + "; its password is in \(path) (readable by you alone)\n").utf8))
            }
            let signal = await signalled.value
            FileHandle.standardError.write(Data("[supervisor] signal \(signal): stopping the cluster\n".utf8))
            await supervisor.stop()
        }
    }

    enum StartOutcome: Sendable {
        case started
        case failed(SofaError)
        case signal(Int32)
    }

    /// Starts the cluster, returning as soon as it is healthy, has failed, or a signal came
    /// (the start is then cancelled, not waited for: the caller stops the supervisor at once).
    static func firstOf(starting supervisor: Supervisor, signalled: Task<Int32, Never>) async -> StartOutcome {
        let first = FirstOutcome()
        return await withCheckedContinuation { continuation in
            first.set(continuation)
            let starting = Task {
                do throws(SofaError) {
                    try await supervisor.start()
                    first.finish(.started)
                } catch {
                    first.finish(.failed(error))
                }
            }
            Task {
                let signal = await signalled.value
                starting.cancel()
                first.finish(.signal(signal))
            }
        }
    }
}

/// The continuation of `Up.firstOf`, resumed by whichever outcome comes first, once.
final class FirstOutcome: Sendable {
    private let waiter = Mutex<CheckedContinuation<Up.StartOutcome, Never>?>(nil)

    func set(_ continuation: CheckedContinuation<Up.StartOutcome, Never>) { waiter.withLock { $0 = continuation } }

    func finish(_ outcome: Up.StartOutcome) { waiter.withLock { $0.take() }?.resume(returning: outcome) }
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
