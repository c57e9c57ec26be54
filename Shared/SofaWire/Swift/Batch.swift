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

    /// One message holding `items` (each a whole encoded request, or response), in order.
    public static func encoded(_ items: [UnsafeRawBufferPointer]) -> EncodedMessage {
        var inner = 0
        for item in items { inner += 1 + Varint.size(UInt64(item.count)) + item.count }
        var head: [UInt8] = []
        Varint.append(UInt64(field) << 3 | 2, to: &head)
        Varint.append(UInt64(inner), to: &head)
        let count = head.count + inner
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
            itemHead.append(0x0A)  // field 1, length-delimited
            Varint.append(UInt64(item.count), to: &itemHead)
            itemHead.withUnsafeBytes { append($0) }
            append(item)
        }
        return EncodedMessage(taking: pointer, count: count)
    }

    /// `messages` as they go on the wire, in order: the small ones in batches of at most
    /// `maxBytes`, each larger one alone (so is a batch of one).
    public static func grouped(_ messages: [[UInt8]]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var group: [[UInt8]] = []
        var bytes = 0
        func flush() {
            if group.count == 1 { out.append(group[0]) } else if group.count > 1 { out.append(encoded(arrays: group)) }
            (group, bytes) = ([], 0)
        }
        for message in messages {
            guard message.count <= maxItemBytes else {
                flush()
                out.append(message)
                continue
            }
            if bytes + message.count + 4 > maxBytes || group.count == maxItems { flush() }
            group.append(message)
            bytes += message.count + 4
        }
        flush()
        return out
    }

    /// One message holding `items`, as `encoded`, in an array.
    static func encoded(arrays items: [[UInt8]]) -> [UInt8] {
        var inner = 0
        for item in items { inner += 1 + Varint.size(UInt64(item.count)) + item.count }
        var out: [UInt8] = []
        out.reserveCapacity(inner + 8)
        Varint.append(UInt64(field) << 3 | 2, to: &out)
        Varint.append(UInt64(inner), to: &out)
        for item in items {
            out.append(0x0A)
            Varint.append(UInt64(item.count), to: &out)
            out += item
        }
        return out
    }
}
