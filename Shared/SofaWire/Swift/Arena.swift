internal import CProtobufC
internal import SofaWireC
import SofaCore

#if canImport(Glibc)
internal import Glibc
#endif

/// Memory for one protobuf-c message tree, to pack or just unpacked: every C string, byte buffer
/// and sub-message is carved from a few large blocks (a bump allocator) and all are freed together
/// when the arena goes away. A message of a thousand documents costs a handful of `malloc` calls
/// instead of several thousand. Used by one encoding or decoding call on one thread, never shared.
final class Arena {
    private var blocks: [UnsafeMutableRawPointer] = []
    private var cursor: UnsafeMutableRawPointer?
    private var remaining = 0
    private var nextBlockSize: Int

    /// The first block has `capacity` bytes; later ones grow (doubling, up to `largestBlock`),
    /// and an allocation bigger than the next block gets a block of its own size.
    init(capacity: Int = 4096) {
        nextBlockSize = max(capacity, 256)
    }

    static let largestBlock = 1 << 20

    deinit {
        for block in blocks { free(block) }
    }

    /// `count` uninitialised bytes, aligned as `malloc` aligns.
    func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        let size = (max(count, 1) + 15) & ~15
        if size > remaining {
            let blockSize = max(size, nextBlockSize)
            let block = malloc(blockSize)!
            blocks.append(block)
            cursor = block
            remaining = blockSize
            nextBlockSize = min(max(blockSize, nextBlockSize) * 2, Self.largestBlock)
        }
        let pointer = cursor!
        cursor = pointer + size
        remaining -= size
        return pointer
    }

    /// `count` zero bytes.
    func zeroed(_ count: Int) -> UnsafeMutableRawPointer {
        let pointer = allocate(count)
        memset(pointer, 0, count)
        return pointer
    }

    func string(_ value: String) -> UnsafeMutablePointer<CChar> {
        var value = value
        return value.withUTF8 { utf8 in
            let pointer = allocate(utf8.count + 1).bindMemory(to: CChar.self, capacity: utf8.count + 1)
            if let base = utf8.baseAddress { memcpy(pointer, base, utf8.count) }
            pointer[utf8.count] = 0
            return pointer
        }
    }

    func bytes(_ value: [UInt8]) -> ProtobufCBinaryData {
        guard !value.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        let pointer = allocate(value.count)
        value.withUnsafeBytes { _ = memcpy(pointer, $0.baseAddress!, value.count) }
        return ProtobufCBinaryData(len: value.count, data: pointer.assumingMemoryBound(to: UInt8.self))
    }

    func bytes(_ value: String) -> ProtobufCBinaryData {
        var value = value
        return value.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, utf8.count > 0 else { return ProtobufCBinaryData(len: 0, data: nil) }
            let pointer = allocate(utf8.count)
            memcpy(pointer, base, utf8.count)
            return ProtobufCBinaryData(len: utf8.count, data: pointer.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// A zero-filled C message, initialised by its generated `__init` function.
    func message<T>(_ initialize: (UnsafeMutablePointer<T>) -> Void) -> UnsafeMutablePointer<T> {
        let pointer = zeroed(MemoryLayout<T>.stride).bindMemory(to: T.self, capacity: 1)
        initialize(pointer)
        return pointer
    }

    func strings(_ elements: [UnsafeMutablePointer<CChar>]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard !elements.isEmpty else { return nil }
        let pointer = allocate(elements.count * MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)
            .bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: elements.count)
        for (index, element) in elements.enumerated() { pointer[index] = element }
        return pointer
    }

    func strings(_ values: [String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        guard !values.isEmpty else { return (0, nil) }
        let pointer = allocate(values.count * MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)
            .bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: values.count)
        for (index, value) in values.enumerated() { pointer[index] = string(value) }
        return (values.count, pointer)
    }

    func byteArrays(_ values: [[UInt8]]) -> (Int, UnsafeMutablePointer<ProtobufCBinaryData>?) {
        guard !values.isEmpty else { return (0, nil) }
        let pointer = allocate(values.count * MemoryLayout<ProtobufCBinaryData>.stride)
            .bindMemory(to: ProtobufCBinaryData.self, capacity: values.count)
        for (index, value) in values.enumerated() { pointer[index] = bytes(value) }
        return (values.count, pointer)
    }

    func uint64s(_ values: [UInt64]) -> UnsafeMutablePointer<UInt64>? {
        guard !values.isEmpty else { return nil }
        let pointer = allocate(values.count * MemoryLayout<UInt64>.stride).bindMemory(to: UInt64.self, capacity: values.count)
        for (index, value) in values.enumerated() { pointer[index] = value }
        return pointer
    }

    func array<T>(_ elements: [UnsafeMutablePointer<T>]) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
        guard !elements.isEmpty else { return nil }
        let pointer = allocate(elements.count * MemoryLayout<UnsafeMutablePointer<T>?>.stride)
            .bindMemory(to: UnsafeMutablePointer<T>?.self, capacity: elements.count)
        for (index, element) in elements.enumerated() { pointer[index] = element }
        return pointer
    }

    /// A protobuf-c allocator that takes its memory from this arena and frees nothing (the arena
    /// frees it all at once), valid while the arena lives.
    func allocator() -> ProtobufCAllocator {
        ProtobufCAllocator(alloc: arenaAlloc, free: arenaFree, allocator_data: Unmanaged.passUnretained(self).toOpaque())
    }
}

