extension AnalysisCondition {
    /// A recursive-descent parser over the condition's bytes, which types every node as it
    /// goes: a number where a truth is needed (or the reverse) is a syntax error.
    struct Parser {
        enum Token: Equatable {
            case number(Double)
            case word(String)
            case symbol(String)
            case end
        }

        let bytes: [UInt8]
        var position = 0
        /// The current token and the column (1-based) it starts at.
        var token: Token = .end
        var column = 1
        /// A lexical problem found while reading the current token.
        var lexicalError: SyntaxError?
        /// How deep the parentheses and `!` go: bounded, so a hostile condition cannot
        /// exhaust the stack.
        var depth = 0
        static let maximumDepth = 64

        init(_ text: String) {
            bytes = Array(text.utf8)
            advance()
        }

        mutating func parseCondition() throws(SyntaxError) -> Node {
            guard bytes.count <= 1024 else { throw SyntaxError(message: "the condition is longer than 1024 bytes", column: 1025) }
            if let lexicalError { throw lexicalError }
            if token == .end { throw SyntaxError(message: "the condition is empty", column: 1) }
            let node = try parseOr()
            if let lexicalError { throw lexicalError }
            guard token == .end else { throw unexpected("an operator or the end") }
            guard node.isTruth else { throw SyntaxError(message: "the condition is a number, not a comparison (write e.g. result[0] < 0.05)", column: 1) }
            return node
        }

        // or := and ('||' and)*
        mutating func parseOr() throws(SyntaxError) -> Node {
            var left = try parseAnd()
            while token == .symbol("||") {
                let at = column
                advance()
                let right = try parseAnd()
                try requireTruth(left, at: at, "||")
                try requireTruth(right, at: at, "||")
                left = .or(left, right)
            }
            return left
        }

        // and := comparison ('&&' comparison)*
        mutating func parseAnd() throws(SyntaxError) -> Node {
            var left = try parseComparison()
            while token == .symbol("&&") {
                let at = column
                advance()
                let right = try parseComparison()
                try requireTruth(left, at: at, "&&")
                try requireTruth(right, at: at, "&&")
                left = .and(left, right)
            }
            return left
        }

        // comparison := unary (op unary)?
        mutating func parseComparison() throws(SyntaxError) -> Node {
            let left = try parseUnary()
            guard case .symbol(let text) = token, let comparison = Comparison(rawValue: text) else { return left }
            let at = column
            advance()
            let right = try parseUnary()
            for side in [left, right] where side.isTruth {
                throw SyntaxError(message: "\(text) at column \(at) compares a truth; it compares numbers (result, result[i], len(result), numbers)", column: at)
            }
            if case .symbol(let next) = token, Comparison(rawValue: next) != nil {
                throw SyntaxError(message: "comparisons do not chain at column \(column); join them with && (a < b && b < c)", column: column)
            }
            return .compare(comparison, left, right)
        }

        // unary := '!' unary | '-' unary | primary
        mutating func parseUnary() throws(SyntaxError) -> Node {
            if token == .symbol("!") || token == .symbol("-") {
                let negation = token == .symbol("!")
                let at = column
                try enter()
                defer { depth -= 1 }
                advance()
                let operand = try parseUnary()
                if negation {
                    guard operand.isTruth else {
                        throw SyntaxError(message: "! at column \(at) negates a number; write !(comparison)", column: at)
                    }
                    return .not(operand)
                }
                guard !operand.isTruth else {
                    throw SyntaxError(message: "- at column \(at) negates a truth; it negates numbers", column: at)
                }
                return .negate(operand)
            }
            return try parsePrimary()
        }

        // primary := number | true | false | result ('[' integer ']')? | len '(' result ')'
        //          | isNaN '(' or ')' | '(' or ')'
        mutating func parsePrimary() throws(SyntaxError) -> Node {
            switch token {
            case .number(let value):
                advance()
                return .number(value)
            case .word("true"):
                advance()
                return .boolean(true)
            case .word("false"):
                advance()
                return .boolean(false)
            case .word("result"):
                advance()
                guard token == .symbol("[") else { return .sample(0) }
                advance()
                guard case .number(let value) = token, value >= 0, value < 1_000_000, value == value.rounded() else {
                    throw unexpected("a sample index (0, 1, ...)")
                }
                advance()
                try expect("]")
                return .sample(Int(value))
            case .word("len"):
                advance()
                try expect("(")
                guard token == .word("result") else { throw unexpected("result") }
                advance()
                try expect(")")
                return .count
            case .word("isNaN"):
                let at = column
                advance()
                try expect("(")
                try enter()
                defer { depth -= 1 }
                let operand = try parseOr()
                try expect(")")
                guard !operand.isTruth else { throw SyntaxError(message: "isNaN at column \(at) takes a number, not a truth", column: at) }
                return .isNaN(operand)
            case .symbol("("):
                advance()
                try enter()
                defer { depth -= 1 }
                let inner = try parseOr()
                try expect(")")
                return inner
            case .word(let word):
                throw SyntaxError(message: "unknown name '\(word)' at column \(column); a condition knows result, result[i], len(result), isNaN(x), true and false", column: column)
            default:
                throw unexpected("a number, result, len(result), isNaN(...) or (")
            }
        }

