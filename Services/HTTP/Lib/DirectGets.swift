internal import Hummingbird
internal import HummingbirdCore
internal import HTTPTypes
internal import NIOCore
internal import NIOHTTPTypes
internal import Logging
internal import SofaCore
internal import Foundation
internal import Synchronization

/// The HTTP/1.1 server of sofa-http: Hummingbird's, with `DirectGets` in each connection's
/// pipeline after Hummingbird's connection-state handler (which so sees every request and answer,
/// for its idle timeout and its graceful close) and before the handler that hands requests to
/// Hummingbird's per-connection task.
struct SofaHTTPChannel: ServerChildChannel {
    let http1: HTTP1Channel
    let api: CouchAPI
    let batches: DirectGetBatches

    static func builder(configuration: HTTP1Channel.Configuration, api: CouchAPI) -> HTTPServerBuilder {
        let batches = DirectGetBatches(api: api)
        return HTTPServerBuilder { responder in
            SofaHTTPChannel(http1: HTTP1Channel(responder: responder, configuration: configuration), api: api, batches: batches)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        let (api, batches) = (self.api, self.batches)
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(DirectGets(api: api, batch: batches.batch(for: channel.eventLoop)), position: .after(state))
            try pipeline.addHandler(FirstHeadDeadline(), position: .after(state))
            return value
        }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// Closes a connection whose first request head has not arrived within `limit` of its opening:
/// a client that opens connections and sends their heads a byte at a time (or never) would
/// otherwise hold them until the idle timeout, enough of them to fill the connection cap.
final class FirstHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    static let limit: TimeAmount = .seconds(10)
    private var timer: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: Self.limit) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if timer != nil, case .head = unwrapInboundIn(data) {
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }
}

