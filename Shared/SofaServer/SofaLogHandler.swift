public import Logging

/// The services' log handler: swift-log's `StreamLogHandler` on standard error, with the
/// logger's metadata kept here and handed to it with each message that is written. The stream
/// handler formats its whole metadata again each time a key is set, and Hummingbird sets one (the
/// request's id) on every HTTP request, logged or not: measured in sofa-http under wrk, 2–3 % of
/// its CPU per request. The lines written are the same.
public struct SofaLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    public init(label: String, level: Logger.Level) {
        stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = level
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:]) { _, explicit in explicit } }
        stream.log(event: event)
    }
}
