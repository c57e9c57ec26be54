public import Foundation
public import SofaCore

/// Reads one blob's whole content from outside sofa-blob, without opening the store (which would
/// tidy the folder): the query workers' `BLOB()`. Read-only; the folder's key file (see
/// `KeyFile`) names the database key, or both keys while a rekey is under way, and the content
/// must have the blob's digest under one of them, so a wrong key or a damaged file is an error,
/// never other bytes.
public enum BlobFileReader {
    /// The content of blob `key` in the `Attachments/` folder `folder`; nil when it has no such blob.
    public static func contents(of key: BlobKey, in folder: URL) throws(SofaError) -> [UInt8]? {
        let path = folder.appendingPathComponent(key.fileName).path
        do {
            guard try fileSize(path) != nil else { return nil }
            var keyFile = try KeyFile.read(in: folder.path)
            while true {
                var failure: SofaError?
                for candidate in keyFile?.candidates ?? [nil] {
                    do {
                        let file = try PosixFile.openForReading(path, notFound: "no blob \(key)")
                        return try BlobReader(file: file, key: key, encryptionKey: candidate).contents()
                    } catch let error as SofaError {
                        if error.is(.notFound) { return nil }   // none, or deleted meanwhile (compaction)
                        failure = error
                    }
                }
                // A rekey may have started or ended between reading the key file and the blob:
                // with a key file that changed since, try again.
                let now = try KeyFile.read(in: folder.path)
                guard now != keyFile else {
                    throw failure ?? SofaError(.crypto, "blob \(key) cannot be read with the database's key")
                }
                keyFile = now
            }
        } catch let error as SofaError {
            throw error
        } catch {
            throw SofaError(.ioError, "blob \(key): \(error)")
        }
    }
}
