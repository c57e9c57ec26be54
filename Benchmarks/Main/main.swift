import SofaBench

await Bench.runMain()
