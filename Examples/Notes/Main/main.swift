import NotesExample
import SofaClient
import SofaCluster

// sofa-notes-example [GATEWAY]: writes a notebook and a note into the local cluster's `notes`
// package and lists the notes (a cluster from `sofa up`; its first admin's credentials).
await NotesExampleMain.run(CommandLine.arguments.dropFirst().first)
