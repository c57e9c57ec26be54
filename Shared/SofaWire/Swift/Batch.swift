internal import SofaCore
#if canImport(Glibc)
internal import Glibc
#endif

/// Several calls in one message (`Batch` in sofa.proto): a message whose only field is `batch`
/// (field 90 of both `Request` and `Response`) holding whole encoded requests or responses.
///
/// Each call over ZeroMQ costs both processes a send, a receive, a wake-up of ZeroMQ's I/O
/// thread and a look-up of the client, whatever its size; a client with many small calls
/// waiting at once (gets from many tasks) sends them as one message instead, and the server
/// answers with the replies it has ready together. The items are taken out where ZeroMQ holds
/// the message, without a copy.
public enum WireBatch {
    /// `Request.batch` and `Response.batch`.
    public static let field: UInt32 = 90
    /// Calls larger than this go alone; a batch holds at most `maxBytes` of them, and at most
    /// `maxItems`: a receiver refuses a batch of more (a message of a few bytes per call would
    /// otherwise make a million calls at once of one message within the request size limit).
    public static let maxItemBytes = 8 << 10
    public static let maxBytes = 64 << 10
    public static let maxItems = 1024

    /// What a message is: a batch (its items, in order), or not one at all.
    public enum Contents {
        case single
        case items([UnsafeRawBufferPointer])
        /// A batch that is not well formed (a field other than the items, an item that is a
        /// batch itself): why.
        case malformed(String)
    }

    /// The contents of `bytes`. A batch is recognised by its first field (a call begins with
    /// another: its id); one that is not only a batch is malformed.
    public static func contents(_ bytes: UnsafeRawBufferPointer) -> Contents {
        // The tag of field 90, length-delimited, is the varint 722: d2 05.
        guard bytes.count >= 2, bytes[0] == 0xD2, bytes[1] == 0x05 else { return .single }
        var batch: UnsafeRawBufferPointer?
        let outer = WireFields.walk(bytes) { field, _, span in
            guard field.number == Self.field, field.wireType == 2, batch == nil else { return false }
            batch = span.payload
            return true
        }
        guard outer, let batch else { return .malformed("a batch message holds its batch and nothing else") }
        var items: [UnsafeRawBufferPointer] = []
        var nested = false
        let inner = WireFields.walk(batch) { field, _, span in
            guard field.number == 1, field.wireType == 2, items.count < maxItems else { return false }
            if span.payload.count >= 2, span.payload[0] == 0xD2, span.payload[1] == 0x05 {
                nested = true
                return false
            }
            items.append(span.payload)
            return true
        }
        if nested { return .malformed("a batch holds no batch") }
        if !inner, items.count == maxItems { return .malformed("a batch holds at most \(maxItems) calls") }
        guard inner else { return .malformed("a batch holds encoded calls only (its field 1)") }
        return .items(items)
    }

    /// The messages `message` carries: a batch's items, or itself (a malformed batch too, which
    /// decoding it then refuses); and whether it was a batch.
    public static func unpacked(_ message: [UInt8]) -> (messages: [[UInt8]], isBatch: Bool) {
        message.withUnsafeBytes { bytes in
            guard case .items(let items) = contents(bytes) else { return ([message], false) }
            return (items.map { Array($0) }, true)
        }
    }

    /// How messages of `sizes` go on the wire, in order: each range of their indices is one
    /// message, a batch of small ones (at most `maxBytes` and `maxItems`) or one alone (a large
    /// one, or a small one with none beside it). The one home of the bounds, for every sender.
    public static func groups(_ sizes: [Int]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var start = 0, bytes = 0
        for (index, size) in sizes.enumerated() {
            if size > maxItemBytes {
                if start < index { out.append(start..<index) }  // the small ones before it go first
                out.append(index..<index + 1)
                (start, bytes) = (index + 1, 0)
                continue
            }
            if index > start, bytes + size + 4 > maxBytes || index - start == maxItems {
                out.append(start..<index)
                (start, bytes) = (index, 0)
            }
            bytes += size + 4
        }
        if start < sizes.count { out.append(start..<sizes.count) }
        return out
    }

    /// `messages` as they go on the wire (`groups`): a batch as one message, one alone as itself.
    public static func grouped(_ messages: [[UInt8]]) -> [[UInt8]] {
        groups(messages.map(\.count)).map { range in
            range.count == 1 ? messages[range.lowerBound] : encoded(arrays: messages[range])
        }
    }

    /// One message holding `items` (each a whole encoded request, or response), in order.
    public static func encoded(_ items: [UnsafeRawBufferPointer]) -> EncodedMessage {
        let head = header(items.lazy.map(\.count))
        let count = head.count + items.reduce(0) { $0 + itemHeaderSize($1.count) + $1.count }
        let pointer = malloc(count)!
        var offset = 0
        func append(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            (pointer + offset).copyMemory(from: base, byteCount: bytes.count)
            offset += bytes.count
        }
        head.withUnsafeBytes { append($0) }
        var itemHead: [UInt8] = []
        itemHead.reserveCapacity(6)
        for item in items {
            itemHead.removeAll(keepingCapacity: true)
            appendItemHeader(item.count, to: &itemHead)
            itemHead.withUnsafeBytes { append($0) }
            append(item)
        }
        return EncodedMessage(taking: pointer, count: count)
    }

    /// The same, in an array.
    static func encoded(arrays items: some Collection<[UInt8]>) -> [UInt8] {
        var out = header(items.lazy.map(\.count))
        for item in items {
            appendItemHeader(item.count, to: &out)
            out += item
        }
        return out
    }

    /// A batch's tag and length, for items of `counts` bytes.
    private static func header(_ counts: some Sequence<Int>) -> [UInt8] {
        var out: [UInt8] = []
        Varint.append(UInt64(field) << 3 | 2, to: &out)
        Varint.append(UInt64(counts.reduce(0) { $0 + itemHeaderSize($1) + $1 }), to: &out)
        return out
    }

    /// An item's tag (field 1, length-delimited) and length.
    private static func appendItemHeader(_ count: Int, to out: inout [UInt8]) {
        out.append(0x0A)
        Varint.append(UInt64(count), to: &out)
    }

    private static func itemHeaderSize(_ count: Int) -> Int { 1 + Varint.size(UInt64(count)) }
}
