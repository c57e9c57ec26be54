public import ArgumentParser
public import SofaClient
internal import Foundation
internal import SofaCore
internal import SofaFiles

// What Sofa's command-line tools (`sofa`, `sofa-bench`) share: the gateway they talk to, and how
// they print results and errors.

public struct GatewayOptions: ParsableArguments {
    public init() {}

    @Option(help: "The gateway endpoint (or SOFA_GATEWAY_URL).")
    public var gateway: String = ProcessInfo.processInfo.environment[Setting.gatewayURL.variable] ?? "tcp://127.0.0.1:7420"

    @Option(help: "Seconds to wait for an answer.")
    public var timeout: Double = 10

    @Option(help: "Seconds to wait for a connection to the gateway before giving up (or SOFA_CONNECT_TIMEOUT_MS).")
    public var connectTimeout: Double = Self.defaultConnectTimeout

    @Flag(help: "Print an error as one line of JSON on stderr (query, index create: the query is JSON too).")
    public var json = false

    @Option(help: "The cluster's public CURVE key to pin (or SOFA_SERVER_KEY; default: the local cluster's, from its secrets folder).")
    public var serverKey: String?

    @Option(help: "The user to sign in as (or SOFA_USER; default: the local cluster's first admin).")
    public var user: String?

    @Option(help: "The user's password (or SOFA_PASSWORD).")
    public var password: String?

    /// `SOFA_CONNECT_TIMEOUT_MS`, else 1 s: a gateway that runs completes the connection in
    /// milliseconds even when busy, so with no cluster a command fails at once.
    static var defaultConnectTimeout: Double {
        (ProcessInfo.processInfo.environment[Setting.connectTimeoutMs.variable].flatMap(Double.init) ?? 1000) / 1000
    }

    /// Connects to `--gateway` (or to `endpoint`, another cluster's gateway) within
    /// `connectTimeout` (the connection itself) and `timeout` (its first answer, and every call after).
    public func connect(to endpoint: String? = nil) async throws(SofaError) -> SofaClient {
        let callTimeout = Duration.milliseconds(Int(timeout * 1000))
        let handshakeTimeout = min(callTimeout, .milliseconds(Int(connectTimeout * 1000)))
        let (key, credentials) = identity
        do {
            return try await SofaClient.connect(endpoint ?? gateway, serverKey: key, credentials: credentials, timeout: callTimeout,
                                                handshakeTimeout: handshakeTimeout)
        } catch {
            guard error.is(.unavailable) else { throw error }
            throw SofaError(.unavailable, "\(error.message): is sofa up running?")
        }
    }
}

extension GatewayOptions {
    /// The server key to pin and whom to sign in as: given (`--server-key`, `--user`,
    /// `--password` or their variables), else the local cluster's from its secrets folder
    /// (`SOFA_KEYS_DIR`, else `<SOFA_DATA_DIR or ./.sofa-data>/keys`), which only its owner reads.
    public var identity: (serverKey: String?, credentials: SofaClient.Credentials?) {
        let environment = ProcessInfo.processInfo.environment
        let folder = Self.localSecrets
        let key = serverKey ?? environment[Setting.serverKey.variable] ?? Self.localClusterKeys?.public
        let name = user ?? environment[Setting.user.variable]
        let secret = password ?? environment[Setting.password.variable]
        if let name {
            return (key, SofaClient.Credentials(name: name, password: secret ?? ""))
        }
        let local = (try? LocalAdminFile.read(in: folder)).flatMap { $0 }
        return (key, local.map { SofaClient.Credentials(name: $0.user, password: $0.password) })
    }

    /// The local cluster's key pair, when this user can read its secrets folder.
    public static var localClusterKeys: (public: String, secret: String)? {
        guard let file = ClusterKeyFile.read(in: localSecrets) else { return nil }
        return (file.public, file.secret)
    }

    /// The local cluster's secrets folder.
    static var localSecrets: SecretsFolder {
        let environment = ProcessInfo.processInfo.environment
        if let keys = environment[Setting.keysDir.variable] { return SecretsFolder(keys) }
        return SecretsFolder.inDataDirectory(environment[Setting.dataDir.variable] ?? "./.sofa-data")
    }
}

/// Runs a command body; a `SofaError` is printed once on stderr, as one line
/// (`sofa: conflict (8): …`, or its JSON with `--json`), and the command exits 1.
public func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as SofaError {
        FileHandle.standardError.write(Data((errorLine(error, json: errorsAsJSON) + "\n").utf8))
        throw ExitCode(1)
    }
}

/// The line a tool prints for `error`: `<tool>: <name> (<code>): <message>` with the message on
/// the same line, or `{"error":{"domain":…,"code":…,"name":…,"message":…}}`.
public func errorLine(_ error: SofaError, json: Bool, tool: String = toolName) -> String {
    if json {
        return JSON.object(JSONObject([("error", .object(JSONObject([
            ("domain", .string(error.domain.rawValue)), ("code", .int(Int64(error.code))),
            ("name", .string(error.name)), ("message", .string(error.message)),
        ])))])).compactString
    }
    let message = error.message.split(whereSeparator: \.isNewline).joined(separator: " ")
    return "\(tool): \(error.name) (\(error.code)): \(message)"
}

/// The running tool's name (`sofa`, `sofa-bench`).
public var toolName: String { URL(fileURLWithPath: CommandLine.arguments.first ?? "sofa").lastPathComponent }

/// Whether the command line asks for JSON errors: `--json` among its options (before a `--`).
/// Read from the arguments, so that an error found before or outside a command's options (an
/// argument that is not UTF-8, a command without `GatewayOptions`) is printed the same way.
var errorsAsJSON: Bool {
    CommandLine.arguments.dropFirst().prefix { $0 != "--" }.contains("--json")
}

public func printJSON(_ json: JSON) {
    print(json.compactString)
}

/// A duration in seconds, for printed figures.
public func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Parses the process's arguments for `root` and runs the command they name, async or not;
/// exits as ArgumentParser does on an error. `beforeRunning` runs once the arguments name one of
/// the tool's commands (not for help or a usage error).
public func runCommand<Root: ParsableCommand>(_ root: Root.Type, beforeRunning: () -> Void = {}) async {
    do {
        var command = try root.parseAsRoot(nil)
        if isCommand(type(of: command), of: root) { beforeRunning() }
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    } catch {
        root.exit(withError: error)
    }
}

/// Whether `command` is `root` or one of its subcommands, at any depth (ArgumentParser answers
/// a help request with a command of its own).
private func isCommand(_ command: any ParsableCommand.Type, of root: any ParsableCommand.Type) -> Bool {
    command == root || root.configuration.subcommands.contains { isCommand(command, of: $0) }
}
