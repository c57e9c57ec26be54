internal import SofaCore
#if canImport(Glibc)
internal import Glibc
#endif

/// A request passed on by a process that only routes it (the gateway): the envelope fields it
/// routes by, read from the encoded `Request` without decoding the operation, and the encoded
/// bytes, which go on as they came with only the id and the deadline replaced.
///
/// Reading walks the top-level protobuf fields (a tag varint `field << 3 | wire type`, then a
/// varint, 8 or 4 bytes, or a length and that many bytes). `Request` numbers: id 1, database 2,
/// deadline 3, the operation from 10 on. E.g. `08 07 12 02 64 62 c2 01 00` is id 7, database
/// "db", an empty `bulk_write` (field 24).
public struct ForwardedRequest: Sendable, Equatable {
    public let id: UInt64
    public let database: String
    /// Wall-clock ms (0: none); a router may cut it before passing the request on.
    public var deadline: UInt64
    /// The user the request runs as when a service of the cluster names one (field 5; "" = the
    /// connection's own).
    public var actingUser: String = ""
    /// The field number of the operation (e.g. 24 for `bulk_write`); 0 when there is none.
    public let operationField: UInt32
    /// Every top-level field but the id and the deadline, encoded as received.
    let rest: [UInt8]
    /// Who sent it: the identity of the connection it came in on, and that connection's
    /// descriptor (set by the server that received it; empty and -1 otherwise).
    public var client: [UInt8] = []
    public var connection: Int32 = -1

    /// The envelope of `bytes`, if they are a well-formed protobuf message whose operation is one
    /// of `operations`; nil otherwise (the caller then decodes the request as usual, which names
    /// any problem).
    public static func peek(_ bytes: UnsafeRawBufferPointer, operations: Set<UInt32>,
                            accepts: ((UInt32, UnsafeRawBufferPointer) -> Bool)? = nil) -> ForwardedRequest? {
        var id: UInt64 = 0
        var deadline: UInt64 = 0
        var database = ""
        var operation: UInt32 = 0
        var actingUser = ""
        var rest: [UInt8] = []
        rest.reserveCapacity(bytes.count)
        let walked = WireFields.walk(bytes) { field, value, span in
            switch field.number {
            case 1 where field.wireType == 0: id = value
            case 3 where field.wireType == 0: deadline = value
            case 1, 3: return false
            case 2 where field.wireType == 2:
                guard let text = String(validating: span.payload, as: UTF8.self) else { return false }
                database = text
                rest.append(contentsOf: span.whole)
            case 5 where field.wireType == 2:
                guard let text = String(validating: span.payload, as: UTF8.self) else { return false }
                actingUser = text
                rest.append(contentsOf: span.whole)
            case 10...:
                guard operation == 0 || operation == field.number, field.wireType == 2 else { return false }
                operation = field.number
                if let accepts, operations.contains(operation), !accepts(operation, span.payload) { return false }
                rest.append(contentsOf: span.whole)
            default:
                rest.append(contentsOf: span.whole)
            }
            return true
        }
        guard walked, operations.contains(operation) else { return nil }
        return ForwardedRequest(id: id, database: database, deadline: deadline, actingUser: actingUser,
                                operationField: operation, rest: rest)
    }

    /// The varint field `number` of an encoded message (e.g. an operation's payload, as `accepts`
    /// gets it); nil when absent (proto3: zero) or when the bytes are not well formed.
    public static func varint(field number: UInt32, in message: UnsafeRawBufferPointer) -> UInt64? {
        var found: UInt64?
        let walked = WireFields.walk(message) { field, value, _ in
            if field.number == number, field.wireType == 0 { found = value }
            return true
        }
        return walked ? found : nil
    }

    /// What kind of work the request is, for a broker's estimate of how long it takes: a hash of
    /// its operation, database and collection and of the operation's fields, but for a query's
    /// parameters (runs of one prepared query with other parameters are one kind). The same
    /// within a process only.
    public var workKind: Int {
        var hasher = Hasher()
        hasher.combine(operationField)
        let operation = operationField
        rest.withUnsafeBytes { rest in
            _ = WireFields.walk(rest) { field, _, span in
                guard field.number == operation, field.wireType == 2 else {
                    hasher.combine(bytes: span.whole)
                    return true
                }
                _ = WireFields.walk(span.payload) { inner, _, innerSpan in
                    if !(operation == Self.queryField && inner.number == Self.queryParametersField) {
                        hasher.combine(bytes: innerSpan.whole)
                    }
                    return true
                }
                return true
            }
        }
        return hasher.finalize()
    }

