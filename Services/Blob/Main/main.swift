import SofaBlob
import SofaBus

await ServiceRuntime.main(service: "blob") { settings, logger in
    try await BlobService.start(settings: settings, logger: logger)
}
