internal import enum SofaQL.IndexKind

// Apart from the commands: SofaQL's IndexKind (the numbers of the `indexes` table) and the SDK's
// (what `createIndex` takes) share a name.

/// An index kind's name as storage's table of kinds says it (value, full-text, array); nil for a
/// number it does not know.
func indexKindName(_ kind: Int32) -> String? {
    IndexKind(rawValue: Int(kind))?.name
}
