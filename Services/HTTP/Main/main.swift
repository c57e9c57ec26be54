import SofaServer
import SofaHTTP

await ServiceRuntime.main(service: "http") { settings, logger in
    try await HTTPService.start(settings: settings, logger: logger)
}
