internal import CZlib

/// Request bodies sent with `Content-Encoding: gzip` (or `deflate`), inflated with zlib up to a
/// limit: a small body that inflates beyond it is refused as too large, not held.
enum Gzip {
    enum Failure: Error {
        case invalid
        case tooLarge
    }

    static func inflate(_ compressed: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // 15 + 32: a zlib or gzip header, detected.
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw .invalid }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var input = compressed
        var status: Int32 = Z_OK
        try input.withUnsafeMutableBufferPointer { (inputBuffer) throws(Failure) in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { out -> Int in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END || (status == Z_BUF_ERROR && produced > 0) else { throw .invalid }
                guard output.count + produced <= limit else { throw .tooLarge }
                output.append(contentsOf: chunk[0..<produced])
                if status == Z_BUF_ERROR && stream.avail_in == 0 { throw .invalid }
            } while status != Z_STREAM_END
        }
        return output
    }
}
