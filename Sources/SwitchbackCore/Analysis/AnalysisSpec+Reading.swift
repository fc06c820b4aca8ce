import SwitchbackFiles

/// Reads `analysis.*` settings into an `AnalysisSpec`, checking every key and value.
struct SettingsReader {
    let settings: [String: String]

    static let topLevel = ["window_s", "interval_s", "failure_limit", "inconclusive_limit", "consecutive_error_limit", "checks", "allow_insecure_http", "dry_run",
                           "baseline", "baseline.confidence", "baseline.max_slowdown_percent", "baseline.min_slowdown_ms", "baseline.max_error_increase_percent",
                           "baseline.min_samples", "baseline.pass_score", "baseline.marginal_score", "baseline.on_failure"]
    static let fields: [String: [String]] = [
        "http": ["kind", "interval_s", "url", "success_status", "probe_interval_ms", "timeout_ms", "window_s",
                 "max_failure_percent", "latency_limit_ms", "latency_percentile", "min_probes", "on_failure"],
        "prometheus": ["kind", "interval_s", "address", "query", "success", "failure", "timeout_ms", "on_failure", "compare"],
        "app": ["kind", "interval_s", "max_failures", "on_failure"],
    ]

    mutating func spec() throws(AnalysisSpecError) -> AnalysisSpec? {
        let explicitWindow = try integer("analysis.window_s", in: 0...AnalysisSpec.maximumWindowSeconds, "a whole number of seconds")
        // An explicit 0 turns the analysis off, checks or not (`rollbackctl bake-window 0` over
        // a manifest with checks); an absent window with checks is a forgotten key.
        if explicitWindow == 0 { return nil }
        let window = explicitWindow ?? 0
        let names = try checkNames()
        let checkKeys = settings.keys.filter { $0.hasPrefix("analysis.check.") }
        if window == 0 && names.isEmpty && checkKeys.isEmpty { return nil }
        // Every key is a setting, before any value is judged: a typo is named as such.
        for key in settings.keys.sorted() {
            try checkKey(key, names: names)
        }
        guard window > 0 else {
            throw AnalysisSpecError(.missingKey, key: "analysis.window_s",
                                    "The analysis has checks but no analysis.window_s; write analysis.window_s=SECONDS (e.g. 60), the bake window.")
        }
        var spec = AnalysisSpec(windowSeconds: window)
        spec.intervalSeconds = try integer("analysis.interval_s", in: 1...86_400, "a whole number of seconds") ?? 10
        spec.failureLimit = try integer("analysis.failure_limit", in: ValueRange.count, "a whole number of measurements") ?? 0
        spec.inconclusiveLimit = try integer("analysis.inconclusive_limit", in: ValueRange.count, "a whole number of measurements") ?? 0
        spec.consecutiveErrorLimit = try integer("analysis.consecutive_error_limit", in: ValueRange.count, "a whole number of measurements")
        spec.dryRun = try boolean("analysis.dry_run")
        for name in names {
            var check = try check(name, spec: spec)
            check.onFailure = try failureAction(name)
            spec.checks.append(check)
        }
        if let baseline = try baseline(names: names, checks: spec.checks, intervalSeconds: spec.intervalSeconds) { spec.checks.append(baseline) }
        return spec
    }

