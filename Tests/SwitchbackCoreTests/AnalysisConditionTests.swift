import SwitchbackCore
import Testing

/// The condition language of a prometheus check (Argo's successCondition/failureCondition).
@Suite struct AnalysisConditionTests {
    func holds(_ text: String, _ samples: [Double]) throws -> Bool {
        try AnalysisCondition(parsing: text).evaluate(samples)
    }

    @Test func comparisons() throws {
        #expect(try holds("result[0] < 0.05", [0.01]))
        #expect(try !holds("result[0] < 0.05", [0.31]))
        #expect(try holds("result <= 1", [1]), "result is the first sample")
        #expect(try holds("result[1] > 2e1", [0, 21]))
        #expect(try holds("result[0] >= -1.5", [-1.5]))
        #expect(try holds("result[0] == 3 && result[0] != 4", [3]))
        #expect(try holds(".5 == result[0]", [0.5]))
        #expect(try holds("len(result) == 3", [1, 2, 3]))
        #expect(try holds("true", []) && !holds("false", []))
    }

    @Test func precedence() throws {
        // || is looser than &&: true || (false && false).
        #expect(try holds("result[0] == 1 || result[0] == 2 && result[0] == 3", [1]))
        #expect(try !holds("(result[0] == 1 || result[0] == 2) && result[0] == 3", [1]))
        // ! binds to one operand: !(a) && b.
        #expect(try !holds("!(result[0] == 1) && true", [1]))
        #expect(try holds("!(result[0] == 1 && false)", [1]))
        #expect(try holds("!!true", []))
        #expect(try holds("- result[0] == -2", [2]))
        #expect(try holds("--2 == 2", []))
    }

    @Test func notANumberComparesFalseExceptNotEqual() throws {
        let nan = [Double.nan]
        for text in ["result < 1", "result <= 1", "result > 1", "result >= 1", "result == result"] {
            #expect(try !holds(text, nan), "\(text)")
        }
        #expect(try holds("result != 1", nan))
        #expect(try holds("isNaN(result[0])", nan))
        #expect(try !holds("isNaN(result[0])", [0.1]))
        #expect(try holds("isNaN(result[0]) || result[0] < 0.05", nan))
        #expect(try holds("result[0] > 1000", [.infinity]))
    }

    @Test func anEmptyVectorIsAnErrorUnlessTheConditionGuardsIt() throws {
        let condition = try AnalysisCondition(parsing: "result[0] < 0.05")
        let error = #expect(throws: AnalysisCondition.EvaluationError.self) { try condition.evaluate([]) }
        #expect(error?.message == "the query returned no samples")
        let second = #expect(throws: AnalysisCondition.EvaluationError.self) { try AnalysisCondition(parsing: "result[2] > 0").evaluate([1, 2]) }
        #expect(second?.message == "the query returned 2 samples, none at result[2]")
        // Short-circuit: the guard keeps result[0] from being read.
        #expect(try !holds("len(result) > 0 && result[0] < 0.05", []))
        #expect(try holds("len(result) == 0 || result[0] < 0.05", []))
        #expect(try holds("len(result) == 0", []))
    }

