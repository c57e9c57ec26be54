internal import Foundation

/// MIME multipart bodies as CouchDB uses them: `multipart/related` document writes (the JSON
/// document first, then each attachment marked `"follows": true`, in order) and
/// `multipart/mixed` answers (`open_revs`, one JSON document per part).
enum Multipart {
    struct Part {
        var headers: [String: String]
        var body: [UInt8]
    }

    /// The boundary of a `multipart/…; boundary=…` content type; nil for any other type.
    static func boundary(of contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// The parts of `body`; nil when it is not well formed.
    static func parts(_ body: [UInt8], boundary: String) -> [Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        var starts: [Int] = []
        var index = 0
        while let found = find(delimiter, in: body, from: index) {
            starts.append(found)
            index = found + delimiter.count
        }
        guard starts.count >= 2 else { return nil }
        var parts: [Part] = []
        for (number, start) in starts.enumerated().dropLast() {
            var position = start + delimiter.count
            // The closing delimiter ("--boundary--") ends the body.
            if position + 1 < body.count, body[position] == 0x2D, body[position + 1] == 0x2D { break }
            guard let headersEnd = find(Array("\r\n\r\n".utf8), in: body, from: position) else { return nil }
            var headers: [String: String] = [:]
            for line in String(decoding: body[position..<headersEnd], as: UTF8.self).split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased().trimmingCharacters(in: .whitespaces)] =
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            position = headersEnd + 4
            var end = starts[number + 1]
            if end >= 2, body[end - 2] == 0x0D, body[end - 1] == 0x0A { end -= 2 }
            guard end >= position else { return nil }
            parts.append(Part(headers: headers, body: Array(body[position..<end])))
        }
        return parts
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        let first = needle[0]
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// A MIME boundary: 32 random hex digits.
    static func newBoundary() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
