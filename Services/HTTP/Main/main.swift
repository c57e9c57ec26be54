import SofaServer
import SofaHTTP

HTTPService.runTasksOnEventLoops()
await ServiceRuntime.main(service: "http") { settings, logger in
    try await HTTPService.start(settings: settings, logger: logger)
}