/// Answers a plain `GET /db/id` on the event loop that read it, without Hummingbird's
/// per-request task. What it answers is what `CouchAPI` answers for the same request
/// (`CouchAPI.directGet` says which requests those are, and `directGets` builds the
/// answers with the same code); every other request, and any it cannot answer, is passed on
/// unchanged. While a request passed on is still being answered, the following ones are passed on
/// too; plain GETs pipelined behind one in the loop's batch join it, and anything else waits until
/// the batch has answered; so answers keep the order of the requests.
///
/// The requests an event loop reads in one turn are answered together after it (`DirectGetBatch`):
/// each database's documents in one read transaction, and each connection's answers written at
/// once. Measured with wrk (16 connections) on 2 cores: answering each request as it was read cost
/// as much as Hummingbird's task did (every answer woke a client thread that had just gone to
/// sleep: a quarter of sofa-http's samples were in that wake-up), 15k GETs/s either way; answered
/// after the turn, 18–19k; with the turn's reads in one transaction, 24–28k.
final class DirectGets: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let api: CouchAPI
    private let batch: DirectGetBatch
    /// Requests passed on whose answers have not ended yet.
    private var passedOn = 0
    /// A request this handler may answer, held until its end arrives: its head, and what it asks.
    private var held: (head: HTTPRequest, get: CouchAPI.DirectGet)?
    /// Requests of this connection waiting in the loop's batch.
    private var pending = 0
    /// Parts read while requests wait in the batch, taken up once they are answered.
    private var waiting: [HTTPRequestPart] = []
    /// A read of the socket was asked for and not passed on yet (see `read`).
    private var readHeld = false
    /// The `Date` header, made again once a second.
    private var date = (second: 0, text: "")

    init(api: CouchAPI, batch: DirectGetBatch) {
        self.api = api
        self.batch = batch
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        // Behind a request that waits for the batch, everything waits.
        guard waiting.isEmpty else {
            waiting.append(part)
            return
        }
        switch part {
        case .head(let head):
            if passedOn == 0, held == nil, let get = api.directGet(head) {
                held = (head, get)  // joins the batch behind this connection's earlier ones, if any
            } else if pending > 0 {
                waiting.append(part)
            } else {
                passedOn += 1
                context.fireChannelRead(data)
            }
        case .body:
            // A GET with a body: not one of the plain ones.
            if let head = held?.head {
                held = nil
                if pending > 0 {
                    waiting.append(contentsOf: [.head(head), part])
                    return
                }
                passedOn += 1
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
            context.fireChannelRead(data)
        case .end(let trailers):
            guard let (head, get) = held else {
                context.fireChannelRead(data)
                return
            }
            held = nil
            pending += 1
            batch.add(DirectGetBatch.Item(handler: self, context: context, head: head, get: get, trailers: trailers))
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// Reading from the socket waits while the answers written here are not taken by the client
    /// (the channel is not writable, and no request passed on is being answered: Hummingbird paces
    /// its own) or parts wait behind the batch: a client that sends plain GETs and never reads the
    /// answers holds a bounded amount of this process's memory.
    func read(context: ChannelHandlerContext) {
        if mayRead(context) {
            context.read()
        } else {
            readHeld = true
        }
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        waiting.isEmpty && (passedOn > 0 || context.channel.isWritable)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReading(context)
        context.fireChannelWritabilityChanged()
    }

    private func resumeReading(_ context: ChannelHandlerContext) {
        if readHeld, mayRead(context) {
            readHeld = false
            context.read()
        }
    }

    /// A request the batch has read for: its answer written (true), or passed on when there is
    /// none or a request passed on before it is still being answered.
    func finish(_ item: DirectGetBatch.Item, answer: CouchAPI.JSONAnswer?) -> Bool {
        let context = item.context
        pending -= 1
        var wrote = false
        if let answer, passedOn == 0 {
            write(answer, context: context)
            wrote = true
        } else {
            passedOn += 1
            context.fireChannelRead(wrapInboundOut(.head(item.head)))
            context.fireChannelRead(wrapInboundOut(.end(item.trailers)))
            context.fireChannelReadComplete()
        }
        if pending == 0, !waiting.isEmpty {
            let parts = waiting
            waiting.removeAll()
            for part in parts { channelRead(context: context, data: wrapInboundOut(part)) }
            context.fireChannelReadComplete()
        }
        resumeReading(context)
        return wrote
    }

    private func write(_ answer: CouchAPI.JSONAnswer, context: ChannelHandlerContext) {
        var fields = answer.headers
        fields[.contentLength] = String(answer.body.count)
        fields[.date] = httpDate()
        fields[.server] = HTTPService.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: answer.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// RFC 9110's IMF-fixdate of now, as Hummingbird writes it on its answers.
    private func httpDate() -> String {
        let now = time(nil)
        if now != date.second { date = (now, IMFDate.text(now)) }
        return date.text
    }
}

/// The direct gets one event loop read in its current turn, answered together once the turn's
/// reads are done. Used on its event loop only (`DirectGetBatches` hands it out loop-bound).
final class DirectGetBatch {
    struct Item {
        let handler: DirectGets
        let context: ChannelHandlerContext
        let head: HTTPRequest
        let get: CouchAPI.DirectGet
        let trailers: HTTPFields?
    }

    private let eventLoop: any EventLoop
    private let api: CouchAPI
    private var items: [Item] = []

    init(eventLoop: any EventLoop, api: CouchAPI) {
        self.eventLoop = eventLoop
        self.api = api
    }

    func add(_ item: Item) {
        eventLoop.preconditionInEventLoop()
        items.append(item)
        if items.count == 1 {
            let batch = NIOLoopBound(self, eventLoop: eventLoop)
            eventLoop.execute { batch.value.run() }
        }
    }

    private func run() {
        eventLoop.preconditionInEventLoop()
        let taken = items
        items.removeAll(keepingCapacity: true)
        let answers = api.directGets(taken.map(\.get))
        var written: [ObjectIdentifier: ChannelHandlerContext] = [:]
        for (item, answer) in zip(taken, answers) where item.handler.finish(item, answer: answer) {
            written[ObjectIdentifier(item.context)] = item.context
        }
        for context in written.values { context.flush() }
    }
}

/// Each event loop's `DirectGetBatch`, kept bound to its loop (reached only from there).
final class DirectGetBatches: Sendable {
    private let api: CouchAPI
    private let batches = Mutex<[ObjectIdentifier: NIOLoopBound<DirectGetBatch>]>([:])

    init(api: CouchAPI) { self.api = api }

    /// The batch of `eventLoop`; called on that loop (a connection's setup).
    func batch(for eventLoop: any EventLoop) -> DirectGetBatch {
        batches.withLock { batches in
            if let batch = batches[ObjectIdentifier(eventLoop)] { return batch.value }
            let batch = DirectGetBatch(eventLoop: eventLoop, api: api)
            batches[ObjectIdentifier(eventLoop)] = NIOLoopBound(batch, eventLoop: eventLoop)
            return batch
        }
    }
}
