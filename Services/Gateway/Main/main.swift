import SofaBus
import SofaGateway

await ServiceRuntime.main(service: "gateway", largeBuffers: true) { settings, logger in
    try await GatewayService.start(settings: settings, logger: logger)
}
