internal import Foundation
internal import Glibc
public import SofaCore

/// A plain TCP connection to an IPv4 address (a health check, a bench's HTTP client): the
/// socket's descriptor, the caller's to close.
public enum TCPConnect {
    public static func to(_ host: String, port: UInt16) throws(SofaError) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
            throw SofaError(.invalidParameter, "not an IPv4 address: \(host)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SofaError(.posix, errno, "socket failed: \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw SofaError(.unavailable, "nothing answers at \(host):\(port): \(String(cString: strerror(code)))")
        }
        return fd
    }
}
