#if canImport(Glibc)
internal import Glibc
#endif

/// An encoded message in memory from `malloc`, which it frees when it goes, unless a transport
/// has taken the memory over with `take()` (ZeroMQ sends a big message from the buffer itself
/// and frees it once it is on the wire, so the bytes are not copied once more).
public final class EncodedMessage: @unchecked Sendable {  // safe: the buffer is only read; `take()` once, by the sending thread
    private var pointer: UnsafeMutableRawPointer?
    public let count: Int

    init(taking pointer: UnsafeMutableRawPointer, count: Int) {
        self.pointer = pointer
        self.count = count
    }

    deinit { free(pointer) }

    /// The bytes (empty once taken).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count) }

    /// Hands the memory over: the caller frees it with `free`. Nil if it was already taken.
    public func take() -> UnsafeMutableRawPointer? {
        defer { pointer = nil }
        return pointer
    }
}