private func arenaAlloc(_ data: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    Unmanaged<Arena>.fromOpaque(data!).takeUnretainedValue().allocate(size)
}

private func arenaFree(_ data: UnsafeMutableRawPointer?, _ pointer: UnsafeMutableRawPointer?) {}

/// A byte field that points at `buffer` instead of a copy: valid only while `buffer` is (the
/// message must be packed inside the caller's `withUnsafeBufferPointer`). Packing only reads it.
func borrowed(_ buffer: UnsafeBufferPointer<UInt8>) -> ProtobufCBinaryData {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return ProtobufCBinaryData(len: 0, data: nil) }
    return ProtobufCBinaryData(len: buffer.count, data: UnsafeMutablePointer(mutating: base))
}

/// Packs any protobuf-c message into bytes.
func pack<T>(_ message: UnsafeMutablePointer<T>) -> [UInt8] {
    message.withMemoryRebound(to: ProtobufCMessage.self, capacity: 1) { base in
        let size = protobuf_c_message_get_packed_size(base)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = protobuf_c_message_pack(base, buffer.baseAddress)
        }
    }
}

/// Packs any protobuf-c message into memory from `malloc`, owned by the returned value (for a
/// transport that takes a buffer over without copying it, such as ZeroMQ).
func packOwned<T>(_ message: UnsafeMutablePointer<T>) -> EncodedMessage {
    message.withMemoryRebound(to: ProtobufCMessage.self, capacity: 1) { base in
        let size = protobuf_c_message_get_packed_size(base)
        let pointer = malloc(max(1, size))!
        let written = protobuf_c_message_pack(base, pointer.assumingMemoryBound(to: UInt8.self))
        return EncodedMessage(taking: pointer, count: written)
    }
}

/// Unpacks bytes with a generated `__unpack` function into an arena (freed, with everything the
/// message holds, when `body` is done) and hands the C message to `body`. Malformed bytes become a
/// `.malformedMessage` error.
func unpack<T, R>(
    _ bytes: UnsafeRawBufferPointer, _ what: String,
    unpacker: (UnsafeMutablePointer<ProtobufCAllocator>, Int, UnsafePointer<UInt8>?) -> UnsafeMutablePointer<T>?,
    _ body: (UnsafeMutablePointer<T>) throws(SofaError) -> R
) throws(SofaError) -> R {
    // The unpacked tree is about the size of the bytes plus its structs.
    let arena = Arena(capacity: bytes.count + bytes.count / 4 + 512)
    var allocator = arena.allocator()
    return try withExtendedLifetime(arena) { () throws(SofaError) -> R in
        guard let message = unpacker(&allocator, bytes.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)) else {
            throw SofaError(.malformedMessage, "malformed \(what): \(bytes.count) bytes that are not a protobuf \(what)")
        }
        return try body(message)
    }
}

/// A C string from a decoded message, which must be valid UTF-8.
func decodeString(_ pointer: UnsafeMutablePointer<CChar>?, _ field: @autoclosure () -> String) throws(SofaError) -> String {
    guard let pointer else { return "" }
    guard let value = String(validatingCString: pointer) else {
        throw SofaError(.malformedMessage, "malformed message: field \(field()) is not valid UTF-8")
    }
    return value
}

/// Bytes from a decoded message.
func decodeBytes(_ data: ProtobufCBinaryData) -> [UInt8] {
    guard data.len > 0, let pointer = data.data else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: data.len))
}

/// A byte field that carries text (document IDs travel as bytes so an embedded NUL is seen).
func decodeText(_ data: ProtobufCBinaryData, _ field: @autoclosure () -> String) throws(SofaError) -> String {
    guard data.len > 0, let pointer = data.data else { return "" }
    guard let value = String(validating: UnsafeBufferPointer(start: pointer, count: data.len), as: UTF8.self) else {
        throw SofaError(.malformedMessage, "malformed message: field \(field()) is not valid UTF-8")
    }
    return value
}

/// `withUnsafeBytes` for a decoder with a typed error (the standard one only rethrows `any Error`).
func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(SofaError) -> R) throws(SofaError) -> R {
    let result = bytes.withUnsafeBytes { buffer in
        Result { () throws(SofaError) -> R in try body(buffer) }
    }
    return try result.get()
}

/// Repeated string fields of a decoded message.
func decodeStrings(_ count: Int, _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                   _ field: @autoclosure () -> String) throws(SofaError) -> [String] {
    guard let pointer else { return [] }
    var values: [String] = []
    values.reserveCapacity(count)
    for index in 0..<count { values.append(try decodeString(pointer[index], field())) }
    return values
}

/// Repeated byte fields that carry text.
func decodeTexts(_ count: Int, _ pointer: UnsafeMutablePointer<ProtobufCBinaryData>?,
                 _ field: @autoclosure () -> String) throws(SofaError) -> [String] {
    guard let pointer else { return [] }
    var values: [String] = []
    values.reserveCapacity(count)
    for index in 0..<count { values.append(try decodeText(pointer[index], field())) }
    return values
}

/// A sub-message pointer of a decoded message, or an error naming the missing part.
func required<T>(_ pointer: UnsafeMutablePointer<T>?, _ what: @autoclosure () -> String) throws(SofaError) -> T {
    guard let pointer else { throw SofaError(.malformedMessage, "malformed message: \(what()) has no body") }
    return pointer.pointee
}
