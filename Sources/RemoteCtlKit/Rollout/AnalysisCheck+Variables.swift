import SwitchbackCore

extension AnalysisCheck.Prometheus {
    /// The `$name` words of `query`, in order (as `query(substituting:)` reads them).
    static func variablesUsed(in query: String) -> [String] {
        var names: [String] = []
        var rest = Substring(query)
        while let dollar = rest.firstIndex(of: "$") {
            rest = rest[rest.index(after: dollar)...]
            let name = rest.prefix { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "_" }
            if !name.isEmpty { names.append(String(name)) }
        }
        return names
    }
}
