import SwitchbackCore
import Testing

/// `analysis.*` settings as a manifest or a rollout plan spells them.
@Suite struct AnalysisSpecTests {
    let full: [String: String] = [
        "analysis.window_s": "60",
        "analysis.interval_s": "10",
        "analysis.failure_limit": "1",
        "analysis.inconclusive_limit": "2",
        "analysis.consecutive_error_limit": "3",
        "analysis.checks": "http, errors,app",
        "analysis.check.http.kind": "http",
        "analysis.check.http.url": "http://127.0.0.1:8080/notes",
        "analysis.check.http.success_status": "200-399,404",
        "analysis.check.http.probe_interval_ms": "250",
        "analysis.check.http.timeout_ms": "1000",
        "analysis.check.http.window_s": "30",
        "analysis.check.http.max_failure_percent": "2.5",
        "analysis.check.http.latency_limit_ms": "250",
        "analysis.check.http.latency_percentile": "99.9",
        "analysis.check.http.min_probes": "10",
        "analysis.check.errors.kind": "prometheus",
        "analysis.check.errors.interval_s": "5",
        "analysis.check.errors.address": "http://127.0.0.1:9090/",
        "analysis.check.errors.query": "sum(rate(x{version=\"$version\",build=\"$build\"}[30s]))",
        "analysis.check.errors.success": "result[0] < 0.05",
        "analysis.check.errors.failure": "result[0] >= 0.05",
        "analysis.check.errors.timeout_ms": "3000",
        "analysis.check.app.kind": "app",
        "analysis.check.app.max_failures": "10",
        "analysis.check.app.on_failure": "record",
        "analysis.check.errors.on_failure": "hold",
        "analysis.dry_run": "true",
        "supervise": "true",
        "remote.interval_s": "nonsense, not ours",
    ]

