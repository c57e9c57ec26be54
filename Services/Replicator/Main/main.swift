import SofaReplicator
import SofaBus
import SofaServer

await ServiceRuntime.main(service: "replicator") { settings, logger in
    try await ReplicatorService.start(settings: settings, logger: logger)
}
