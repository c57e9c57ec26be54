import SofaBus
import SofaServer
import SofaStorage

await ServiceRuntime.main(service: "storage") { settings, logger in
    try await StorageService.start(settings: settings, logger: logger)
}