    @Test(arguments: [
        ("", "the condition is empty"),
        ("   ", "the condition is empty"),
        ("result[0] <", "expected a number, result, len(result), isNaN(...) or ( at column 12, found the end of the condition"),
        ("result[0] < 0.05 )", "expected an operator or the end at column 18, found ')'"),
        ("(result[0] < 1", "expected ')' at column 15"),
        ("result[0]", "the condition is a number, not a comparison"),
        ("result[0] + 1 > 2", "unexpected '+' at column 11"),
        ("result[0] = 1", "unexpected '=' at column 11 (compare with ==)"),
        ("result[0] < 1 & true", "unexpected '&' at column 15 (write && or ||)"),
        ("result[0] < 1 and true", "expected an operator or the end at column 15, found 'and'"),
        ("result[x] < 1", "expected a sample index (0, 1, ...) at column 8"),
        ("result[-1] < 1", "expected a sample index (0, 1, ...) at column 8"),
        ("result[1.5] < 1", "expected a sample index"),
        ("value < 1", "unknown name 'value' at column 1"),
        ("len(x) > 1", "expected result at column 5"),
        ("1 < 2 < 3", "comparisons do not chain at column 7"),
        ("result[0] && true", "&& at column 11 joins a number"),
        ("true || 1", "|| at column 6 joins a number"),
        ("(1 < 2) < 3", "< at column 9 compares a truth"),
        ("!result[0]", "! at column 1 negates a number"),
        ("-true", "- at column 1 negates a truth"),
        ("isNaN(true)", "isNaN at column 1 takes a number"),
        ("1.2.3 > 0", "'1.2.3' at column 1 is not a number"),
        ("1e999 > 0", "'1e999' at column 1 is not a number"),
        ("result[0] < 1 \u{1}", "unexpected byte 0x1 at column 15"),
        ("result[0] < 1 = 2", "unexpected '=' at column 15"),
    ])
    func refusesWhatDoesNotParse(text: String, phrase: String) {
        let error = #expect(throws: AnalysisCondition.SyntaxError.self) { try AnalysisCondition(parsing: text) }
        #expect(error?.message.contains(phrase) == true, "\(error?.message ?? "parsed")")
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "(", count: 10_000) + "true" + String(repeating: ")", count: 10_000)
        let error = #expect(throws: AnalysisCondition.SyntaxError.self) { try AnalysisCondition(parsing: deep) }
        #expect(error?.message.contains("longer than 1024 bytes") == true)
        let nested = String(repeating: "!", count: 100) + "true"
        let second = #expect(throws: AnalysisCondition.SyntaxError.self) { try AnalysisCondition(parsing: nested) }
        #expect(second?.message.contains("nests deeper than 64 levels") == true)
    }

    /// Argo's semantics of the two conditions, measured.
    @Test func prometheusMeasurementSemantics() throws {
        func check(success: String?, failure: String?) throws -> AnalysisCheck.Prometheus {
            AnalysisCheck.Prometheus(address: "http://127.0.0.1:9090", query: "q",
                                     success: try success.map { try AnalysisCondition(parsing: $0) },
                                     failure: try failure.map { try AnalysisCondition(parsing: $0) })
        }
        let both = try check(success: "result[0] < 0.05", failure: "result[0] >= 0.1")
        #expect(both.measurement(of: [0.01], check: "errors") == Measurement(check: "errors", phase: .successful, detail: "result[0] < 0.05 is true (0.01)"))
        #expect(both.measurement(of: [0.31], check: "errors").sentence == "errors: result[0] >= 0.1 is true (0.31)")
        #expect(both.measurement(of: [0.31], check: "errors").phase == .failed)
        let neither = both.measurement(of: [0.07], check: "errors")
        #expect(neither.phase == .inconclusive && neither.detail == "neither result[0] < 0.05 nor result[0] >= 0.1 is true (0.07)")
        // Failure wins when both hold.
        let overlapping = try check(success: "result[0] < 1", failure: "result[0] > 0")
        #expect(overlapping.measurement(of: [0.5], check: "e").phase == .failed)
        // Only success: not success is failed.
        let onlySuccess = try check(success: "result[0] < 0.05", failure: nil)
        #expect(onlySuccess.measurement(of: [0.31], check: "errors").sentence == "errors: result[0] < 0.05 is false (0.31)")
        #expect(onlySuccess.measurement(of: [0.31], check: "errors").phase == .failed)
        #expect(onlySuccess.measurement(of: [.nan], check: "errors").detail == "result[0] < 0.05 is false (NaN)")
        // Only failure: not failure is successful.
        let onlyFailure = try check(success: nil, failure: "result[0] > 250")
        #expect(onlyFailure.measurement(of: [120.25, 3, 4, 5], check: "p99") == Measurement(check: "p99", phase: .successful, detail: "result[0] > 250 is false (120.25, 3, 4 and 1 more)"))
        // An empty vector is an error measurement, never a pass.
        #expect(onlyFailure.measurement(of: [], check: "p99") == Measurement(check: "p99", phase: .error, detail: "the query returned no samples"))
        #expect(both.measurement(of: [], check: "errors").phase == .error)
    }

    @Test func queryVariables() {
        let check = AnalysisCheck.Prometheus(address: "http://p", query: "a{v=\"$version\",s=\"$slot\"} $unknown $ $1", success: nil, failure: nil)
        #expect(check.query(substituting: ["version": "1.0\\x", "slot": "current"]) == "a{v=\"1.0\\\\x\",s=\"current\"} $unknown $ $1")
    }

    @Test func numbersInSentences() {
        #expect(AnalysisFormat.number(0.31) == "0.31")
        #expect(AnalysisFormat.number(0.1 + 0.2) == "0.3")
        #expect(AnalysisFormat.number(412) == "412")
        #expect(AnalysisFormat.number(-3) == "-3")
        #expect(AnalysisFormat.number(0.00001) == "1e-05")
        #expect(AnalysisFormat.number(.nan) == "NaN" && AnalysisFormat.number(.infinity) == "+Inf" && AnalysisFormat.number(-.infinity) == "-Inf")
        #expect(AnalysisFormat.percent(31.034) == "31" && AnalysisFormat.percent(5.17) == "5.2" && AnalysisFormat.percent(100) == "100")
        #expect(AnalysisFormat.percent(0) == "0" && AnalysisFormat.percent(-0.04) == "0")
        #expect(AnalysisFormat.percent(-0.2) == "-0.2" && AnalysisFormat.percent(-1.5) == "-1.5" && AnalysisFormat.percent(-31) == "-31", "a share below 0 keeps its sign")
    }
}
