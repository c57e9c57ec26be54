import SofaBus
import SofaCore
public import SofaWire
internal import Foundation

/// What every process answers before its own features: health, and the diagnostic echo (which
/// waits `delayMs` first). Anything else is refused as not served by this process.
public struct BasicHandler: Sendable {
    public let service: String
    public let instance: String
    private let started = ContinuousClock.now

    public init(service: String, instance: String) {
        self.service = service
        self.instance = instance
    }

    public func handle(_ request: Request) async -> Response {
        switch request.operation {
        case .health:
            return .ok(request.id, .health(ServiceRuntime.health(service: service, instance: instance, started: started)))
        case .echo(let payload, let delayMs, _):
            if delayMs > 0 { try? await Task.sleep(for: .milliseconds(Int(min(delayMs, 60_000)))) }
            return .ok(request.id, .echo(payload: payload, instance: instance))
        default:
            return .failure(request.id, SofaError(.unimplemented,
                "sofa-\(service) does not serve \(request.operation.name) in this version"))
        }
    }
}
