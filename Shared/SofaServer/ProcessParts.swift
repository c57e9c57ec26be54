public import SofaBus
public import ServiceLifecycle

// The parts of a Sofa process, each a lifecycle `Service`: `ServiceRuntime.main` runs them in one
// service group, which stops them gracefully in the reverse of their order on SIGTERM or SIGINT
// (so a process lists what others depend on first, and its server last: the server stops taking
// requests before what it uses goes away).

/// A part of a process: a lifecycle service of one of the kinds below (the services' libraries
/// name it so, without depending on the lifecycle library themselves).
public protocol ProcessPart: Service {}

/// A socket loop (`SocketLoop`, the thread of a server, client, broker, worker, publisher or
/// subscriber) as a service: it runs until the loop ends; a graceful shutdown or a cancellation
/// ends the loop, after its owner's last words (replies still queued, a goodbye to the broker).
public struct SocketLoopService: ProcessPart {
    let loop: any SocketLoopControl

    public init(_ loop: any SocketLoopControl) { self.loop = loop }

    public func run() async {
        await withTaskCancellationOrGracefulShutdownHandler {
            await loop.waitUntilEnded()
        } onCancelOrGracefulShutdown: {
            loop.requestClose()
        }
    }
}

/// Background work (a reaper, a follower) as a service: `work` runs until it returns or until a
/// graceful shutdown cancels it.
public struct BackgroundService: ProcessPart {
    let work: @Sendable () async -> Void

    public init(_ work: @escaping @Sendable () async -> Void) { self.work = work }

    public func run() async {
        await cancelWhenGracefulShutdown { await work() }
    }
}

/// A step of the graceful shutdown: `action` runs when the group stops this service (after the
/// services listed after it have stopped, before those listed before it).
public struct ShutdownStep: ProcessPart {
    let action: @Sendable () async -> Void

    public init(_ action: @escaping @Sendable () async -> Void) { self.action = action }

    public func run() async {
        try? await gracefulShutdown()  // returns on shutdown, throws on cancellation: the step runs either way
        await action()
    }
}