    /// `analysis.baseline=true`: the comparison check, named `baseline`, measured every
    /// `analysis.interval_s` from the http checks' probes, each attributed to the build that
    /// answered it; nil when it is off. Refused: no http check to compare by, a check of
    /// its own named `baseline`, or probes too sparse for `min_samples` from each build in
    /// the window (each build answers about half of them).
    func baseline(names: [String], checks: [AnalysisCheck], intervalSeconds: Int) throws(AnalysisSpecError) -> AnalysisCheck? {
        let keys = settings.keys.filter { $0.hasPrefix("analysis.baseline.") }.sorted()
        guard try boolean("analysis.baseline") else {
            if let key = keys.first {
                throw AnalysisSpecError(.invalidValue, key: key, "\(key) is set but analysis.baseline is not true; set analysis.baseline=true or remove the key.")
            }
            return nil
        }
        guard !names.contains("baseline") else {
            throw AnalysisSpecError(.invalidValue, key: "analysis.checks",
                                    "analysis.checks lists a check named baseline, the name analysis.baseline=true gives the comparison; rename the check.")
        }
        let probes: [AnalysisCheck.HTTP] = checks.compactMap { if case .http(let http) = $0.kind { http } else { nil } }
        guard !probes.isEmpty else {
            throw AnalysisSpecError(.invalidValue, key: "analysis.baseline",
                                    "analysis.baseline=true compares the builds by the answers to an http check's probes, and analysis.checks has no http check; add one (analysis.check.NAME.kind=http).")
        }
        for check in checks {
            guard case .http(let http) = check.kind, !http.url.hasPrefix("http://") else { continue }
            throw AnalysisSpecError(.invalidValue, key: "analysis.check.\(check.name).url",
                                    "analysis.baseline=true probes each build over plain http (it sees which process accepted each connection), and analysis.check.\(check.name).url is \(http.url.prefix(80)); probe the app's own http address (e.g. http://127.0.0.1:8080/health).")
        }
        var baseline = BaselineSettings()
        let prefix = "analysis.baseline."
        baseline.confidence = try decimal(prefix + "confidence", in: 0.5...0.9999, "a confidence") ?? baseline.confidence
        baseline.maxSlowdownPercent = try decimal(prefix + "max_slowdown_percent", in: 0...1000, "a percentage") ?? baseline.maxSlowdownPercent
        baseline.minSlowdownMilliseconds = try decimal(prefix + "min_slowdown_ms", in: 0...600_000, "a number of milliseconds") ?? baseline.minSlowdownMilliseconds
        baseline.maxErrorIncreasePercent = try decimal(prefix + "max_error_increase_percent", in: 0...100, "a percentage") ?? baseline.maxErrorIncreasePercent
        baseline.minSamples = try integer(prefix + "min_samples", in: 2...100_000, "a whole number of probes") ?? baseline.minSamples
        baseline.passScore = try decimal(prefix + "pass_score", in: 0...100, "a score") ?? baseline.passScore
        baseline.marginalScore = try decimal(prefix + "marginal_score", in: 0...100, "a score") ?? baseline.marginalScore
        guard baseline.marginalScore <= baseline.passScore else {
            throw AnalysisSpecError(.invalidValue, key: prefix + "marginal_score",
                                    "\(prefix)marginal_score is \(AnalysisFormat.number(baseline.marginalScore)), above \(prefix)pass_score (\(AnalysisFormat.number(baseline.passScore))); write a marginal score at most the pass score.")
        }
        // Each build answers about half of the probes: the window must hold min_samples of each.
        let most = probes.map { $0.windowMilliseconds / $0.probeIntervalMilliseconds / 2 }.max() ?? 0
        guard baseline.minSamples <= most else {
            throw AnalysisSpecError(.invalidValue, key: prefix + "min_samples",
                                    "\(prefix)min_samples is \(baseline.minSamples), but each build answers about half of the probes and the window holds at most \(most) for each; lower min_samples, lower probe_interval_ms or widen analysis.window_s.")
        }
        var check = AnalysisCheck(name: "baseline", intervalMilliseconds: intervalSeconds * 1000, kind: .baseline(baseline))
        let key = prefix + "on_failure"
        if let text = settings[key] {
            guard let action = AnalysisCheck.FailureAction(rawValue: text) else {
                throw AnalysisSpecError(.invalidValue, key: key, "\(key) is '\(text.prefix(40))'; write rollback, hold or record.")
            }
            check.onFailure = action
        }
        return check
    }

