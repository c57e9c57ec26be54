internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension WorkerFrame {
    /// The frame as protobuf bytes (`sofa.wire.WorkerFrame`).
    public func encoded() -> [UInt8] {
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

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SofaError) -> WorkerFrame {
        try unpack(bytes, "worker frame", unpacker: { sofa__wire__worker_frame__unpack($0, $1, $2) }) { (message) throws(SofaError) -> WorkerFrame in
            let m = message.pointee
            guard let kind = Kind(rawValue: Int32(bitPattern: m.kind.rawValue)) else {
                throw SofaError(.malformedMessage, "malformed worker frame: unknown kind \(m.kind.rawValue)")
            }
            return WorkerFrame(kind: kind, instance: try decodeString(m.instance, "instance"), pid: m.pid,
                               service: try decodeString(m.service, "service"), payload: decodeBytes(m.payload),
                               requestID: m.request_id, capacity: m.capacity, batches: m.batches != 0)
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> WorkerFrame {
        try withBytes(bytes) { (buffer) throws(SofaError) -> WorkerFrame in try decode(buffer) }
    }
}
