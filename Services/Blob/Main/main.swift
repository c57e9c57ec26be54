import SofaBlob
import SofaBus

await ServiceRuntime.main(service: "blob", largeBuffers: true) { settings, logger in
    try await BlobService.start(settings: settings, logger: logger)
}