        mutating func enter() throws(SyntaxError) {
            depth += 1
            guard depth <= Self.maximumDepth else {
                throw SyntaxError(message: "the condition nests deeper than \(Self.maximumDepth) levels at column \(column)", column: column)
            }
        }

        mutating func expect(_ symbol: String) throws(SyntaxError) {
            guard token == .symbol(symbol) else { throw unexpected("'\(symbol)'") }
            advance()
        }

        func requireTruth(_ node: Node, at column: Int, _ symbol: String) throws(SyntaxError) {
            guard node.isTruth else {
                throw SyntaxError(message: "\(symbol) at column \(column) joins a number; it joins comparisons (result[0] < 1 \(symbol) len(result) > 0)", column: column)
            }
        }

        func unexpected(_ wanted: String) -> SyntaxError {
            if let lexicalError { return lexicalError }
            let found: String
            switch token {
            case .end: found = "the end of the condition"
            case .number(let value): found = "the number \(AnalysisFormat.number(value))"
            case .word(let word): found = "'\(word)'"
            case .symbol(let symbol): found = "'\(symbol)'"
            }
            return SyntaxError(message: "expected \(wanted) at column \(column), found \(found)", column: column)
        }

        /// Reads the next token into `token` and `column`; a byte no token starts with
        /// makes `lexicalError` and the end.
        mutating func advance() {
            while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 { position += 1 }
            column = position + 1
            guard position < bytes.count, lexicalError == nil else {
                token = .end
                return
            }
            let byte = bytes[position]
            if isDigit(byte) || (byte == 0x2E && position + 1 < bytes.count && isDigit(bytes[position + 1])) {
                let start = position
                while position < bytes.count, isDigit(bytes[position]) || bytes[position] == 0x2E { position += 1 }
                if position < bytes.count, bytes[position] == 0x65 || bytes[position] == 0x45 {  // e, E
                    var end = position + 1
                    if end < bytes.count, bytes[end] == 0x2B || bytes[end] == 0x2D { end += 1 }
                    if end < bytes.count, isDigit(bytes[end]) {
                        position = end
                        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
                    }
                }
                let text = String(decoding: bytes[start..<position], as: UTF8.self)
                guard let value = Double(text), value.isFinite else {
                    lexicalError = SyntaxError(message: "'\(text)' at column \(start + 1) is not a number", column: start + 1)
                    token = .end
                    return
                }
                token = .number(value)
                return
            }
            if isLetter(byte) {
                let start = position
                while position < bytes.count, isLetter(bytes[position]) || isDigit(bytes[position]) { position += 1 }
                token = .word(String(decoding: bytes[start..<position], as: UTF8.self))
                return
            }
            let two = position + 1 < bytes.count ? String(decoding: bytes[position...(position + 1)], as: UTF8.self) : ""
            if ["<=", ">=", "==", "!=", "&&", "||"].contains(two) {
                position += 2
                token = .symbol(two)
                return
            }
            if [0x3C, 0x3E, 0x21, 0x28, 0x29, 0x5B, 0x5D, 0x2D].contains(byte) {  // < > ! ( ) [ ] -
                position += 1
                token = .symbol(String(UnicodeScalar(byte)))
                return
            }
            let shown: String
            if byte == 0x3D {
                shown = "'=' at column \(column) (compare with ==)"
            } else if byte == 0x26 || byte == 0x7C {
                shown = "'\(UnicodeScalar(byte))' at column \(column) (write && or ||)"
            } else if byte >= 0x21, byte < 0x7F {
                shown = "'\(UnicodeScalar(byte))' at column \(column)"
            } else {
                shown = "byte 0x\(String(byte, radix: 16)) at column \(column)"
            }
            lexicalError = SyntaxError(message: "unexpected \(shown)", column: column)
            token = .end
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F }
    }
}