    func checkNames() throws(AnalysisSpecError) -> [String] {
        let key = "analysis.checks"
        guard let text = settings[key] else { return [] }
        var names: [String] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(item.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
            guard !name.isEmpty, name.utf8.count <= 64,
                  name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2D }) else {
                throw AnalysisSpecError(.invalidValue, key: key,
                                        "\(key) has the name '\(name.prefix(64))'; write a comma-separated list of names of letters, digits, _ and - (e.g. http,errors,app).")
            }
            guard !names.contains(name) else {
                throw AnalysisSpecError(.invalidValue, key: key, "\(key) lists \(name) twice; list each check once.")
            }
            names.append(name)
        }
        guard names.count <= AnalysisSpec.maximumChecks else {
            throw AnalysisSpecError(.invalidValue, key: key,
                                    "\(key) lists \(names.count) checks, more than \(AnalysisSpec.maximumChecks); list fewer.")
        }
        return names
    }

    func checkKey(_ key: String, names: [String]) throws(AnalysisSpecError) {
        let rest = key.dropFirst("analysis.".count)
        if Self.topLevel.contains(String(rest)) { return }
        guard rest.hasPrefix("check.") else {
            throw AnalysisSpecError(.unknownKey, key: key,
                                    "\(key) is not an analysis setting; write analysis.window_s, interval_s, failure_limit, inconclusive_limit, consecutive_error_limit, checks, allow_insecure_http, dry_run, baseline, baseline.FIELD or analysis.check.NAME.FIELD.")
        }
        let path = rest.dropFirst("check.".count)
        guard let dot = path.lastIndex(of: "."), dot != path.startIndex else {
            throw AnalysisSpecError(.unknownKey, key: key, "\(key) is not an analysis setting; write analysis.check.NAME.FIELD (e.g. analysis.check.http.url).")
        }
        let name = String(path[..<dot]), field = String(path[path.index(after: dot)...])
        guard names.contains(name) else {
            throw AnalysisSpecError(.unknownKey, key: key,
                                    "\(key) is for a check \(name) that analysis.checks does not list; add \(name) to analysis.checks or remove the key.")
        }
        let kindKey = "analysis.check.\(name).kind"
        guard let kind = settings[kindKey] else {
            throw AnalysisSpecError(.missingKey, key: kindKey, "The check \(name) has no \(kindKey); write \(kindKey)=http, prometheus or app.")
        }
        guard let fields = Self.fields[kind] else {
            throw AnalysisSpecError(.invalidValue, key: kindKey, "\(kindKey) is '\(kind.prefix(40))'; write http, prometheus or app.")
        }
        guard fields.contains(field) else {
            throw AnalysisSpecError(.unknownKey, key: key,
                                    "\(key) is not a setting of a\(kind == "app" ? "n" : "") \(kind) check; a\(kind == "app" ? "n" : "") \(kind) check takes \(fields.dropFirst().joined(separator: ", ")).")
        }
    }

    func check(_ name: String, spec: AnalysisSpec) throws(AnalysisSpecError) -> AnalysisCheck {
        let prefix = "analysis.check.\(name)."
        let kindKey = prefix + "kind"
        guard let kind = settings[kindKey] else {
            throw AnalysisSpecError(.missingKey, key: kindKey, "The check \(name) has no \(kindKey); write \(kindKey)=http, prometheus or app.")
        }
        let interval = try integer(prefix + "interval_s", in: 1...86_400, "a whole number of seconds") ?? spec.intervalSeconds
        switch kind {
        case "http":
            let http = try http(prefix, spec: spec)
            // A measurement counts the probes answered (or overdue) since the last one: the
            // first, one interval after the start, must be able to hold min_probes of them, or
            // it is inconclusive in every analysis and, past inconclusive_limit, ends it.
            let held = interval * 1000 / http.probeIntervalMilliseconds
            guard http.minProbes <= held else {
                let needed = (http.minProbes * http.probeIntervalMilliseconds + 999) / 1000
                let source = settings[prefix + "interval_s"] != nil ? prefix + "interval_s" : "analysis.interval_s"
                throw AnalysisSpecError(.invalidValue, key: source,
                                        "\(source) is \(interval) s, but \(prefix)min_probes (\(http.minProbes)) probes \(http.probeIntervalMilliseconds) ms apart take \(http.minProbes * http.probeIntervalMilliseconds) ms: its first measurement, \(interval) s after the start, would hold at most \(held) and be inconclusive in every analysis; raise \(source) to at least \(needed), lower min_probes or lower probe_interval_ms.")
            }
            return AnalysisCheck(name: name, intervalMilliseconds: interval * 1000, kind: .http(http))
        case "prometheus":
            return AnalysisCheck(name: name, intervalMilliseconds: interval * 1000, kind: .prometheus(try prometheus(prefix, name: name)))
        case "app":
            let maxFailures = try integer(prefix + "max_failures", in: ValueRange.count, "a whole number of failures") ?? 0
            return AnalysisCheck(name: name, intervalMilliseconds: interval * 1000, kind: .app(AnalysisCheck.App(maxFailures: maxFailures)))
        default:
            throw AnalysisSpecError(.invalidValue, key: kindKey, "\(kindKey) is '\(kind.prefix(40))'; write http, prometheus or app.")
        }
    }

    func http(_ prefix: String, spec: AnalysisSpec) throws(AnalysisSpecError) -> AnalysisCheck.HTTP {
        let url = try self.url(prefix + "url", example: "http://127.0.0.1:8080/health")
        var check = AnalysisCheck.HTTP(url: url, windowMilliseconds: spec.windowSeconds * 1000)
        if let text = settings[prefix + "success_status"] {
            guard let statuses = HTTPStatusSet(text) else {
                throw AnalysisSpecError(.invalidValue, key: prefix + "success_status",
                                        "\(prefix)success_status is '\(text.prefix(40))'; write statuses and ranges from 100 to 599, e.g. 200-299 or 200-399,404.")
            }
            check.successStatuses = statuses
        }
        check.probeIntervalMilliseconds = try integer(prefix + "probe_interval_ms", in: 10...3_600_000, "a whole number of milliseconds") ?? 500
        check.timeoutMilliseconds = try integer(prefix + "timeout_ms", in: 1...600_000, "a whole number of milliseconds") ?? 2000
        if let seconds = try integer(prefix + "window_s", in: 1...AnalysisSpec.maximumWindowSeconds, "a whole number of seconds") {
            check.windowMilliseconds = seconds * 1000
        }
        check.maxFailurePercent = try decimal(prefix + "max_failure_percent", in: 0...100, "a percentage") ?? 5
        check.latencyLimitMilliseconds = try decimal(prefix + "latency_limit_ms", in: 1...600_000, "a number of milliseconds")
        check.latencyPercentile = try decimal(prefix + "latency_percentile", in: 1...100, "a percentile") ?? 99
        check.minProbes = try integer(prefix + "min_probes", in: 1...ValueRange.count.upperBound, "a whole number of probes") ?? 5
        let fits = check.windowMilliseconds / check.probeIntervalMilliseconds + 1
        guard check.minProbes <= fits else {
            throw AnalysisSpecError(.invalidValue, key: prefix + "min_probes",
                                    "\(prefix)min_probes is \(check.minProbes) but a \(check.windowMilliseconds / 1000) s window holds at most \(fits) probes \(check.probeIntervalMilliseconds) ms apart; lower min_probes, lower probe_interval_ms or widen window_s.")
        }
        return check
    }

    func prometheus(_ prefix: String, name: String) throws(AnalysisSpecError) -> AnalysisCheck.Prometheus {
        var address = try url(prefix + "address", example: "http://127.0.0.1:9090")
        while address.hasSuffix("/") { address.removeLast() }
        // Prometheus's answer decides a verdict: over plain http to another host, anything on
        // the path (a proxy among them) could write it. As directives: an explicit opt-in.
        if NetworkHost.isInsecureRemote(url: address), try !allowsInsecureHTTP() {
            throw AnalysisSpecError(.invalidValue, key: prefix + "address",
                                    "\(prefix)address is \(address.prefix(80)), plain http to a host other than loopback, where anything on the path could change the answers that judge a build; use https, or set analysis.allow_insecure_http=true to accept that.")
        }
        let queryKey = prefix + "query"
        guard let query = settings[queryKey] else {
            throw AnalysisSpecError(.missingKey, key: queryKey, "The prometheus check \(name) has no \(queryKey); write the PromQL instant query, e.g. \(queryKey)=sum(rate(http_requests_total{code=~\"5..\"}[1m])).")
        }
        guard query.utf8.count <= 8192 else {
            throw AnalysisSpecError(.invalidValue, key: queryKey, "\(queryKey) is \(query.utf8.count) bytes long; write a query of at most 8192 bytes.")
        }
        if let unknown = AnalysisCheck.Prometheus.unknownVariables(in: query).first {
            throw AnalysisSpecError(.invalidValue, key: queryKey,
                                    "\(queryKey) uses $\(unknown), which is not a variable; write one of $\(AnalysisCheck.Prometheus.variables.joined(separator: ", $")).")
        }
        let success = try condition(prefix + "success")
        let failure = try condition(prefix + "failure")
        guard success != nil || failure != nil else {
            throw AnalysisSpecError(.missingKey, key: prefix + "success",
                                    "The prometheus check \(name) has neither \(prefix)success nor \(prefix)failure; write e.g. \(prefix)success=result[0] < 0.05.")
        }
        let timeout = try integer(prefix + "timeout_ms", in: 1...600_000, "a whole number of milliseconds") ?? 5000
        var compare: AnalysisCheck.Prometheus.Comparison?
        if let text = settings[prefix + "compare"] {
            guard let value = AnalysisCheck.Prometheus.Comparison(rawValue: text) else {
                throw AnalysisSpecError(.invalidValue, key: prefix + "compare", "\(prefix)compare is '\(text.prefix(40))'; write higher_is_worse or lower_is_worse.")
            }
            guard try boolean("analysis.baseline") else {
                throw AnalysisSpecError(.invalidValue, key: prefix + "compare",
                                        "\(prefix)compare is set but analysis.baseline is not true; set analysis.baseline=true or remove the key.")
            }
            guard ["version", "build", "slot"].contains(where: { AnalysisCheck.Prometheus.variablesUsed(in: query).contains($0) }) else {
                throw AnalysisSpecError(.invalidValue, key: prefix + "compare",
                                        "\(prefix)compare runs the query once for each build, and \(prefix)query names no build; select the build with $version, $build or $slot (e.g. {version=\"$version\"}).")
            }
            compare = value
        }
        return AnalysisCheck.Prometheus(address: address, query: query, success: success, failure: failure, timeoutMilliseconds: timeout,
                                        compare: compare)
    }

    /// `analysis.allow_insecure_http`: true or false (absent: false).
    func allowsInsecureHTTP() throws(AnalysisSpecError) -> Bool {
        try boolean("analysis.allow_insecure_http")
    }

    /// `analysis.check.NAME.on_failure`: rollback, hold or record (absent: rollback).
    func failureAction(_ name: String) throws(AnalysisSpecError) -> AnalysisCheck.FailureAction {
        let key = "analysis.check.\(name).on_failure"
        guard let text = settings[key] else { return .rollback }
        guard let action = AnalysisCheck.FailureAction(rawValue: text) else {
            throw AnalysisSpecError(.invalidValue, key: key, "\(key) is '\(text.prefix(40))'; write rollback, hold or record.")
        }
        return action
    }

    /// A true-or-false setting (absent: false).
    func boolean(_ key: String) throws(AnalysisSpecError) -> Bool {
        switch settings[key] {
        case nil, "false": return false
        case "true": return true
        case let text?: throw AnalysisSpecError(.invalidValue, key: key, "\(key) is '\(text.prefix(40))'; write true or false.")
        }
    }

    func condition(_ key: String) throws(AnalysisSpecError) -> AnalysisCondition? {
        guard let text = settings[key] else { return nil }
        do {
            return try AnalysisCondition(parsing: text)
        } catch {
            throw AnalysisSpecError(.invalidCondition, key: key,
                                    "\(key) '\(text.prefix(80))' does not parse: \(error.message); write a condition such as result[0] < 0.05.")
        }
    }

    func url(_ key: String, example: String) throws(AnalysisSpecError) -> String {
        guard let text = settings[key] else {
            throw AnalysisSpecError(.missingKey, key: key, "The check has no \(key); write e.g. \(key)=\(example).")
        }
        let rest = text.hasPrefix("http://") ? text.dropFirst(7) : text.hasPrefix("https://") ? text.dropFirst(8) : nil
        guard let rest, let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty,
              text.utf8.count <= 2048, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw AnalysisSpecError(.invalidValue, key: key, "\(key) is '\(text.prefix(80))'; write an http:// or https:// URL without spaces, e.g. \(example).")
        }
        return text
    }

    func integer(_ key: String, in range: ClosedRange<Int>, _ what: String) throws(AnalysisSpecError) -> Int? {
        guard let text = settings[key] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw AnalysisSpecError(.invalidValue, key: key, "\(key) is '\(text.prefix(40))'; write \(what) from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }

    func decimal(_ key: String, in range: ClosedRange<Double>, _ what: String) throws(AnalysisSpecError) -> Double? {
        guard let text = settings[key] else { return nil }
        guard text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }), let value = Double(text), range.contains(value) else {
            throw AnalysisSpecError(.invalidValue, key: key,
                                    "\(key) is '\(text.prefix(40))'; write \(what) from \(AnalysisFormat.number(range.lowerBound)) to \(AnalysisFormat.number(range.upperBound)).")
        }
        return value
    }
}
