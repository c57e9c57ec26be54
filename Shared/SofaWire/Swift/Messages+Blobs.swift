/// A stored blob: its key (`sha1-` + the base64 of its SHA-1 digest) and its length in bytes.
///
/// Blobs cross the wire as a write session (`Op.blobWriteBegin` → `.blobWriteStarted(writeID:)`,
/// `Op.blobWriteChunk` at explicit offsets, `Op.blobWriteEnd` → `.blob(BlobInfo)`, or
/// `Op.blobWriteAbort`) and are read back range by range (`Op.blobRead` → `.blobData`), so no
/// message ever holds more than one chunk.
public struct BlobInfo: Sendable, Equatable, Hashable, Codable {
    public var key: String
    public var length: UInt64

    public init(key: String, length: UInt64) {
        self.key = key
        self.length = length
    }
}