    /// `Request.query`, and `QueryRequest.parameters`.
    static let queryField: UInt32 = OperationKind.query.rawValue
    static let queryParametersField: UInt32 = 3

    /// The same as bytes (for a message that carries it inside another, as the broker's frames do).
    public func bytes(id: UInt64, deadline: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24 + rest.count)
        WireFields.appendVarintField(1, id, to: &bytes)
        WireFields.appendVarintField(3, deadline, to: &bytes)
        bytes.append(contentsOf: rest)
        return bytes
    }

    /// The request as received, with `id` and `deadline` in place of its own.
    public func encoded(id: UInt64, deadline: UInt64) -> EncodedMessage {
        var head: [UInt8] = []
        head.reserveCapacity(24)
        WireFields.appendVarintField(1, id, to: &head)
        WireFields.appendVarintField(3, deadline, to: &head)
        return EncodedMessage.concatenating(head, rest)
    }
}

extension ForwardedRequest {
    /// What a `getDocument` request asks for, as its decoded `Request` would say it.
    public struct DocumentGet: Sendable, Equatable {
        public var collection: String
        public var id: String
        public var rev: String
        public var history: Bool
        public var openLeaves: Bool

        public init(collection: String, id: String, rev: String, history: Bool, openLeaves: Bool) {
            (self.collection, self.id, self.rev, self.history, self.openLeaves) = (collection, id, rev, history, openLeaves)
        }
    }

    /// The get this request asks for, read by walking its fields; nil when it is no plain, well
    /// formed `getDocument` (a repeated or unknown field, a NUL inside a string, bytes that are
    /// not UTF-8), and decoding it whole then says what it is. A router that answers gets itself
    /// reads them this way: decoding one through protobuf-c and back into Swift values was 7 % of
    /// the gateway's thread with 64 gets in flight.
    public var documentGet: DocumentGet? {
        guard operationField == OperationKind.getDocument.rawValue, !database.utf8.contains(0),
              !actingUser.utf8.contains(0) else { return nil }
        var collection: String?
        var operation: UnsafeRawBufferPointer?
        return rest.withUnsafeBytes { bytes -> DocumentGet? in
            let walked = WireFields.walk(bytes) { field, _, span in
                switch (field.number, field.wireType) {
                case (2, 2), (5, 2): return true  // the database and the acting user, read by `peek`
                case (4, 2) where collection == nil:
                    collection = WireFields.cString(span.payload)
                    return collection != nil
                case (OperationKind.getDocument.rawValue, 2) where operation == nil:
                    operation = span.payload
                    return true
                default: return false
                }
            }
            guard walked, let operation else { return nil }
            var id: String?, rev: String?, history: UInt64?, openLeaves: UInt64?
            let getWalked = WireFields.walk(operation) { field, value, span in
                switch (field.number, field.wireType) {
                case (1, 2) where id == nil:
                    id = String(validating: span.payload, as: UTF8.self)
                    return id != nil
                case (2, 2) where rev == nil:
                    rev = WireFields.cString(span.payload)
                    return rev != nil
                case (3, 0) where history == nil: history = value
                case (4, 0) where openLeaves == nil: openLeaves = value
                default: return false
                }
                return true
            }
            guard getWalked else { return nil }
            return DocumentGet(collection: collection ?? "", id: id ?? "", rev: rev ?? "",
                               history: (history ?? 0) != 0, openLeaves: (openLeaves ?? 0) != 0)
        }
    }
}

extension ForwardedRequest {
    /// `request` as a router would have received it (for code that starts from a decoded one).
    public init(_ request: Request) {
        let encoded = request.encoded()
        let peeked = encoded.withUnsafeBytes { Self.peek($0, operations: [request.operation.kind.rawValue]) }
        self = peeked ?? ForwardedRequest(id: request.id, database: request.database, deadline: request.deadline,
                                          operationField: 0, rest: [])
    }
}

/// The same for a `Response` passed back: its id (field 1) read and replaced, the rest untouched.
public enum ForwardedResponse {
    /// The id of an encoded response; nil when the bytes are not a well-formed message.
    public static func peekID(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        var id: UInt64 = 0
        let walked = WireFields.walk(bytes) { field, value, _ in
            if field.number == 1 {
                guard field.wireType == 0 else { return false }
                id = value
            }
            return true
        }
        return walked ? id : nil
    }

