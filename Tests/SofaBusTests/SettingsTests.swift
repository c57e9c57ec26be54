import SofaBus
import SofaServer
import SofaCore
import Testing

@Suite struct SettingsTests {
    /// (arguments, environment, expected data directory)
    static let dataDirectory: [([String], [String: String], String)] = [
        ([], [:], "./.sofa-data"),
        (["--data-dir", "/flag"], [:], "/flag"),
        (["--data-dir=/equals"], [:], "/equals"),
        (["--data-dir=a=b"], [:], "a=b"),
        ([], ["SOFA_DATA_DIR": "/env"], "/env"),
        (["--data-dir", "/flag"], ["SOFA_DATA_DIR": "/env"], "/flag"),
        (["--data-dir=/equals"], ["SOFA_DATA_DIR": "/env"], "/equals"),
        ([], ["DATA_DIR": "/unprefixed"], "./.sofa-data"),
        (["positional", "--verbose", "--data-dir", "/after"], [:], "/after"),
        (["--data-dir", "/first", "--data-dir", "/last"], [:], "/last"),
        (["--other-dir", "/x"], [:], "./.sofa-data"),
    ]

    @Test(arguments: dataDirectory)
    func dataDirectoryFromFlagEnvironmentOrDefault(_ arguments: [String], _ environment: [String: String], _ expected: String) {
        #expect(Settings(arguments: arguments, environment: environment).dataDirectory == expected)
    }

    /// Fair forwarding's limits: defaults, the environment, and 0 bytes for no bytes limit.
    static let forwardingLimits: [([String: String], ForwardingLimits)] = [
        ([:], ForwardingLimits(perClient: 32, bytesPerClient: 8 << 20, waitingBytes: 32 << 20)),
        (["SOFA_CLIENT_IN_FLIGHT": "4", "SOFA_CLIENT_IN_FLIGHT_BYTES": "65536", "SOFA_CLIENT_WAITING_BYTES": "1000"],
         ForwardingLimits(perClient: 4, bytesPerClient: 65536, waitingBytes: 1000)),
        (["SOFA_CLIENT_IN_FLIGHT": "0", "SOFA_CLIENT_IN_FLIGHT_BYTES": "0"],
         ForwardingLimits(perClient: 1, bytesPerClient: nil, waitingBytes: 32 << 20)),
    ]

    @Test(arguments: forwardingLimits)
    func forwardingLimitsFromTheEnvironment(_ environment: [String: String], _ expected: ForwardingLimits) {
        #expect(Settings(arguments: [], environment: environment).forwardingLimits == expected)
    }

    @Test func flagWithoutValueIsTrue() {
        let settings = Settings(arguments: ["--verbose", "--data-dir", "/d"], environment: [:])
        #expect(settings.string("VERBOSE", default: "false") == "true")
        #expect(settings.dataDirectory == "/d")
    }

    @Test func defaults() {
        let settings = Settings(arguments: [], environment: [:])
        #expect(settings.gatewayEndpoint == "tcp://127.0.0.1:7420")
        #expect(settings.storageEndpoint == "tcp://127.0.0.1:7421")
        #expect(settings.blobEndpoint == "tcp://127.0.0.1:7422")
        #expect(settings.replicatorEndpoint == "tcp://127.0.0.1:7423")
        #expect(settings.brokerEndpoint == "tcp://127.0.0.1:7424")
        #expect(settings.heartbeatMs == 500)
        #expect(settings.maxRequestBytes == 16 << 20)
        #expect(settings.instance == nil)
    }

    /// (arguments, environment, expected heartbeatMs): integers parse, junk falls back, minimum 10.
    static let heartbeat: [([String], [String: String], UInt64)] = [
        (["--heartbeat-ms", "250"], [:], 250),
        ([], ["SOFA_HEARTBEAT_MS": "75"], 75),
        (["--heartbeat-ms=1"], [:], 10),
        (["--heartbeat-ms", "-5"], [:], 10),
        (["--heartbeat-ms", "fast"], [:], 500),
        (["--heartbeat-ms", "300"], ["SOFA_HEARTBEAT_MS": "75"], 300),
    ]

    @Test(arguments: heartbeat)
    func heartbeatMs(_ arguments: [String], _ environment: [String: String], _ expected: UInt64) {
        #expect(Settings(arguments: arguments, environment: environment).heartbeatMs == expected)
    }

    @Test func endpointsAndInstanceFromFlagsAndEnvironment() {
        let settings = Settings(arguments: ["--storage-endpoint", "ipc:///tmp/s.sock", "--instance=q2"],
                                environment: ["SOFA_BROKER_ENDPOINT": "tcp://broker:1", "SOFA_INSTANCE": "env",
                                              "SOFA_MAX_REQUEST_BYTES": "1024"])
        #expect(settings.storageEndpoint == "ipc:///tmp/s.sock")
        #expect(settings.brokerEndpoint == "tcp://broker:1")
        #expect(settings.instance == "q2")
        #expect(settings.maxRequestBytes == 1024)
        #expect(Settings(arguments: [], environment: ["SOFA_INSTANCE": "env"]).instance == "env")
    }

    /// Where a service listens and where another reaches it are two settings.
    @Test func listeningAndReachingAreTwoSettings() {
        let bound = Settings(arguments: [], environment: ["SOFA_GATEWAY_ENDPOINT": "tcp://*:7420"])
        #expect(bound.gatewayEndpoint == "tcp://*:7420")
        #expect(bound.gatewayURL == "tcp://127.0.0.1:7420")
        let reaching = Settings(arguments: ["--storage-url", "tcp://storage:7421"],
                                environment: ["SOFA_GATEWAY_URL": "tcp://gateway:7420"], role: .gateway)
        #expect(reaching.storageURL == "tcp://storage:7421")
    }
}

/// The settings table: each address is listened on by one service and reached by the others.
@Suite struct SettingsTableTests {
    @Test(arguments: Setting.allCases.filter { $0.reaches != nil })
    func eachURLReachesAnEndpointOneServiceListensOn(_ url: Setting) throws {
        let endpoint = try #require(url.reaches)
        let listener = try #require(ServiceRole.binding(endpoint), "no service listens on \(endpoint.variable)")
        #expect(listener.reads.contains(endpoint))
        #expect(endpoint.reachedAt == url)
        let readers = ServiceRole.allCases.filter { $0.reads.contains(url) }
        #expect(!readers.isEmpty, "no service reads \(url.variable)")
        #expect(!readers.contains(listener), "\(listener.rawValue) reaches itself through \(url.variable)")
    }

    @Test(arguments: Setting.allCases)
    func everySettingIsReadBySomeServiceOrTool(_ setting: Setting) {
        let services = ServiceRole.allCases.filter { $0.reads.contains(setting) }
        if Setting.toolSettings.contains(setting) {
            #expect(services.isEmpty, "\(setting.variable) is a tool's setting, yet read by \(services)")
        } else {
            #expect(!services.isEmpty, "no service reads \(setting.variable)")
        }
    }

    @Test func aServiceReadsItsOwnSettings() {
        let replicator = Settings(arguments: [], environment: ["SOFA_GATEWAY_URL": "tcp://gateway:7420"], role: .replicator)
        #expect(replicator.gatewayURL == "tcp://gateway:7420")
        #expect(replicator.maxRequestBytes == 16 << 20)
    }

    @Test func aServiceStopsWhenItReadsASettingItsRowDoesNotList() async {
        await #expect(processExitsWith: .failure) {
            _ = Settings(arguments: [], environment: [:], role: .query).gatewayEndpoint
        }
    }
}
