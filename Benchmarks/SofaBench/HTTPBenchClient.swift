internal import Foundation
internal import SofaCore
internal import SofaCluster

/// The bench's own HTTP/1.1 client: one keep-alive connection, blocking calls, used by one
/// thread at a time (each bench lane runs on a thread of its own, never on the cooperative pool).
/// Enough of HTTP for Sofa's API: requests with a Content-Length, answers with a Content-Length
/// or chunked.
final class HTTPBenchClient {
    private let fd: Int32
    private let authorization: String
    private var buffer: [UInt8] = []
    private var start = 0
    /// What one `recv` reads into (made once: a new one per read cost the bench's threads more
    /// than the server's work per GET).
    private var chunk = [UInt8](repeating: 0, count: 256 << 10)

    init(port: Int, user: String, password: String) throws {
        let fd = try TCPConnect.to("127.0.0.1", port: UInt16(port))
        self.fd = fd
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    deinit { close(fd) }

    struct Answer {
        var status: Int
        var body: [UInt8]
    }

    /// One request and its whole answer. `consume` (if given) takes the body in pieces instead,
    /// so a large download is never held whole.
    func call(_ method: String, _ path: String, body: [UInt8] = [], contentType: String = "application/json",
              consume: (([UInt8]) -> Void)? = nil) throws -> Answer {
        try send(method, path, bodyLength: body.count, contentType: contentType) { try self.write(body) }
        return try readAnswer(consume: consume)
    }

    /// A request whose body (`length` bytes) is written by `produce` in pieces (an upload).
    func upload(_ method: String, _ path: String, length: Int, contentType: String,
                produce: (_ write: ([UInt8]) throws -> Void) throws -> Void) throws -> Answer {
        try send(method, path, bodyLength: length, contentType: contentType) { try produce(self.write) }
        return try readAnswer(consume: nil)
    }

    private func send(_ method: String, _ path: String, bodyLength: Int, contentType: String, body: () throws -> Void) throws {
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: \(authorization)\r\n"
            + "Content-Type: \(contentType)\r\nContent-Length: \(bodyLength)\r\nAccept: application/json\r\n\r\n"
        try write(Array(head.utf8))
        try body()
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw SofaError(.posix, errno, "send failed") }
            offset += sent
        }
    }

    private func fill() throws {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 1 << 20 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw SofaError(.posix, errno, "the server closed the connection") }
        buffer.append(contentsOf: chunk[0..<count])
    }

    private func line() throws -> String {
        while true {
            if let end = buffer[start...].firstIndex(of: 0x0A) {
                let text = String(decoding: buffer[start..<end], as: UTF8.self).trimmingCharacters(in: .newlines)
                start = end + 1
                return text
            }
            try fill()
        }
    }

    private func take(_ count: Int, into consume: ([UInt8]) -> Void) throws {
        var left = count
        while left > 0 {
            if start == buffer.count { try fill() }
            let piece = min(left, buffer.count - start)
            consume(Array(buffer[start..<start + piece]))
            start += piece
            left -= piece
        }
    }

    private func readAnswer(consume: (([UInt8]) -> Void)?) throws -> Answer {
        let statusLine = try line()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw SofaError(.wrongFormat, "bad status line: \(statusLine)") }
        var length: Int?
        var chunked = false
        while true {
            let header = try line()
            if header.isEmpty { break }
            let lower = header.lowercased()
            if lower.hasPrefix("content-length:") { length = Int(lower.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
            if lower.hasPrefix("transfer-encoding:") && lower.contains("chunked") { chunked = true }
        }
        var body: [UInt8] = []
        let sink: ([UInt8]) -> Void = consume ?? { body += $0 }
        if chunked {
            while true {
                guard let size = Int(try line().split(separator: ";")[0], radix: 16) else { throw SofaError(.wrongFormat, "bad chunk") }
                if size == 0 {
                    _ = try line()
                    break
                }
                try take(size, into: sink)
                _ = try line()
            }
        } else if let length {
            try take(length, into: sink)
        }
        return Answer(status: status, body: body)
    }
}

/// Runs `lanes` blocking workers, each on a thread of its own, and waits for all of them.
func onThreads<T: Sendable>(_ lanes: Int, _ work: @escaping @Sendable (Int) throws -> T) async throws -> [T] {
    try await withThrowingTaskGroup(of: T.self) { group in
        for lane in 0..<lanes {
            group.addTask {
                try await withCheckedThrowingContinuation { continuation in
                    Thread.detachNewThread {
                        do { continuation.resume(returning: try work(lane)) } catch { continuation.resume(throwing: error) }
                    }
                }
            }
        }
        var results: [T] = []
        for try await result in group { results.append(result) }
        return results
    }
}
