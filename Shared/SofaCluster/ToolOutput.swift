public import ArgumentParser
public import SofaClient
internal import Foundation
internal import SofaCore

// What Sofa's command-line tools (`sofa`, `sofa-bench`) share: the gateway they talk to, and how
// they print results and errors.

public struct GatewayOptions: ParsableArguments {
    public init() {}

    @Option(help: "The gateway endpoint (or SOFA_GATEWAY_URL).")
    public var gateway: String = ProcessInfo.processInfo.environment[Setting.gatewayURL.variable] ?? "tcp://127.0.0.1:7420"

    @Option(help: "Seconds to wait for an answer.")
    public var timeout: Double = 10

    public func connect() async throws -> SofaClient {
        try await SofaClient.connect(gateway, timeout: .milliseconds(Int(timeout * 1000)))
    }
}

/// Runs a command body, printing a `SofaError` on stderr (as text, then as JSON) and exiting 1.
public func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as SofaError {
        let json = JSON.object(JSONObject([("error", .object(JSONObject([
            ("domain", .string(error.domain.rawValue)), ("code", .int(Int64(error.code))),
            ("message", .string(error.message)),
        ])))]))
        FileHandle.standardError.write(Data("sofa: \(error)\n\(json.compactString)\n".utf8))
        throw ExitCode(1)
    }
}

public func printJSON(_ json: JSON) {
    print(json.compactString)
}

/// A duration in seconds, for printed figures.
public func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Parses the process's arguments for `root` and runs the command they name, async or not;
/// exits as ArgumentParser does on an error.
public func runCommand<Root: ParsableCommand>(_ root: Root.Type) async {
    do {
        var command = try root.parseAsRoot(nil)
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    } catch {
        root.exit(withError: error)
    }
}
