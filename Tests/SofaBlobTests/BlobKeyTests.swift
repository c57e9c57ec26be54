import SofaTestSupport
import Foundation
import SofaCore
@testable import SofaBlob
@testable import SofaFiles
import Testing

@Suite struct BlobKeyTests {
    /// content → key text → file name
    static let valid: [(content: String, key: String, fileName: String)] = [
        ("This is a blob to store in the store!", "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=", "QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob"),
        ("", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "2jmj7l5rSw0yVb_vlWAYkK_YBwk=.blob"),
        ("hello", "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00=", "qvTGHdzF6KLavt4PO0gs2a6pQ00=.blob"),
        // 1,000 lines "This is line 000.\n" … "This is line 999.\n" (18,000 bytes), as LiteCore streams them.
        ((0..<1000).map { "This is line \(String(repeating: "0", count: 3 - String($0).count))\($0).\n" }.joined(),
         "sha1-0htkjBHcrTyIk9K8e1zZq47yWxw=", "0htkjBHcrTyIk9K8e1zZq47yWxw=.blob"),
    ]

    @Test(arguments: valid)
    func keyOfContent(content: String, key: String, fileName: String) throws {
        let parsed = try BlobKey.parse(key)
        #expect(BlobKey.of(Array(content.utf8)) == parsed)
        #expect(parsed.description == key)
        #expect(parsed.fileName == fileName)
        #expect(BlobKey(fileName: fileName) == parsed)
        #expect(BlobKey.tryParse(key) == parsed)
    }

    /// The text of a digest of twenty 0x55 bytes, both ways.
    @Test func digestOfRepeatedBytes() throws {
        let key = BlobKey(digest: [UInt8](repeating: 0x55, count: 20))
        #expect(key.description == "sha1-VVVVVVVVVVVVVVVVVVVVVVVVVVU=")
        #expect(try BlobKey.parse("sha1-VVVVVVVVVVVVVVVVVVVVVVVVVVU=") == key)
    }

    @Test func digestBytes() throws {
        let key = try BlobKey.parse("sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=")
        #expect(key.digest.hex == "427796a39218210d19adb086d215cf182ea3cbb1")
    }

    static let invalid: [String] = [
        "", "sha1-", "sha1", "QneWo5IYIQ0ZrbCG0hXPGC6jy7E=",
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E",            // no padding
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E==",          // too long
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7F=",           // non-canonical: unused bits set
        "SHA1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=", "sha256-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=",
        " sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=", "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E= ",
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=\0", "sha1-QneWo5IYIQ0Zr\0CG0hXPGC6jy7E=",
        "sha1-2jmj7l5rSw0yVb_vlWAYkK_YBwk=",           // the file-name alphabet is not the key's
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7=E", "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7é=",
        "sha1-../../../../../../../etc/pa=", "sha1-..%2F..%2F..%2Fetc%2Fpasswd=",
        "sha1-/etc/passwd/etc/passwd/etc/pa=", "sha1-QneWo5IYIQ0Zr\\CG0hXPGC6jy7E=",
        "sha1-427796a39218210d19adb086d215cf182ea3cbb1",
        "rot13-xxxx", "sha1-VVVVVVVVVVVVVVVVVVVVVV", "sha1-VVVVVVVVVVVVVVVVVVVVVVVVVVVVVVU",
    ]

    @Test(arguments: invalid)
    func rejected(text: String) {
        #expect(BlobKey.tryParse(text) == nil)
        let error = expectError(.invalidParameter) { try BlobKey.parse(text) }
        #expect(error?.message.contains("invalid blob key") == true)
    }

    static let badFileNames: [String] = [
        "", ".blob", "QneWo5IYIQ0ZrbCG0hXPGC6jy7E=", "QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob.rekey",
        "QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.BLOB", "2jmj7l5rSw0yVb/vlWAYkK/YBwk=.blob", "../QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob",
        "/etc/passwd", "../../../../../../../../etc/.blob", ".sofa-keystate", "incoming-0011.tmp",
        "sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob", "QneWo5IYIQ0ZrbCG0hXPGC6jy7F=.blob",
    ]

    @Test(arguments: badFileNames)
    func notABlobFile(name: String) {
        #expect(BlobKey(fileName: name) == nil)
    }

    /// No digest, however its base64 looks (`/`, `+`, `=`), names a path outside the folder.
    @Test func noPathTraversal() throws {
        var random = SplitMix64(seed: 7)
        let crafted: [[UInt8]] = [[UInt8](repeating: 0xFF, count: 20), [UInt8](repeating: 0xFB, count: 20),
                                  [UInt8](repeating: 0, count: 20), [UInt8](repeating: 0x2E, count: 20)]
        try withStore(.plain) { store throws in
            let folder = store.directory.standardizedFileURL.path
            for digest in crafted + (0..<500).map({ _ in random.bytes(20) }) {
                let key = BlobKey(digest: digest)
                let name = key.fileName
                #expect(!name.contains("/") && !name.contains("..") && !name.hasPrefix("."), "\(name)")
                #expect(name.utf8.allSatisfy { $0 >= 0x2B && $0 < 0x7F }, "\(name)")
                let path = URL(fileURLWithPath: store.filePath(key)).standardizedFileURL
                #expect(path.deletingLastPathComponent().path == folder)
                #expect(BlobKey(fileName: name) == key)
                #expect(try BlobKey.parse(key.description) == key)
            }
            #expect(BlobKey(digest: crafted[0]).fileName == "__________________________8=.blob")
        }
    }
}
