import SofaCLI

await SofaCommand.runMain()
