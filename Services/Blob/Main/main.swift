import SofaBlob
import SofaBus
import SofaServer

await ServiceRuntime.main(service: "blob") { settings, logger in
    try await BlobService.start(settings: settings, logger: logger)
}
