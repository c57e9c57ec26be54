internal import SofaCore
internal import SofaBus
public import SofaWire

/// The cluster's status as the gateway sees it: every service's health.
extension GatewayService {
    /// Every service's health, asked concurrently with a short deadline.
    public func clusterStatus() async -> [ServiceStatus] {
        async let storageHealth = probe(storage)
        async let blobHealth = probe(blob)
        async let replicatorHealth = probe(replicator)
        let workers = broker.snapshot
        var services = [ServiceStatus(name: "gateway", healthy: true, detail: basic.instance, instances: 1)]
        for (name, outcome) in [("storage", await storageHealth), ("blob", await blobHealth),
                                ("replicator", await replicatorHealth)] {
            switch outcome {
            case .success(let info):
                services.append(ServiceStatus(name: name, healthy: true, detail: "\(info.instance) pid \(info.pid)", instances: 1))
            case .failure(let error):
                services.append(ServiceStatus(name: name, healthy: false, detail: error.message, instances: 0))
            }
        }
        services.append(ServiceStatus(
            name: "query", healthy: !workers.workers.isEmpty,
            detail: workers.workers.isEmpty ? "no query worker connected"
                : "workers: \(workers.workers.joined(separator: ",")); busy: \(workers.busyWorkers.joined(separator: ",")); queued: \(workers.queued)",
            instances: UInt32(workers.workers.count)))
        return services
    }

    private func probe(_ client: BusClient) async -> Result<HealthInfo, SofaError> {
        do {
            let reply = try await client.call(.health(service: ""), timeout: .seconds(1))
            guard case .health(let info) = reply else {
                return .failure(SofaError(.unexpectedError, "\(client.peerName) sent no health"))
            }
            return .success(info)
        } catch {
            return .failure(error)
        }
    }
}
