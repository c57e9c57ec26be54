internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension Request {
    /// The request as protobuf bytes (`sofa.wire.Request`).
    public func encoded() -> [UInt8] {
        withMessage { pack($0) }
    }

    /// The same bytes in memory from `malloc`, for a transport that sends them without a copy.
    public func encodedMessage() -> EncodedMessage {
        withMessage { packOwned($0) }
    }

    private func withMessage<R>(_ body: (UnsafeMutablePointer<Sofa__Wire__Request>) -> R) -> R {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__Request> = arena.message { sofa__wire__request__init($0) }
        message.pointee.id = id
        message.pointee.database = arena.string(database)
        message.pointee.collection = arena.string(collection)
        message.pointee.deadline_ms = deadline
        message.pointee.acting_user = arena.string(actingUser)
        if case .blobWriteChunk(let writeID, let offset, let bytes) = operation {
            // A chunk (a megabyte) is packed straight from its array, not copied into the arena.
            return bytes.withUnsafeBufferPointer { chunk in
                Op.encodeBlobWriteChunk(writeID, offset, borrowed(chunk), into: message, arena)
                return body(message)
            }
        }
        operation.encode(into: message, arena)
        return body(message)
    }

    /// Decodes `sofa.wire.Request` bytes; anything else is a `.malformedMessage` error. A bulk
    /// write of more than `maxBulkItems` items is refused (`BulkLimit.refusal`) before any item
    /// is converted: a server whose socket thread decodes its requests spends nothing on it.
    public static func decode(_ bytes: UnsafeRawBufferPointer, maxBulkItems: Int = .max) throws(SofaError) -> Request {
        // Counted on the encoded bytes first: protobuf-c would unpack every item before the
        // count could be read (200,000 items: ~180 ms of the socket thread; counting: ~1 ms).
        if maxBulkItems < .max, let count = BulkLimit.itemCount(bytes), count > maxBulkItems {
            throw BulkLimit.refusal(count: count, limit: maxBulkItems)
        }
        if let chunk = BlobChunkDecoding.request(bytes) { return chunk }
        return try unpacked(bytes, maxBulkItems: maxBulkItems)
    }

    /// The same through protobuf-c's unpacked tree, whatever the operation.
    static func unpacked(_ bytes: UnsafeRawBufferPointer, maxBulkItems: Int = .max) throws(SofaError) -> Request {
        try unpack(bytes, "request", unpacker: { sofa__wire__request__unpack($0, $1, $2) }) { (message) throws(SofaError) -> Request in
            let m = message.pointee
            if m.op_case == SOFA__WIRE__REQUEST__OP_BULK_WRITE, let op = m.bulk_write, op.pointee.n_items > maxBulkItems {
                throw BulkLimit.refusal(count: op.pointee.n_items, limit: maxBulkItems)
            }
            return Request(id: m.id, database: try decodeString(m.database, "database"),
                           collection: try decodeString(m.collection, "collection"),
                           deadline: m.deadline_ms, actingUser: try decodeString(m.acting_user, "acting user"),
                           operation: try Op.decode(m))
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> Request {
        try withBytes(bytes) { (buffer) throws(SofaError) -> Request in try decode(buffer) }
    }
}

extension Request {
    /// The request id from the first bytes of an encoded request, without decoding the rest, so
    /// that a request too large or too broken to decode can still be answered with its id.
    /// (Field 1, a varint, is written first: its tag byte is 0x08.)
    public static func peekID(_ head: [UInt8]) -> UInt64? {
        guard head.first == 0x08 else { return nil }
        var value: UInt64 = 0
        for (index, byte) in head.dropFirst().prefix(10).enumerated() {
            value |= UInt64(byte & 0x7F) << (7 * UInt64(index))
            if byte & 0x80 == 0 { return value }
        }
        return nil
    }
}

/// A `blobWriteChunk` request decoded by walking its fields, so that its bytes (a megabyte) are
/// copied once, from the received message into the operation's array; protobuf-c would copy them
/// into its unpacked tree first, and a process that streams chunks would hold each one three
/// times (measured in sofa-blob: every 8 MiB growth of its heap came while a chunk was copied).
enum BlobChunkDecoding {
    /// The request, or nil when `bytes` are anything but a plain, well-formed chunk request (the
    /// general decoder then decodes it, or names what is wrong with it).
    static func request(_ bytes: UnsafeRawBufferPointer) -> Request? {
        // Every request decoded comes here first: the walk allocates nothing and stops at the
        // first field that shows it is no plain chunk request (the operation, mostly).
        var id: UInt64 = 0, deadline: UInt64 = 0
        var database: UnsafeRawBufferPointer?, collection: UnsafeRawBufferPointer?, actingUser: UnsafeRawBufferPointer?
        var operation: UnsafeRawBufferPointer?
        let walked = WireFields.walk(bytes) { field, value, span in
            switch (field.number, field.wireType) {
            case (1, 0): id = value
            case (3, 0): deadline = value
            case (2, 2): database = span.payload
            case (4, 2): collection = span.payload
            case (5, 2): actingUser = span.payload
            case (OperationKind.blobWriteChunk.rawValue, 2) where operation == nil: operation = span.payload
            default: return false
            }
            return true
        }
        /// A string field as the general decoder reads it: a C string, so an embedded NUL goes that way.
        func text(_ bytes: UnsafeRawBufferPointer?) -> String? { bytes.map(WireFields.cString) ?? "" }
        guard walked, let operation, let databaseName = text(database), let collectionName = text(collection),
              let actingUserName = text(actingUser) else { return nil }
        var writeID: UInt64 = 0, offset: UInt64 = 0
        var data: UnsafeRawBufferPointer?
        let chunkWalked = WireFields.walk(operation) { field, value, span in
            switch (field.number, field.wireType) {
            case (1, 0): writeID = value
            case (2, 0): offset = value
            case (3, 2) where data == nil: data = span.payload
            default: return false
            }
            return true
        }
        guard chunkWalked else { return nil }
        return Request(id: id, database: databaseName, collection: collectionName, deadline: deadline, actingUser: actingUserName,
                       operation: .blobWriteChunk(writeID: writeID, offset: offset, bytes: data.map { Array($0) } ?? []))
    }
}

/// The bound on the items of one bulk write (`SOFA_MAX_BULK_ITEMS`), as storage and the wire
/// decoder both refuse it.
public enum BulkLimit {
    /// The items of an encoded request's bulk write (`Request.bulk_write`, field 24; its
    /// `items`, field 1), counted without decoding them; nil when the request is no bulk write
    /// or not well formed (decoding then says why).
    public static func itemCount(_ request: UnsafeRawBufferPointer) -> Int? {
        var count: Int?
        let walked = WireFields.walk(request) { field, _, span in
            guard field.number == OperationKind.bulkWrite.rawValue, field.wireType == 2 else { return true }
            count = itemCount(bulkWrite: span.payload)
            return count != nil
        }
        return walked ? count : nil
    }

    /// The items of an encoded `BulkWrite` (the operation's payload, as a router sees it); nil
    /// when the bytes are not well formed.
    public static func itemCount(bulkWrite payload: UnsafeRawBufferPointer) -> Int? {
        var items = 0
        let walked = WireFields.walk(payload) { item, _, _ in
            if item.number == 1 { items += 1 }
            return true
        }
        return walked ? items : nil
    }

    public static func refusal(count: Int, limit: Int) -> SofaError {
        SofaError(.messageTooLarge, "a bulk write of \(count) items is over the limit of \(limit) items per "
                  + "request (SOFA_MAX_BULK_ITEMS): nothing was written; send it in several requests")
    }
}

/// Whether an encoded write names a design document (`_design/…`), read without decoding it: a
/// router lets only database admins write those, and passes the other writes on undecoded.
public enum DesignWrites {
    static let prefix = Array("_design/".utf8)

    /// For a write passed through (`putDocument`, `deleteDocument`, `insertRevision`,
    /// `bulkWrite`) given its operation's payload: whether any document it writes is a design
    /// document. Bytes that are not well formed count as one (decoding then names the problem).
    public static func touchesDesignDocument(operation: UInt32, payload: UnsafeRawBufferPointer) -> Bool {
        switch OperationKind(rawValue: operation) {
        case .putDocument?, .deleteDocument?, .insertRevision?: return !idIsPlain(payload)
        case .bulkWrite?:
            // BulkWrite.items (1) → BulkItem.put (1) or .insert (2) → its id (1).
            var plain = true
            let walked = WireFields.walk(payload) { item, _, span in
                guard item.number == 1, item.wireType == 2 else { return true }
                return WireFields.walk(span.payload) { write, _, inner in
                    guard write.number == 1 || write.number == 2, write.wireType == 2 else { return true }
                    if !idIsPlain(inner.payload) { plain = false }
                    return plain
                }
            }
            return !(walked && plain)
        default: return false
        }
    }

    /// Whether a `PutDocument`/`DeleteDocument`/`InsertRevision` (id: field 1) is well formed and
    /// names no design document.
    private static func idIsPlain(_ message: UnsafeRawBufferPointer) -> Bool {
        var plain = true
        let walked = WireFields.walk(message) { field, _, span in
            if field.number == 1, field.wireType == 2, span.payload.starts(with: prefix) { plain = false }
            return plain
        }
        return walked && plain
    }
}
