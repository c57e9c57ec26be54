internal import Foundation
internal import SofaCore

/// Math functions. Results are REAL (as in LiteCore, `abs(-3)` is `3.0`), except `sign` and
/// `idiv`, which are INTEGER. `log` is base 10, `ln` natural; `atan2(y, x)` is the angle of
/// (x, y). `round`, `round_even` and `trunc` take an optional number of decimal places
/// (`round(2.567, 2)` is `2.57`); `round` rounds halves away from zero, `round_even` to even.
/// `div(a, b)` is a / b as REAL; `idiv(a, b)` truncates both to integers first
/// (`idiv(7.9, 2)` is `3`). Division by zero is null.
///
/// Departure: LiteCore raises a query error when `atan2`, `power` or `sign` get a non-number
/// (its other math functions answer null); here they answer null too.
extension FunctionLibrary {
    static let math: [SQLFunction] = [
        unary("abs") { abs($0) },
        unary("acos") { acos($0) },
        unary("asin") { asin($0) },
        unary("atan") { atan($0) },
        binary("atan2") { atan2($0, $1) },
        unary("ceil") { ceil($0) },
        unary("cos") { cos($0) },
        unary("degrees") { $0 * 180 / Double.pi },
        binary("div") { $0 / $1 },
        function("e", 0...0) { _ in .real(2.718281828459045) },  // M_E
        unary("exp") { exp($0) },
        unary("floor") { floor($0) },
        function("idiv", 2...2) { args in
            if let unknown = unknown(args) { return unknown }
            guard let numerator = args[0].truncatedInteger, let denominator = args[1].truncatedInteger,
                  denominator != 0 else { return .null }
            let (quotient, overflow) = numerator.dividedReportingOverflow(by: denominator)
            return overflow ? .null : .integer(quotient)
        },
        unary("ln") { log($0) },
        unary("log") { log10($0) },
        function("pi", 0...0) { _ in .real(Double.pi) },
        binary("power") { pow($0, $1) },
        unary("radians") { $0 * Double.pi / 180 },
        rounding("round") { $0.rounded(.toNearestOrAwayFromZero) },
        rounding("round_even") { $0.rounded(.toNearestOrEven) },
        function("sign", 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard let x = args[0].number else { return .null }
            return .integer(x > 0 ? 1 : (x < 0 ? -1 : 0))
        },
        unary("sin") { sin($0) },
        unary("sqrt") { sqrt($0) },
        unary("tan") { tan($0) },
        rounding("trunc") { $0.rounded(.towardZero) },
    ]

    private static func unary(_ name: String, _ fn: @escaping @Sendable (Double) -> Double) -> SQLFunction {
        function(name, 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard let x = args[0].number else { return .null }
            return finite(fn(x))
        }
    }

    private static func binary(_ name: String, _ fn: @escaping @Sendable (Double, Double) -> Double) -> SQLFunction {
        function(name, 2...2) { args in
            if let unknown = unknown(args) { return unknown }
            guard let x = args[0].number, let y = args[1].number else { return .null }
            return finite(fn(x, y))
        }
    }

    /// `name(n)` rounds to an integer; `name(n, places)` scales by 10^places, rounds, scales back
    /// (places is truncated to an integer, and may be negative: `round(1234, -2)` is `1200.0`).
    private static func rounding(_ name: String, _ fn: @escaping @Sendable (Double) -> Double) -> SQLFunction {
        function(name, 1...2) { args in
            if let unknown = unknown(args) { return unknown }
            guard let x = args[0].number else { return .null }
            guard args.count == 2 else { return finite(fn(x)) }
            guard let places = args[1].truncatedInteger else { return .null }
            let scale = pow(10, Double(places))
            return finite(fn(x * scale) / scale)
        }
    }
}
