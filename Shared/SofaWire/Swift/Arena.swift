internal import CProtobufC
internal import SofaWireC
public import SofaCore

#if canImport(Glibc)
internal import Glibc
#endif

/// Memory for building one protobuf-c message tree to pack: every C string, byte buffer and
/// sub-message is allocated here and freed together when the arena goes away. Used by one
/// encoding call on one thread, never shared.
final class Arena {
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        for pointer in allocations { free(pointer) }
    }

    func string(_ value: String) -> UnsafeMutablePointer<CChar> {
        let pointer = strdup(value)!
        allocations.append(UnsafeMutableRawPointer(pointer))
        return pointer
    }

    func bytes(_ value: [UInt8]) -> ProtobufCBinaryData {
        guard !value.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        let pointer = malloc(value.count)!
        value.withUnsafeBytes { _ = memcpy(pointer, $0.baseAddress!, value.count) }
        allocations.append(pointer)
        return ProtobufCBinaryData(len: value.count, data: pointer.assumingMemoryBound(to: UInt8.self))
    }

    func bytes(_ value: String) -> ProtobufCBinaryData { bytes(Array(value.utf8)) }

    /// A zero-filled C message, initialised by its generated `__init` function.
    func message<T>(_ initialize: (UnsafeMutablePointer<T>) -> Void) -> UnsafeMutablePointer<T> {
        let raw = calloc(1, MemoryLayout<T>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: T.self, capacity: 1)
        initialize(pointer)
        return pointer
    }

    func strings(_ elements: [UnsafeMutablePointer<CChar>]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard !elements.isEmpty else { return nil }
        let raw = calloc(elements.count, MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: elements.count)
        for (index, element) in elements.enumerated() { pointer[index] = element }
        return pointer
    }

    func strings(_ values: [String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        (values.count, strings(values.map { string($0) }))
    }

    func byteArrays(_ values: [[UInt8]]) -> (Int, UnsafeMutablePointer<ProtobufCBinaryData>?) {
        guard !values.isEmpty else { return (0, nil) }
        let raw = calloc(values.count, MemoryLayout<ProtobufCBinaryData>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: ProtobufCBinaryData.self, capacity: values.count)
        for (index, value) in values.enumerated() { pointer[index] = bytes(value) }
        return (values.count, pointer)
    }

    func uint64s(_ values: [UInt64]) -> UnsafeMutablePointer<UInt64>? {
        guard !values.isEmpty else { return nil }
        let raw = calloc(values.count, MemoryLayout<UInt64>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: UInt64.self, capacity: values.count)
        for (index, value) in values.enumerated() { pointer[index] = value }
        return pointer
    }

    func array<T>(_ elements: [UnsafeMutablePointer<T>]) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
        guard !elements.isEmpty else { return nil }
        let raw = calloc(elements.count, MemoryLayout<UnsafeMutablePointer<T>?>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: UnsafeMutablePointer<T>?.self, capacity: elements.count)
        for (index, element) in elements.enumerated() { pointer[index] = element }
        return pointer
    }
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

/// Unpacks bytes with a generated `__unpack` function, hands the C message to `body`, then frees
/// it with the matching `__free_unpacked`. Malformed bytes become a `.malformedMessage` error.
func unpack<T, R>(
    _ bytes: UnsafeRawBufferPointer, _ what: String,
    unpacker: (Int, UnsafePointer<UInt8>?) -> UnsafeMutablePointer<T>?,
    free release: (UnsafeMutablePointer<T>) -> Void,
    _ body: (UnsafeMutablePointer<T>) throws(SofaError) -> R
) throws(SofaError) -> R {
    guard let message = unpacker(bytes.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)) else {
        throw SofaError(.malformedMessage, "malformed \(what): \(bytes.count) bytes that are not a protobuf \(what)")
    }
    defer { release(message) }
    return try body(message)
}

/// A C string from a decoded message, which must be valid UTF-8.
func decodeString(_ pointer: UnsafeMutablePointer<CChar>?, _ field: String) throws(SofaError) -> String {
    guard let pointer else { return "" }
    guard let value = String(validatingCString: pointer) else {
        throw SofaError(.malformedMessage, "malformed message: field \(field) is not valid UTF-8")
    }
    return value
}

/// Bytes from a decoded message.
func decodeBytes(_ data: ProtobufCBinaryData) -> [UInt8] {
    guard data.len > 0, let pointer = data.data else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: data.len))
}

/// A byte field that carries text (document IDs travel as bytes so an embedded NUL is seen).
func decodeText(_ data: ProtobufCBinaryData, _ field: String) throws(SofaError) -> String {
    let bytes = decodeBytes(data)
    guard let value = String(validating: bytes, as: UTF8.self) else {
        throw SofaError(.malformedMessage, "malformed message: field \(field) is not valid UTF-8")
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
func decodeStrings(_ count: Int, _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ field: String) throws(SofaError) -> [String] {
    guard let pointer else { return [] }
    var values: [String] = []
    values.reserveCapacity(count)
    for index in 0..<count { values.append(try decodeString(pointer[index], field)) }
    return values
}

/// Repeated byte fields that carry text.
func decodeTexts(_ count: Int, _ pointer: UnsafeMutablePointer<ProtobufCBinaryData>?, _ field: String) throws(SofaError) -> [String] {
    guard let pointer else { return [] }
    var values: [String] = []
    values.reserveCapacity(count)
    for index in 0..<count { values.append(try decodeText(pointer[index], field)) }
    return values
}

/// A sub-message pointer of a decoded message, or an error naming the missing part.
func required<T>(_ pointer: UnsafeMutablePointer<T>?, _ what: String) throws(SofaError) -> T {
    guard let pointer else { throw SofaError(.malformedMessage, "malformed message: \(what) has no body") }
    return pointer.pointee
}
