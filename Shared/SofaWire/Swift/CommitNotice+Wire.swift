internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension CommitNotice {
    /// The topic frame of the notice: subscribers filter on a database by prefix.
    public var topic: [UInt8] { Array(database.utf8) + [0] + Array(collection.utf8) }

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

extension CommitNotice {
    /// What a notice is about and the highest sequence it carries, read from its bytes without
    /// decoding the changes (all a process that only wakes waiters needs).
    public struct Summary: Sendable, Equatable {
        public var database: String
        public var collection: String
        public var lastSequence: UInt64

        public init(database: String, collection: String, lastSequence: UInt64) {
            self.database = database
            self.collection = collection
            self.lastSequence = lastSequence
        }
    }

    /// The summary of encoded notice bytes; nil when they are not a well-formed notice. The last
    /// sequence is the batch's `last_sequence` or, if higher, its highest change sequence.
    public static func summary(_ bytes: [UInt8]) -> Summary? {
        bytes.withUnsafeBytes { buffer -> Summary? in
            var summary = Summary(database: "", collection: "", lastSequence: 0)
            let walked = WireFields.walk(buffer) { field, _, span in
                switch (field.number, field.wireType) {
                case (1, 2), (2, 2):
                    guard let text = String(validating: span.payload, as: UTF8.self) else { return false }
                    if field.number == 1 { summary.database = text } else { summary.collection = text }
                    return true
                case (3, 2):
                    return WireFields.walk(span.payload) { batchField, value, batchSpan in
                        switch (batchField.number, batchField.wireType) {
                        case (2, 0):
                            summary.lastSequence = max(summary.lastSequence, value)
                            return true
                        case (1, 2):
                            return WireFields.walk(batchSpan.payload) { changeField, sequence, _ in
                                if changeField.number == 1, changeField.wireType == 0 {
                                    summary.lastSequence = max(summary.lastSequence, sequence)
                                }
                                return true
                            }
                        default:
                            return true
                        }
                    }
                default:
                    return true
                }
            }
            return walked ? summary : nil
        }
    }
}