    /// `bytes` (a well-formed encoded response) with `id` as its id.
    public static func encoded(_ bytes: [UInt8], id: UInt64) -> EncodedMessage {
        bytes.withUnsafeBytes { encoded($0, id: id) }
    }

    /// The same from bytes in place, copied once: into the new message.
    public static func encoded(_ bytes: UnsafeRawBufferPointer, id: UInt64) -> EncodedMessage {
        var head: [UInt8] = []
        WireFields.appendVarintField(1, id, to: &head)
        var idBytes = 0
        _ = WireFields.walk(bytes) { field, _, span in
            if field.number == 1 { idBytes += span.whole.count }
            return true
        }
        let count = head.count + bytes.count - idBytes
        let pointer = malloc(max(count, 1))!
        head.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(pointer), byteCount: $0.count) }
        var offset = head.count
        _ = WireFields.walk(bytes) { field, _, span in
            if field.number != 1, span.whole.count > 0 {
                (pointer + offset).copyMemory(from: span.whole.baseAddress!, byteCount: span.whole.count)
                offset += span.whole.count
            }
            return true
        }
        return EncodedMessage(taking: pointer, count: offset)
    }
}

enum WireFields {
    struct Field {
        var number: UInt32
        var wireType: UInt8
    }

    struct Span {
        /// The whole field: tag, length and payload.
        var whole: UnsafeRawBufferPointer
        /// A length-delimited field's payload (empty for other wire types).
        var payload: UnsafeRawBufferPointer
    }

    /// Calls `visit` with each top-level field (its varint value for wire type 0); stops and
    /// returns false when `visit` does or the bytes are not a well-formed message.
    static func walk(_ bytes: UnsafeRawBufferPointer,
                     _ visit: (Field, UInt64, Span) -> Bool) -> Bool {
        var position = 0
        while position < bytes.count {
            let start = position
            guard let tag = varint(bytes, &position), tag >> 3 > 0, tag >> 3 <= 536_870_911 else { return false }
            let field = Field(number: UInt32(tag >> 3), wireType: UInt8(tag & 7))
            var value: UInt64 = 0
            var payload = UnsafeRawBufferPointer(start: nil, count: 0)
            switch field.wireType {
            case 0:
                guard let v = varint(bytes, &position) else { return false }
                value = v
            case 1, 5:
                let size = field.wireType == 1 ? 8 : 4
                guard bytes.count - position >= size else { return false }
                position += size
            case 2:
                guard let length = varint(bytes, &position), length <= UInt64(bytes.count - position) else { return false }
                payload = UnsafeRawBufferPointer(rebasing: bytes[position..<position + Int(length)])
                position += Int(length)
            default:
                return false
            }
            let whole = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
            guard visit(field, value, Span(whole: whole, payload: payload)) else { return false }
        }
        return true
    }

    /// A string field as protobuf-c's decoder reads it into Swift: UTF-8 without a NUL inside
    /// (it reads a C string, which would end there); nil otherwise.
    static func cString(_ bytes: UnsafeRawBufferPointer) -> String? {
        bytes.contains(0) ? nil : String(validating: bytes, as: UTF8.self)
    }

    static func varint(_ bytes: UnsafeRawBufferPointer, _ position: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count, shift < 64 {
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }

    /// Appends field `number` with `bytes`, length-delimited; empty bytes are left out, as proto3 does.
    static func appendBytesField(_ number: UInt32, _ bytes: [UInt8], to out: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        Varint.append(UInt64(number) << 3 | 2, to: &out)
        Varint.append(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    /// Appends field `number` with `value` as a varint; a zero is left out, as proto3 does.
    static func appendVarintField(_ number: UInt32, _ value: UInt64, to out: inout [UInt8]) {
        guard value != 0 else { return }
        Varint.append(UInt64(number) << 3, to: &out)
        Varint.append(value, to: &out)
    }
}

extension EncodedMessage {
    /// A message of `head` then `tail`, in memory from `malloc`.
    static func concatenating(_ head: [UInt8], _ tail: [UInt8]) -> EncodedMessage {
        let count = head.count + tail.count
        let pointer = malloc(max(count, 1))!
        head.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(pointer), byteCount: $0.count) }
        tail.withUnsafeBytes { (pointer + head.count).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(pointer), byteCount: $0.count) }
        return EncodedMessage(taking: pointer, count: count)
    }
}
