internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension Response {
    /// The response as protobuf bytes (`sofa.wire.Response`).
    public func encoded() -> [UInt8] {
        withMessage { pack($0) }
    }

    /// The same bytes in memory from `malloc`, for a transport that sends them without a copy.
    public func encodedMessage() -> EncodedMessage {
        withMessage { packOwned($0) }
    }

    private func withMessage<R>(_ body: (UnsafeMutablePointer<Sofa__Wire__Response>) -> R) -> R {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__Response> = arena.message { sofa__wire__response__init($0) }
        message.pointee.id = id
        switch outcome {
        case .failure(let error):
            message.pointee.error = encodeError(error, arena)
        case .success(.blobData(let bytes, let totalLength)):
            // A blob range (up to megabytes) is packed straight from its array, not copied into the arena.
            return bytes.withUnsafeBufferPointer { range in
                Reply.encodeBlobData(borrowed(range), totalLength, into: message, arena)
                return body(message)
            }
        case .success(let reply):
            reply.encode(into: message, arena)
        }
        return body(message)
    }

    /// Decodes `sofa.wire.Response` bytes; bytes that are no `Response` at all are a
    /// `.malformedMessage` error. A `Response` whose id reads but whose content does not make
    /// sense decodes as that call's `.malformedMessage` failure, so the caller hears of it at once.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SofaError) -> Response {
        try unpack(bytes, "response", unpacker: { sofa__wire__response__unpack($0, $1, $2) }) { (message) throws(SofaError) -> Response in
            let m = message.pointee
            do throws(SofaError) {
                if let error = m.error?.pointee {
                    return .failure(m.id, try decodeError(error))
                }
                return .ok(m.id, try Reply.decode(m))
            } catch {
                return .failure(m.id, SofaError(.malformedMessage, "the peer's answer is malformed: \(error.message)"))
            }
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> Response {
        try withBytes(bytes) { (buffer) throws(SofaError) -> Response in try decode(buffer) }
    }
}

func encodeError(_ error: SofaError, _ arena: Arena) -> UnsafeMutablePointer<Sofa__Wire__Error> {
    let wire: UnsafeMutablePointer<Sofa__Wire__Error> = arena.message { sofa__wire__error__init($0) }
    wire.pointee.domain = arena.string(error.domain.rawValue)
    wire.pointee.code = error.code
    wire.pointee.message = arena.string(error.message)
    return wire
}

func decodeError(_ error: Sofa__Wire__Error) throws(SofaError) -> SofaError {
    let domain = SofaError.Domain(rawValue: try decodeString(error.domain, "error.domain")) ?? .sofa
    return SofaError(domain, error.code, try decodeString(error.message, "error.message"))
}
