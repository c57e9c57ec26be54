import SofaBus
import SofaServer
import SofaQuery

await ServiceRuntime.main(service: "query") { settings, logger in
    try await QueryService.start(settings: settings, logger: logger)
}
