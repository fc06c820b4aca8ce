extension AnalysisCheck.Prometheus {
    /// The variables a query may use, substituted before it is sent.
    public static let variables = ["version", "build", "slot", "app_id", "hostname", "previous_version"]

    /// The measurement of a query's sample values, with Argo's semantics:
    /// - both conditions given: failure wins when both hold; neither holds: inconclusive;
    /// - only `success`: not success is failed;
    /// - only `failure`: not failure is successful;
    /// - a condition that needs a sample the result lacks: an error ("the query returned no samples").
    ///
    /// The detail names the condition and the values: `result[0] < 0.05 is false (0.31)`.
    public func measurement(of samples: [Double], check: String) -> Measurement {
        let values = AnalysisFormat.samples(samples)
        func measured(_ phase: MeasurementPhase, _ detail: String) -> Measurement {
            Measurement(check: check, phase: phase, detail: detail)
        }
        do {
            if let failure, try failure.evaluate(samples) {
                return measured(.failed, "\(failure.text) is true (\(values))")
            }
            if let success {
                if try success.evaluate(samples) { return measured(.successful, "\(success.text) is true (\(values))") }
                if let failure {
                    return measured(.inconclusive, "neither \(success.text) nor \(failure.text) is true (\(values))")
                }
                return measured(.failed, "\(success.text) is false (\(values))")
            }
            if let failure { return measured(.successful, "\(failure.text) is false (\(values))") }
            return measured(.error, "the check has no success or failure condition")
        } catch {
            return measured(.error, error.message)
        }
    }

    /// The query with its `$name` variables replaced by `values` (escaped for a PromQL
    /// string literal: `\` and `"` and newlines); unknown names stay as written.
    public func query(substituting values: [String: String]) -> String {
        Self.substitute(query, values)
    }

    /// The `$name` words of `query` that are not variables, in order (empty: all known).
    static func unknownVariables(in query: String) -> [String] {
        variablesUsed(in: query).filter { !variables.contains($0) }
    }

    /// The `$name` words of `query`, in order, as `query(substituting:)` reads them.
    public static func variablesUsed(in query: String) -> [String] {
        var names: [String] = []
        _ = substitute(query, [:]) { names.append($0) }
        return names
    }

    static func substitute(_ query: String, _ values: [String: String], seen: (String) -> Void = { _ in }) -> String {
        var out = ""
        var scalars = query.unicodeScalars[...]
        func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
            (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9") || scalar == "_"
        }
        while let scalar = scalars.popFirst() {
            guard scalar == "$" else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let name = String(String.UnicodeScalarView(scalars.prefix(while: isNameScalar)))
            guard !name.isEmpty else {
                out.unicodeScalars.append(scalar)
                continue
            }
            seen(name)
            scalars = scalars.dropFirst(name.unicodeScalars.count)
            if let value = values[name] {
                out += escapePromQL(value)
            } else {
                out += "$" + name
            }
        }
        return out
    }

    /// `value` as the inside of a PromQL double-quoted string.
    static func escapePromQL(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
