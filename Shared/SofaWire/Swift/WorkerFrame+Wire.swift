internal import CProtobufC
internal import SofaWireC
public import SofaCore

/// A worker frame is written and read here field by field, not through protobuf-c: every query
/// crosses the broker in two of them (its request and its reply), and the frame only wraps those
/// bytes. Measured at 16 lookups in flight, protobuf-c's pack and unpack (an arena, the C
/// struct, a copy of the payload each way) were about 6 % of the gateway's socket thread and 5 %
/// of the worker's. The bytes are the ones protobuf-c makes (`protobufEncoded`), and a frame
/// protobuf-c would refuse is refused here too (`WorkerFrameWireTests` holds both to that).
extension WorkerFrame {
    /// The frame as protobuf bytes (`sofa.wire.WorkerFrame`): its fields in order, proto3's
    /// defaults left out, a string up to its first NUL (protobuf-c writes C strings).
    public func encoded() -> [UInt8] {
        let instance = Self.cStringBytes(self.instance), service = Self.cStringBytes(self.service)
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + instance.count + service.count + 40)
        WireFields.appendVarintField(1, UInt64(UInt32(bitPattern: kind.rawValue)), to: &out)
        WireFields.appendBytesField(2, instance, to: &out)
        WireFields.appendVarintField(3, UInt64(pid), to: &out)
        WireFields.appendBytesField(4, service, to: &out)
        WireFields.appendBytesField(5, payload, to: &out)
        WireFields.appendVarintField(6, requestID, to: &out)
        WireFields.appendVarintField(7, UInt64(capacity), to: &out)
        WireFields.appendVarintField(8, batches ? 1 : 0, to: &out)
        return out
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SofaError) -> WorkerFrame {
        var frame = WorkerFrame(kind: .ready)
        var kind: UInt32 = 0
        // A string is read from its last occurrence (the last one wins, as it does for every
        // field), so it is checked once the walk is done.
        var instance: UnsafeRawBufferPointer?, service: UnsafeRawBufferPointer?
        let wellFormed = WireFields.walk(bytes) { field, value, span in
            // A known field with another wire type is not this message (protobuf-c refuses it).
            switch (field.number, field.wireType) {
            case (1, 0): kind = UInt32(truncatingIfNeeded: value)
            case (3, 0): frame.pid = UInt32(truncatingIfNeeded: value)
            case (6, 0): frame.requestID = value
            case (7, 0): frame.capacity = UInt32(truncatingIfNeeded: value)
            // A bool of any wire type is true when a byte after its tag has a bit set below its
            // top one (protobuf-c's rule; for a varint, a value that is not zero).
            case (8, _): frame.batches = Self.afterTag(span.whole).contains { $0 & 0x7F != 0 }
            case (5, 2): frame.payload = Array(span.payload)
            case (2, 2): instance = span.payload
            case (4, 2): service = span.payload
            case (1...8, _): return false
            default: break  // a field this version does not know: skipped, as protobuf-c does
            }
            return true
        }
        guard wellFormed else {
            throw SofaError(.malformedMessage, "malformed worker frame: \(bytes.count) bytes that are not a protobuf worker frame")
        }
        if let instance { frame.instance = try Self.cString(instance, "instance") }
        if let service { frame.service = try Self.cString(service, "service") }
        guard let known = Kind(rawValue: Int32(bitPattern: kind)) else {
            throw SofaError(.malformedMessage, "malformed worker frame: unknown kind \(kind)")
        }
        frame.kind = known
        return frame
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> WorkerFrame {
        try withBytes(bytes) { (buffer) throws(SofaError) -> WorkerFrame in try decode(buffer) }
    }

    /// The same bytes made by protobuf-c, which `encoded` must equal (for the tests).
    func protobufEncoded() -> [UInt8] {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__WorkerFrame> = arena.message {
            sofa__wire__worker_frame__init($0)
        }
        message.pointee.kind = Sofa__Wire__WorkerFrame__Kind(rawValue: UInt32(kind.rawValue))
        message.pointee.instance = arena.string(instance)
        message.pointee.pid = pid
        message.pointee.service = arena.string(service)
        message.pointee.payload = arena.bytes(payload)
        message.pointee.request_id = requestID
        message.pointee.capacity = capacity
        message.pointee.batches = batches ? 1 : 0
        return pack(message)
    }

    /// `bytes` read by protobuf-c, which `decode` must agree with (for the tests).
    static func protobufDecode(_ bytes: [UInt8]) throws(SofaError) -> WorkerFrame {
        try withBytes(bytes) { (buffer) throws(SofaError) -> WorkerFrame in
            try unpack(buffer, "worker frame", unpacker: { sofa__wire__worker_frame__unpack($0, $1, $2) }) { (message) throws(SofaError) -> WorkerFrame in
                let m = message.pointee
                guard let kind = Kind(rawValue: Int32(bitPattern: m.kind.rawValue)) else {
                    throw SofaError(.malformedMessage, "malformed worker frame: unknown kind \(m.kind.rawValue)")
                }
                return WorkerFrame(kind: kind, instance: try decodeString(m.instance, "instance"), pid: m.pid,
                                   service: try decodeString(m.service, "service"), payload: decodeBytes(m.payload),
                                   requestID: m.request_id, capacity: m.capacity, batches: m.batches != 0)
            }
        }
    }

    /// A field's bytes after its tag.
    private static func afterTag(_ whole: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var position = 0
        _ = WireFields.varint(whole, &position)
        return UnsafeRawBufferPointer(rebasing: whole[position...])
    }

    /// A string's UTF-8 up to its first NUL, as a C string carries it.
    private static func cStringBytes(_ text: String) -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard let end = utf8.firstIndex(of: 0) else { return utf8 }
        return Array(utf8[..<end])
    }

    /// A string field read as protobuf-c and `decodeString` read it: up to its first NUL, and it
    /// must be valid UTF-8.
    private static func cString(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(SofaError) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self) else {
            throw SofaError(.malformedMessage, "malformed message: field \(field) is not valid UTF-8")
        }
        return text
    }
}
