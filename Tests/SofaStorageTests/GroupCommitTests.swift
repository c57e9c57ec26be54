import SofaCore
import SofaStorage
import Testing

@Suite struct GroupCommitTests {
    @Test func concurrentWritesToDistinctDocumentsAllCommitWithDistinctSequences() async throws {
        try await withDatabase { _, db in
            let count = 1000
            let results = try await withThrowingTaskGroup(of: WriteResult.self) { group in
                for index in 0..<count {
                    group.addTask { try await db.write(put("doc-\(index)", ["n": .int(Int64(index))])) }
                }
                return try await group.reduce(into: [WriteResult]()) { $0.append($1) }
            }
            #expect(results.count == count)
            #expect(results.map(\.sequence).sorted() == Array(1...UInt64(count)))
            #expect(Set(results.map(\.id)).count == count)
            #expect(results.allSatisfy { $0.rev.generation == 1 })
            let info = try await db.info()
            #expect(info.documents == count)
            #expect(info.lastSequence == UInt64(count))
            // Each document holds the sequence its writer was told.
            for result in results.prefix(50) {
                #expect(try await db.read(id: result.id, rev: nil).sequence == result.sequence)
            }
        }
    }

    @Test func concurrentUpdatesOfOneRevisionHaveExactlyOneWinner() async throws {
        try await withDatabase { _, db in
            let base = try await db.write(put("hot", ["v": 0]))
            let writers = 50
            let outcomes = await withTaskGroup(of: Result<WriteResult, SofaError>.self) { group in
                for index in 1...writers {
                    group.addTask {
                        do {
                            return .success(try await db.write(put("hot", ["v": .int(Int64(index))], parent: base.rev)))
                        } catch let error as SofaError {
                            return .failure(error)
                        } catch {
                            return .failure(SofaError(.unexpectedError, "\(error)"))
                        }
                    }
                }
                return await group.reduce(into: [Result<WriteResult, SofaError>]()) { $0.append($1) }
            }
            let winners = outcomes.compactMap { try? $0.get() }
            let losers = outcomes.compactMap { outcome -> SofaError? in
                if case .failure(let error) = outcome { return error }
                return nil
            }
            #expect(winners.count == 1)
            #expect(losers.count == writers - 1)
            #expect(losers.allSatisfy { $0.is(.conflict) }, "\(losers.filter { !$0.is(.conflict) })")
            let winner = try #require(winners.first)
            #expect(winner.rev.generation == 2)
            #expect(winner.sequence == 2)
            let current = try await db.read(id: "hot", rev: nil)
            #expect(current.rev == winner.rev)
            #expect(try await db.info().lastSequence == 2)
        }
    }
}
