internal import Foundation
internal import SofaCore

/// Vector distances, as LiteCore (Enterprise) exposes them as plain functions. Vectors are JSON
/// arrays of numbers.
///
///     euclidean_distance(a, b)        √Σ(aᵢ−bᵢ)²                 ([10,10], [13,14]) → 5.0
///     euclidean_distance(a, b, p)     (√Σ(aᵢ−bᵢ)²)^p; p = 2 gives the squared distance, 25.0
///     cosine_distance(a, b)           1 − a·b / (|a||b|)          ([10,0], [0,99]) → 1.0
///
/// Empty vectors are at euclidean distance 0 and have no cosine distance (null). MISSING → MISSING;
/// null, non-arrays, arrays of different lengths and non-numeric items → null.
///
/// LiteCore's `approx_vector_distance` needs a vector index and is the compiler's business;
/// LiteCore has no `dot` or `squared_euclidean_distance` function.
extension FunctionLibrary {
    static let vectors: [SQLFunction] = [
        function("cosine_distance", 2...2) { args in
            if let unknown = unknown(args) { return unknown }
            guard let (a, b) = vectorPair(args[0], args[1]) else { return .null }
            var (aa, ab, bb) = (0.0, 0.0, 0.0)
            for (x, y) in zip(a, b) {
                aa += x * x
                ab += x * y
                bb += y * y
            }
            return finite(1 - ab / (aa * bb).squareRoot())
        },
        function("euclidean_distance", 2...3) { args in
            if let unknown = unknown(args) { return unknown }
            guard let (a, b) = vectorPair(args[0], args[1]) else { return .null }
            let sum = zip(a, b).reduce(0.0) { total, pair in total + (pair.0 - pair.1) * (pair.0 - pair.1) }
            guard args.count == 3 else { return finite(sum.squareRoot()) }
            guard let power = args[2].number else { return .null }
            return finite(power == 2 ? sum : pow(sum.squareRoot(), power))
        },
    ]

    /// Two arrays of numbers of the same length, as doubles.
    private static func vectorPair(_ a: SQLValue, _ b: SQLValue) -> ([Double], [Double])? {
        guard case .json(.array(let x)) = a, case .json(.array(let y)) = b, x.count == y.count else { return nil }
        var (u, v) = ([Double](), [Double]())
        for (p, q) in zip(x, y) {
            guard let p = p.doubleValue, let q = q.doubleValue else { return nil }
            u.append(p)
            v.append(q)
        }
        return (u, v)
    }
}
