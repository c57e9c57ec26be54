import SofaClient
import SofaCluster
import ArgumentParser
import SofaCore
import Foundation

/// The example's command: one notebook, one note, and the notes listed.
public enum NotesExampleMain {
    @MainActor
    public static func run(_ gateway: String?) async {
        do {
            let options = try GatewayOptions.parse(gateway.map { ["--gateway", $0] } ?? [])
            let client = try await options.connect()
            defer { client.close() }
            let app = try await NotesApp(client: client)
            defer { app.close() }
            let book = Notebook(title: "Kitchen")
            let bookID = try await app.notebooks.save(book)
            try await app.notes.save(Note(notebook: bookID, title: "Bread", text: "flour, water, salt", tags: ["baking"]))
            for note in try await app.notes.objects(view: "by_notebook", options: ["key": .string(bookID)]) {
                print("\(note.title): \(note.text)")
            }
        } catch {
            FileHandle.standardError.write(Data("sofa-notes-example: \(error)\n".utf8))
            exit(1)
        }
    }
}
