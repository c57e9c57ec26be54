import Foundation
import SofaCore
import Testing

/// docker-compose.yml against the settings table (`ServiceRole`, Shared/SofaCore/SettingsTable.swift):
/// the services read through that table, so what it lists is what they read.
extension DeployTests {
    @Test("each service is given every setting a deployment must give it, and none it does not read")
    func composeGivesEachServiceWhatItReads() async throws {
        let environments = try await Self.composeEnvironments()
        for role in ServiceRole.allCases {
            let given = Set(try #require(environments[role], "no \(role.rawValue) service").keys)
            let missing = Set(role.deployed.map(\.variable)).subtracting(given)
            let ignored = given.subtracting(role.reads.map(\.variable))
            #expect(missing.isEmpty, "\(role.rawValue) is not given \(missing.sorted())")
            #expect(ignored.isEmpty, "\(role.rawValue) is given \(ignored.sorted()), which it does not read")
        }
    }

    @Test("the replicator reaches the gateway by its service name")
    func replicatorReachesTheGatewayByName() async throws {
        let replicator = try #require(try await Self.composeEnvironments()[.replicator])
        #expect(replicator[Setting.gatewayURL.variable] == "tcp://gateway:7420")
    }

    /// `SOFA_X_URL` names the compose service that binds `SOFA_X_ENDPOINT`, on the port it binds;
    /// and a variable has one value wherever it is given (a setting says one thing).
    @Test("every address reaches the service that listens there")
    func everyAddressReachesItsListener() async throws {
        let environments = try await Self.composeEnvironments()
        for (role, environment) in environments {
            for (variable, value) in environment {
                for (other, theirs) in environments where theirs[variable].map({ $0 != value }) == true {
                    Issue.record("\(variable) is \(value) for \(role.rawValue) but \(theirs[variable]!) for \(other.rawValue)")
                }
                guard let url = Setting.allCases.first(where: { $0.variable == variable }), let bound = url.reaches,
                      let listener = ServiceRole.binding(bound) else { continue }
                let listens = try #require(environments[listener]?[bound.variable],
                                           "\(listener.rawValue) is not given \(bound.variable), which \(variable) reaches")
                let port = try #require(Self.port(of: listens), "\(bound.variable) has no port: \(listens)")
                #expect(value == "tcp://\(listener.rawValue):\(port)",
                        "\(role.rawValue): \(variable) is \(value); \(listener.rawValue) listens on \(listens)")
            }
        }
    }

    /// Each service's `SOFA_*` environment in `docker-compose config`.
    static func composeEnvironments() async throws -> [ServiceRole: [String: String]] {
        let result = try await compose(["config"])
        try #require(result.status == 0, "docker-compose config failed:\n\(result.stderr)")
        var environments: [ServiceRole: [String: String]] = [:]
        for (name, section) in serviceSections(of: result.stdout) {
            let role = try #require(ServiceRole(rawValue: name), "compose service \(name) is no Sofa service")
            environments[role] = mapping(block("environment", of: section)).filter { $0.key.hasPrefix("SOFA_") }
        }
        return environments
    }

    /// The port of `tcp://host:port`.
    static func port(of address: String) -> Int? {
        address.split(separator: ":").last.flatMap { Int($0) }
    }
}
