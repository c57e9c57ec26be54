internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension CommitNotice {
    /// The notice as protobuf bytes (`sofa.wire.CommitNotice`).
    public func encoded() -> [UInt8] {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__CommitNotice> = arena.message { sofa__wire__commit_notice__init($0) }
        message.pointee.database = arena.string(database)
        message.pointee.collection = arena.string(collection)
        message.pointee.batch = Reply.changesBatch(batch, arena)
        return pack(message)
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> CommitNotice {
        try withBytes(bytes) { (buffer) throws(SofaError) -> CommitNotice in
            try unpack(buffer, "commit notice", unpacker: { sofa__wire__commit_notice__unpack($0, $1, $2) }) { (message) throws(SofaError) -> CommitNotice in
                let m = message.pointee
                let batch = try m.batch.map { (b) throws(SofaError) in try Reply.decodeChangesBatch(b.pointee) }
                return CommitNotice(database: try decodeString(m.database, "notice.database"),
                                    collection: try decodeString(m.collection, "notice.collection"),
                                    batch: batch ?? ChangesBatch(changes: [], lastSequence: 0))
            }
        }
    }
}
