import SofaCore
import Testing

/// The names the CLI prints for error codes (`sofa: conflict (8): …`), one row per code.
@Suite struct ErrorNameTests {
    static let names: [(SofaError.Code, String)] = [
        (.assertionFailed, "assertion_failed"), (.unimplemented, "unimplemented"), (.badRevisionID, "bad_revision_id"),
        (.corruptRevisionData, "corrupt_revision_data"), (.notOpen, "not_open"), (.notFound, "not_found"),
        (.conflict, "conflict"), (.invalidParameter, "invalid_parameter"), (.unexpectedError, "unexpected_error"),
        (.cantOpenFile, "cant_open_file"), (.ioError, "io_error"), (.corruptData, "corrupt_data"), (.busy, "busy"),
        (.unsupported, "unsupported"), (.wrongFormat, "wrong_format"), (.crypto, "crypto"),
        (.invalidQuery, "invalid_query"), (.badDocID, "bad_doc_id"), (.timeout, "timeout"),
        (.unavailable, "unavailable"), (.messageTooLarge, "message_too_large"), (.malformedMessage, "malformed_message"),
        (.shuttingDown, "shutting_down"), (.badDatabaseName, "bad_database_name"), (.databaseExists, "database_exists"),
        (.badJSON, "bad_json"), (.cancelled, "cancelled"), (.unauthorized, "unauthorized"), (.forbidden, "forbidden"),
        (.invalidDesignDoc, "invalid_design_doc"), (.compilationError, "compilation_error"),
    ]

    @Test func everyCodeHasItsSnakeCaseName() {
        #expect(Set(Self.names.map(\.0.rawValue)) == Set(SofaError.Code.allCases.map(\.rawValue)), "a code is missing from the table")
        for (code, name) in Self.names {
            #expect(code.name == name)
            #expect(SofaError(code, "m").name == name)
        }
    }

    @Test func otherDomainsAreNamedByTheirDomain() {
        #expect(SofaError(.sqlite, 5, "database is locked").name == "sqlite")
        #expect(SofaError(.posix, 2, "no such file").name == "posix")
        #expect(SofaError(.sofa, 9999, "from a newer server").name == "error")
    }
}
