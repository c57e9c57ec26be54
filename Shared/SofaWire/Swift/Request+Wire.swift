internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension Request {
    /// The request as protobuf bytes (`sofa.wire.Request`).
    public func encoded() -> [UInt8] {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__Request> = arena.message { sofa__wire__request__init($0) }
        message.pointee.id = id
        message.pointee.database = arena.string(database)
        message.pointee.deadline_ms = deadline
        switch operation {
        case .health(let service):
            let op: UnsafeMutablePointer<Sofa__Wire__Health> = arena.message { sofa__wire__health__init($0) }
            op.pointee.service = arena.string(service)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_HEALTH
            message.pointee.health = op
        case .clusterStatus:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CLUSTER_STATUS
            message.pointee.cluster_status = arena.message { sofa__wire__cluster_status__init($0) }
        case .createDatabase:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_CREATE_DATABASE
            message.pointee.create_database = arena.message { sofa__wire__create_database__init($0) }
        case .deleteDatabase:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_DATABASE
            message.pointee.delete_database = arena.message { sofa__wire__delete_database__init($0) }
        case .listDatabases:
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_LIST_DATABASES
            message.pointee.list_databases = arena.message { sofa__wire__list_databases__init($0) }
        case .putDocument(let docID, let rev, let body, let deleted):
            let op: UnsafeMutablePointer<Sofa__Wire__PutDocument> = arena.message { sofa__wire__put_document__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            op.pointee.body = arena.bytes(body)
            op.pointee.deleted = deleted ? 1 : 0
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_PUT_DOCUMENT
            message.pointee.put_document = op
        case .getDocument(let docID, let rev):
            let op: UnsafeMutablePointer<Sofa__Wire__GetDocument> = arena.message { sofa__wire__get_document__init($0) }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_GET_DOCUMENT
            message.pointee.get_document = op
        case .deleteDocument(let docID, let rev):
            let op: UnsafeMutablePointer<Sofa__Wire__DeleteDocument> = arena.message {
                sofa__wire__delete_document__init($0)
            }
            op.pointee.id = arena.bytes(docID)
            op.pointee.rev = arena.string(rev)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_DELETE_DOCUMENT
            message.pointee.delete_document = op
        case .echo(let payload, let delayMs, let service):
            let op: UnsafeMutablePointer<Sofa__Wire__Echo> = arena.message { sofa__wire__echo__init($0) }
            op.pointee.payload = arena.bytes(payload)
            op.pointee.delay_ms = delayMs
            op.pointee.service = arena.string(service)
            message.pointee.op_case = SOFA__WIRE__REQUEST__OP_ECHO
            message.pointee.echo = op
        }
        return pack(message)
    }

    /// Decodes `sofa.wire.Request` bytes; anything else is a `.malformedMessage` error.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SofaError) -> Request {
        try unpack(bytes, "request", unpacker: { sofa__wire__request__unpack(nil, $0, $1) },
                   free: { sofa__wire__request__free_unpacked($0, nil) }) { (message) throws(SofaError) -> Request in
            let m = message.pointee
            let operation: Op
            switch m.op_case {
            case SOFA__WIRE__REQUEST__OP_HEALTH:
                operation = .health(service: try decodeString(m.health?.pointee.service, "health.service"))
            case SOFA__WIRE__REQUEST__OP_CLUSTER_STATUS:
                operation = .clusterStatus
            case SOFA__WIRE__REQUEST__OP_CREATE_DATABASE:
                operation = .createDatabase
            case SOFA__WIRE__REQUEST__OP_DELETE_DATABASE:
                operation = .deleteDatabase
            case SOFA__WIRE__REQUEST__OP_LIST_DATABASES:
                operation = .listDatabases
            case SOFA__WIRE__REQUEST__OP_PUT_DOCUMENT:
                guard let op = m.put_document?.pointee else { throw missing("putDocument") }
                operation = .putDocument(id: try decodeText(op.id, "putDocument.id"),
                                         rev: try decodeString(op.rev, "putDocument.rev"),
                                         body: decodeBytes(op.body), deleted: op.deleted != 0)
            case SOFA__WIRE__REQUEST__OP_GET_DOCUMENT:
                guard let op = m.get_document?.pointee else { throw missing("getDocument") }
                operation = .getDocument(id: try decodeText(op.id, "getDocument.id"),
                                         rev: try decodeString(op.rev, "getDocument.rev"))
            case SOFA__WIRE__REQUEST__OP_DELETE_DOCUMENT:
                guard let op = m.delete_document?.pointee else { throw missing("deleteDocument") }
                operation = .deleteDocument(id: try decodeText(op.id, "deleteDocument.id"),
                                            rev: try decodeString(op.rev, "deleteDocument.rev"))
            case SOFA__WIRE__REQUEST__OP_ECHO:
                guard let op = m.echo?.pointee else { throw missing("echo") }
                operation = .echo(payload: decodeBytes(op.payload), delayMs: op.delay_ms,
                                  service: try decodeString(op.service, "echo.service"))
            default:
                throw SofaError(.malformedMessage,
                                "malformed request \(m.id): no operation, or one this process does not know")
            }
            return Request(id: m.id, database: try decodeString(m.database, "database"),
                           deadline: m.deadline_ms, operation: operation)
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

private func missing(_ what: String) -> SofaError {
    SofaError(.malformedMessage, "malformed request: operation \(what) has no body")
}
