import Foundation
import SofaBus
import Testing

/// `poll` asks a socket for its events only when it may have changed since it was last found
/// empty; these are the cases where a message must still be seen. Each test runs on one thread
/// (a socket is used by the thread that made it), with no suspension point.
@Suite struct PollTests {
    /// ZeroMQ's socket types (zmq.h).
    static let dealer: Int32 = 5, router: Int32 = 6

    /// A ROUTER bound on inproc:// and a DEALER connected to it: inproc delivers a message and its
    /// signal to the ROUTER within the DEALER's send, with no I/O thread between them.
    static func pair() throws -> (router: ZMQSocket, dealer: ZMQSocket) {
        let endpoint = "inproc://sofa-poll-\(UUID().uuidString)"
        let router = try ZMQSocket(type: Self.router)
        try router.bind(endpoint)
        let dealer = try ZMQSocket(type: Self.dealer)
        try dealer.connect(endpoint)
        return (router, dealer)
    }

    /// Receives the one message waiting, then finds the socket empty; returns the sender's identity.
    static func takeOne(_ socket: ZMQSocket, expecting payload: [UInt8]) throws -> [UInt8] {
        guard case .message(let frames)? = try socket.receive() else {
            Issue.record("no message")
            return []
        }
        #expect(frames.count == 2 && frames[1] == payload, "\(frames)")
        #expect(try socket.receive() == nil)
        return frames[0]
    }

    @Test func aMessageThatArrivesAfterTheSocketWasFoundEmptyIsSeen() throws {
        let (router, dealer) = try Self.pair()
        #expect(try poll([router], fds: [], timeoutMs: 0) == [false])
        _ = try dealer.send([[1]])
        #expect(try poll([router], fds: [], timeoutMs: 10_000) == [true])
        _ = try Self.takeOne(router, expecting: [1])
        #expect(try poll([router], fds: [], timeoutMs: 0) == [false])
        _ = try dealer.send([[2]])
        #expect(try poll([router], fds: [], timeoutMs: 10_000) == [true])
        _ = try Self.takeOne(router, expecting: [2])
    }

    /// ZeroMQ looks at a socket's pending commands in a send now and then (at most about once a
    /// millisecond): a send made after a message arrived can take up the signal that told of it,
    /// and the socket's descriptor then stays quiet. The message must be seen all the same.
    @Test func aMessageWhoseSignalASendTookUpIsSeen() throws {
        let (router, dealer) = try Self.pair()
        _ = try dealer.send([[1]])
        #expect(try poll([router], fds: [], timeoutMs: 10_000) == [true])
        let identity = try Self.takeOne(router, expecting: [1])

        _ = try dealer.send([[2]])  // its signal is in the router's mailbox when this returns (inproc)
        // Past ZeroMQ's command throttle, so that the router's next send looks at its commands.
        let clock = ContinuousClock(), start = clock.now
        while clock.now - start < .milliseconds(5) {}
        _ = try router.send([identity, [9]])
        #expect(try poll([router], fds: [], timeoutMs: 2_000) == [true])
        _ = try Self.takeOne(router, expecting: [2])
        // And the dealer got the router's answer.
        #expect(try poll([dealer], fds: [], timeoutMs: 10_000) == [true])
        guard case .message(let answer)? = try dealer.receive() else {
            Issue.record("no answer")
            return
        }
        #expect(answer == [[9]])
    }

    @Test func aSignalledDescriptorIsReadableBesideTheSockets() throws {
        let (router, _) = try Self.pair()
        let wakeup = try Wakeup()
        #expect(try poll([router], fds: [wakeup.fd], timeoutMs: 0) == [false, false])
        wakeup.signal()
        #expect(try poll([router], fds: [wakeup.fd], timeoutMs: 10_000) == [false, true])
        wakeup.drain()
        #expect(try poll([router], fds: [wakeup.fd], timeoutMs: 0) == [false, false])
    }
}
