import SofaBus
import SofaServer
import SofaGateway

await ServiceRuntime.main(service: "gateway") { settings, logger in
    try await GatewayService.start(settings: settings, logger: logger)
}
