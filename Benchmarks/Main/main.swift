import SofaBench
import SofaCluster

await runCommand(Bench.self)
