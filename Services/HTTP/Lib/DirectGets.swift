internal import Hummingbird
internal import HummingbirdCore
internal import HTTPTypes
internal import NIOCore
internal import NIOHTTPTypes
internal import Logging
internal import SofaCore
internal import Foundation

/// The HTTP/1.1 server of sofa-http: Hummingbird's, with `DirectGets` in each connection's
/// pipeline after Hummingbird's connection-state handler (which so sees every request and answer,
/// for its idle timeout and its graceful close) and before the handler that hands requests to
/// Hummingbird's per-connection task.
struct SofaHTTPChannel: ServerChildChannel {
    let http1: HTTP1Channel
    let api: CouchAPI

    static func builder(configuration: HTTP1Channel.Configuration, api: CouchAPI) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            SofaHTTPChannel(http1: HTTP1Channel(responder: responder, configuration: configuration), api: api)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        let api = self.api
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            let address = channel.remoteAddress?.ipAddress ?? ""
            try pipeline.addHandler(DirectGets(api: api, clientAddress: address), position: .after(state))
            return value
        }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// Answers a plain `GET /db/id` on the event loop that read it, without Hummingbird's
/// per-request task: measured with wrk (16 connections) on 2 cores, Hummingbird's task, its
/// request body stream and its response writer cost sofa-http 70–95 µs of CPU per request, the
/// read of the document from its file 10–20 µs. What it answers is what `CouchAPI` answers for
/// the same request (`CouchAPI.directGet` says which requests those are, and builds the answer
/// with the same code); every other request, and any it cannot answer at once, is passed on
/// unchanged. While a request passed on is still being answered, the following ones are passed on
/// too, so answers keep the order of the requests.
final class DirectGets: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let api: CouchAPI
    private let clientAddress: String
    /// Requests passed on whose answers have not ended yet.
    private var passedOn = 0
    /// A request this handler may answer, held until its end arrives.
    private var held: HTTPRequest?
    /// Answers written since the last flush.
    private var unflushed = false
    /// The `Date` header, made again once a second.
    private var date = (second: 0, text: "")

    init(api: CouchAPI, clientAddress: String) {
        self.api = api
        self.clientAddress = clientAddress
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if passedOn == 0, held == nil, api.mayAnswerDirectly(head) {
                held = head
                return
            }
            passedOn += 1
            context.fireChannelRead(data)
        case .body:
            // A GET with a body: not one of the plain ones.
            if let head = held { passOn(head, context: context) }
            context.fireChannelRead(data)
        case .end:
            if let head = held {
                held = nil
                if let answer = api.directGet(head, clientAddress: clientAddress) {
                    write(answer, context: context)
                    return
                }
                passOn(head, context: context)
            }
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    private func passOn(_ head: HTTPRequest, context: ChannelHandlerContext) {
        held = nil
        passedOn += 1
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    private func write(_ answer: CouchAPI.JSONAnswer, context: ChannelHandlerContext) {
        var fields = answer.headers
        fields[.contentLength] = String(answer.body.count)
        fields[.date] = httpDate()
        fields[.server] = HTTPService.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: answer.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        unflushed = true
    }

    /// RFC 9110's IMF-fixdate of now, as Hummingbird writes it on its answers.
    private func httpDate() -> String {
        var now = time(nil)
        if now != date.second {
            var parts = tm()
            gmtime_r(&now, &parts)
            let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            date = (now, "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(1900 + parts.tm_year) "
                    + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT")
        }
        return date.text
    }
}