    @Test func readsEverySetting() throws {
        let spec = try #require(try AnalysisSpec.parse(full))
        #expect(spec.windowSeconds == 60 && spec.intervalSeconds == 10)
        #expect(spec.failureLimit == 1 && spec.inconclusiveLimit == 2 && spec.consecutiveErrorLimit == 3)
        #expect(spec.checks.map(\.name) == ["http", "errors", "app"])
        #expect(spec.checks.map(\.intervalMilliseconds) == [10_000, 5_000, 10_000])
        guard case .http(let http) = spec.checks[0].kind else { Issue.record("not http"); return }
        #expect(http.url == "http://127.0.0.1:8080/notes")
        #expect(http.successStatuses.contains(302) && http.successStatuses.contains(404) && !http.successStatuses.contains(500))
        #expect(http.probeIntervalMilliseconds == 250 && http.timeoutMilliseconds == 1000 && http.windowMilliseconds == 30_000)
        #expect(http.maxFailurePercent == 2.5 && http.latencyLimitMilliseconds == 250 && http.latencyPercentile == 99.9 && http.minProbes == 10)
        guard case .prometheus(let prometheus) = spec.checks[1].kind else { Issue.record("not prometheus"); return }
        #expect(prometheus.address == "http://127.0.0.1:9090", "the trailing slash goes")
        #expect(prometheus.success?.text == "result[0] < 0.05" && prometheus.failure?.text == "result[0] >= 0.05")
        #expect(prometheus.timeoutMilliseconds == 3000)
        #expect(prometheus.query(substituting: ["version": "1.2.0", "build": "ab\"c"])
            == "sum(rate(x{version=\"1.2.0\",build=\"ab\\\"c\"}[30s]))")
        #expect(spec.checks[2].kind == .app(AnalysisCheck.App(maxFailures: 10)))
        #expect(spec.checks.map(\.onFailure) == [.rollback, .hold, .record])
        #expect(spec.dryRun)
    }

    @Test func defaults() throws {
        let spec = try #require(try AnalysisSpec.parse([
            "analysis.window_s": "60", "analysis.checks": "web,p99",
            "analysis.check.web.kind": "http", "analysis.check.web.url": "https://localhost/",
            "analysis.check.p99.kind": "prometheus", "analysis.check.p99.address": "http://[::1]:9090",
            "analysis.check.p99.query": "up", "analysis.check.p99.failure": "result > 0.25",
            "analysis.consecutive_error_limit": "",
        ]))
        #expect(spec.intervalSeconds == 10 && spec.failureLimit == 0 && spec.inconclusiveLimit == 0)
        #expect(spec.consecutiveErrorLimit == nil, "an empty value is an absent key")
        #expect(spec.checks[0].kind == .http(AnalysisCheck.HTTP(url: "https://localhost/", windowMilliseconds: 60_000)))
        guard case .http(let http) = spec.checks[0].kind else { return }
        #expect(http.successStatuses == .success && http.probeIntervalMilliseconds == 500 && http.timeoutMilliseconds == 2000)
        #expect(http.maxFailurePercent == 5 && http.latencyLimitMilliseconds == nil && http.latencyPercentile == 99 && http.minProbes == 5)
        guard case .prometheus(let prometheus) = spec.checks[1].kind else { return }
        #expect(prometheus.success == nil && prometheus.timeoutMilliseconds == 5000)
        #expect(spec.checks.allSatisfy { $0.onFailure == .rollback } && !spec.dryRun)
    }

    @Test func noAnalysisIsNil() throws {
        #expect(try AnalysisSpec.parse([:]) == nil)
        #expect(try AnalysisSpec.parse(["analysis.window_s": "0", "supervise": "true"]) == nil)
        #expect(try AnalysisSpec.parse(["analysis.interval_s": "5"]) == nil)
        #expect(try AnalysisSpec.parse(["analysis.window_s": ""]) == nil)
        // An explicit 0 turns an analysis with checks off (`rollbackctl bake-window 0`).
        #expect(try AnalysisSpec.parse(full.merging(["analysis.window_s": "0"]) { $1 }) == nil)
    }

    @Test func aWindowWithoutChecksOnlyWaits() throws {
        let spec = try #require(try AnalysisSpec.parse(["analysis.window_s": "30"]))
        #expect(spec.windowSeconds == 30 && spec.checks.isEmpty)
    }

    @Test func readsTheAnalysisKeysOfAKeyValueText() throws {
        let text = try KeyValueText.parse(Array("format=1\nanalysis.window_s=45\nanalysis.window_s=90\nremote.url=x\n".utf8), describing: "m")
        #expect(AnalysisSpec.settings(in: text) == ["analysis.window_s": "45"])
    }

    /// Every bad key and value: the code, the key, and a sentence that names the key and says what to write.
    @Test func baselineBesideCanaryAddsAComparisonCheckNamedBaseline() throws {
        let spec = try #require(try AnalysisSpec.parse(["analysis.window_s": "60", "analysis.baseline": "true", "analysis.baseline.confidence": "0.99",
                                                        "analysis.baseline.on_failure": "hold", "analysis.checks": "h",
                                                        "analysis.check.h.kind": "http", "analysis.check.h.url": "http://127.0.0.1:8080/"]))
        let comparison = try #require(spec.checks.last)
        #expect(spec.checks.map(\.name) == ["h", "baseline"])
        #expect(comparison.kind == .baseline(BaselineSettings(confidence: 0.99)))
        #expect(comparison.onFailure == .hold && comparison.intervalMilliseconds == 10_000)
        let off = try #require(try AnalysisSpec.parse(["analysis.window_s": "60", "analysis.baseline": "false", "analysis.checks": "h",
                                                       "analysis.check.h.kind": "http", "analysis.check.h.url": "http://127.0.0.1:8080/"]))
        #expect(off.checks.map(\.name) == ["h"])
    }

    @Test(arguments: [
        (["analysis.window_s": "abc"], AnalysisSpecError.Code.invalidValue, "analysis.window_s", "write a whole number of seconds from 0 to 604800"),
        (["analysis.window_s": "-5"], .invalidValue, "analysis.window_s", "from 0 to 604800"),
        (["analysis.window_s": "604801"], .invalidValue, "analysis.window_s", "from 0 to 604800"),
        (["analysis.window_s": "60", "analysis.interval_s": "0"], .invalidValue, "analysis.interval_s", "from 1 to 86400"),
        (["analysis.window_s": "60", "analysis.failure_limit": "1.5"], .invalidValue, "analysis.failure_limit", "whole number of measurements"),
        (["analysis.window_s": "60", "analysis.inconclusive_limit": "-1"], .invalidValue, "analysis.inconclusive_limit", "from 0 to 1000000"),
        (["analysis.window_s": "60", "analysis.consecutive_error_limit": "x"], .invalidValue, "analysis.consecutive_error_limit", "from 0 to 1000000"),
        (["analysis.window_s": "60", "analysis.windw_s": "60"], .unknownKey, "analysis.windw_s", "is not an analysis setting"),
        (["analysis.window_s": "60", "analysis.check": "x"], .unknownKey, "analysis.check", "is not an analysis setting"),
        (["analysis.window_s": "60", "analysis.checks": "a b,c"], .invalidValue, "analysis.checks", "letters, digits"),
        (["analysis.window_s": "60", "analysis.checks": "a,,b"], .invalidValue, "analysis.checks", "comma-separated"),
        (["analysis.window_s": "60", "analysis.checks": "a,a"], .invalidValue, "analysis.checks", "lists a twice"),
        (["analysis.checks": "x", "analysis.check.x.kind": "app"], .missingKey, "analysis.window_s", "write analysis.window_s=SECONDS"),
        (["analysis.window_s": "60", "analysis.check.x.kind": "app"], .unknownKey, "analysis.check.x.kind", "add x to analysis.checks"),
        (["analysis.window_s": "60", "analysis.checks": "x"], .missingKey, "analysis.check.x.kind", "write analysis.check.x.kind=http, prometheus or app"),
        (["analysis.window_s": "60", "analysis.checks": "x", "analysis.check.x.kind": "web"], .invalidValue, "analysis.check.x.kind", "write http, prometheus or app"),
        (["analysis.window_s": "60", "analysis.checks": "x", "analysis.check.x.kind": "app", "analysis.check.x.url": "http://a/"],
         .unknownKey, "analysis.check.x.url", "not a setting of an app check; an app check takes interval_s, max_failures"),
        (["analysis.window_s": "60", "analysis.checks": "x", "analysis.check.x.kind": "app", "analysis.check.x.max_failures": "many"],
         .invalidValue, "analysis.check.x.max_failures", "whole number of failures"),
        (["analysis.window_s": "60", "analysis.checks": "x", "analysis.check.x.kind": "app", "analysis.check.x.interval_s": "0"],
         .invalidValue, "analysis.check.x.interval_s", "from 1 to 86400"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http"], .missingKey, "analysis.check.h.url", "write e.g. analysis.check.h.url="),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "ftp://x/"],
         .invalidValue, "analysis.check.h.url", "http:// or https:// URL"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http:///path"],
         .invalidValue, "analysis.check.h.url", "http:// or https:// URL"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/b c"],
         .invalidValue, "analysis.check.h.url", "without spaces"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.success_status": "200-99"], .invalidValue, "analysis.check.h.success_status", "200-399,404"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.success_status": "2xx"], .invalidValue, "analysis.check.h.success_status", "from 100 to 599"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.probe_interval_ms": "5"], .invalidValue, "analysis.check.h.probe_interval_ms", "from 10 to 3600000"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.timeout_ms": "0"], .invalidValue, "analysis.check.h.timeout_ms", "from 1 to 600000"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.window_s": "0"], .invalidValue, "analysis.check.h.window_s", "from 1 to 604800"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.max_failure_percent": "101"], .invalidValue, "analysis.check.h.max_failure_percent", "a percentage from 0 to 100"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.max_failure_percent": "nan"], .invalidValue, "analysis.check.h.max_failure_percent", "a percentage from 0 to 100"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.latency_limit_ms": "0"], .invalidValue, "analysis.check.h.latency_limit_ms", "from 1 to 600000"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.latency_percentile": "0.5"], .invalidValue, "analysis.check.h.latency_percentile", "a percentile from 1 to 100"),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.min_probes": "0"], .invalidValue, "analysis.check.h.min_probes", "from 1 to 1000000"),
        (["analysis.window_s": "10", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.min_probes": "50"], .invalidValue, "analysis.check.h.min_probes", "a 10 s window holds at most 21 probes 500 ms apart"),
        // A first measurement that cannot hold min_probes: inconclusive in every analysis (issue 40).
        (["analysis.window_s": "60", "analysis.interval_s": "1", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/"],
         .invalidValue, "analysis.interval_s", "analysis.interval_s is 1 s, but analysis.check.h.min_probes (5) probes 500 ms apart take 2500 ms: its first measurement, 1 s after the start, would hold at most 2 and be inconclusive in every analysis; raise analysis.interval_s to at least 3, lower min_probes or lower probe_interval_ms."),
        (["analysis.window_s": "60", "analysis.checks": "h", "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/",
          "analysis.check.h.interval_s": "2", "analysis.check.h.min_probes": "25", "analysis.check.h.probe_interval_ms": "100"],
         .invalidValue, "analysis.check.h.interval_s", "raise analysis.check.h.interval_s to at least 3"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.query": "up",
          "analysis.check.p.success": "result == 1"], .missingKey, "analysis.check.p.address", "write e.g. analysis.check.p.address=http://127.0.0.1:9090"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "127.0.0.1:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1"], .invalidValue, "analysis.check.p.address", "http:// or https:// URL"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.success": "result == 1"], .missingKey, "analysis.check.p.query", "write the PromQL instant query"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up{v=\"$versoin\"}", "analysis.check.p.success": "result == 1"],
         .invalidValue, "analysis.check.p.query", "uses $versoin, which is not a variable; write one of $version, $build"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up"], .missingKey, "analysis.check.p.success", "neither analysis.check.p.success nor analysis.check.p.failure"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result[0] <"],
         .invalidCondition, "analysis.check.p.success", "'result[0] <' does not parse: expected a number, result, len(result), isNaN(...) or ( at column 12"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up", "analysis.check.p.failure": "result = 1"],
         .invalidCondition, "analysis.check.p.failure", "unexpected '=' at column 8 (compare with ==)"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1", "analysis.check.p.timeout_ms": "700000"],
         .invalidValue, "analysis.check.p.timeout_ms", "from 1 to 600000"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1", "analysis.check.p.max_failures": "3"],
         .unknownKey, "analysis.check.p.max_failures", "not a setting of a prometheus check"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://10.0.0.5:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1"],
         .invalidValue, "analysis.check.p.address", "is http://10.0.0.5:9090, plain http to a host other than loopback, where anything on the path could change the answers that judge a build; use https, or set analysis.allow_insecure_http=true to accept that."),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://127.0.0.1@prometheus.example/",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1"],
         .invalidValue, "analysis.check.p.address", "plain http to a host other than loopback"),
        (["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus", "analysis.check.p.address": "http://10.0.0.5:9090",
          "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1", "analysis.allow_insecure_http": "yes"],
         .invalidValue, "analysis.allow_insecure_http", "is 'yes'; write true or false."),
        (["analysis.window_s": "60", "analysis.checks": "a", "analysis.check.a.kind": "app", "analysis.check.a.on_failure": "pause"],
         .invalidValue, "analysis.check.a.on_failure", "is 'pause'; write rollback, hold or record."),
        (["analysis.window_s": "60", "analysis.dry_run": "1"],
         .invalidValue, "analysis.dry_run", "is '1'; write true or false."),
        // Baseline beside canary: a comparison that could not judge is refused.
        (["analysis.window_s": "60", "analysis.baseline": "true", "analysis.checks": "a", "analysis.check.a.kind": "app"],
         .invalidValue, "analysis.baseline", "compares the builds by the answers to an http check's probes, and analysis.checks has no http check"),
        (["analysis.window_s": "60", "analysis.baseline": "true", "analysis.checks": "baseline", "analysis.check.baseline.kind": "http",
          "analysis.check.baseline.url": "http://a/"], .invalidValue, "analysis.checks", "lists a check named baseline"),
        (["analysis.window_s": "60", "analysis.baseline": "true", "analysis.checks": "h", "analysis.check.h.kind": "http",
          "analysis.check.h.url": "https://a/"], .invalidValue, "analysis.check.h.url", "probes each build over plain http"),
        (["analysis.window_s": "10", "analysis.baseline": "true", "analysis.baseline.min_samples": "20", "analysis.checks": "h",
          "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/"],
         .invalidValue, "analysis.baseline.min_samples", "analysis.baseline.min_samples is 20, but each build answers about half of the probes and the window holds at most 10 for each"),
        (["analysis.window_s": "60", "analysis.baseline": "true", "analysis.baseline.pass_score": "70", "analysis.checks": "h",
          "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/"],
         .invalidValue, "analysis.baseline.marginal_score", "analysis.baseline.marginal_score is 75, above analysis.baseline.pass_score (70)"),
        (["analysis.window_s": "60", "analysis.baseline.confidence": "0.99", "analysis.checks": "h", "analysis.check.h.kind": "http",
          "analysis.check.h.url": "http://a/"], .invalidValue, "analysis.baseline.confidence", "is set but analysis.baseline is not true"),
        (["analysis.window_s": "60", "analysis.baseline": "true", "analysis.baseline.confidence": "2", "analysis.checks": "h",
          "analysis.check.h.kind": "http", "analysis.check.h.url": "http://a/"], .invalidValue, "analysis.baseline.confidence", "from 0.5 to 0.9999"),
        (["analysis.window_s": "60", "analysis.baseline.weight": "50"], .unknownKey, "analysis.baseline.weight", "is not an analysis setting"),
    ] as [([String: String], AnalysisSpecError.Code, String, String)])
    func refusesBadSettings(settings: [String: String], code: AnalysisSpecError.Code, key: String, phrase: String) {
        let error = #expect(throws: AnalysisSpecError.self) { try AnalysisSpec.parse(settings) }
        #expect(error?.code == code)
        #expect(error?.key == key)
        #expect(error?.message.contains(key) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(phrase) == true, "\(error?.message ?? "")")
        #expect(error?.message.hasSuffix(".") == true)
    }

    @Test func tooManyChecks() {
        let names = (0...32).map { "c\($0)" }.joined(separator: ",")
        let error = #expect(throws: AnalysisSpecError.self) { try AnalysisSpec.parse(["analysis.window_s": "60", "analysis.checks": names]) }
        #expect(error?.message == "analysis.checks lists 33 checks, more than 32; list fewer.")
    }

    @Test func statusSets() {
        #expect(HTTPStatusSet("200")?.description == "200")
        #expect(HTTPStatusSet("200-299, 404")?.description == "200-299,404")
        for bad in ["", "99", "600", "300-200", "200-", "-200", "2xx", "200,", "200-300-400"] {
            #expect(HTTPStatusSet(bad) == nil, "\(bad)")
        }
    }

    @Test func plainHTTPToAnotherHostNeedsTheExplicitSetting() throws {
        var settings = ["analysis.window_s": "60", "analysis.checks": "p", "analysis.check.p.kind": "prometheus",
                        "analysis.check.p.query": "up", "analysis.check.p.success": "result == 1"]
        for address in ["http://127.0.0.1:9090", "http://localhost:9090", "http://[::1]:9090", "https://prometheus.example", "https://10.0.0.5"] {
            settings["analysis.check.p.address"] = address
            #expect(try AnalysisSpec.parse(settings) != nil, "\(address)")
        }
        settings["analysis.check.p.address"] = "http://prometheus.example:9090"
        #expect(throws: AnalysisSpecError.self) { try AnalysisSpec.parse(settings) }
        settings["analysis.allow_insecure_http"] = "true"
        let spec = try #require(try AnalysisSpec.parse(settings))
        guard case .prometheus(let check) = spec.checks[0].kind else { Issue.record("not a prometheus check"); return }
        #expect(check.address == "http://prometheus.example:9090")
    }
}
