@testable import SwitchbackAnalysis
import Testing

/// Answers a real Prometheus does not give but a proxy or another server can: each an error
/// with a sentence, never samples.
@Suite struct PrometheusAnswerShapeTests {
    let address = "http://127.0.0.1:9090"

    func decode(status: Int, _ body: String, curlCode: Int32 = 0) -> PrometheusAnswer {
        let answer = HTTPGet.Answer(curlCode: curlCode, stop: 0, status: status, body: Array(body.utf8), error: "",
                                    latencyMilliseconds: 1)
        return PrometheusClient.decode(answer, address: address, timeoutMilliseconds: 5000, maxBodyBytes: 1 << 20)
    }

    @Test func wrongShapesAreErrors() {
        let notResult = "Prometheus at \(address) answered something that is not a Prometheus query result (not JSON of the expected shape); check the address"
        #expect(decode(status: 200, "<html>hello</html>") == .error(notResult))
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}") == .error(notResult))
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1,2]}]}}") == .error(notResult),
                "a value that is not a string")
        #expect(decode(status: 200, "{\"status\":\"success\"}") == .error("Prometheus at \(address) answered status 'success' without data"))
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1,\"abc\"]}]}}")
            == .error("Prometheus at \(address) answered a sample value 'abc' that is not a number"))
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"histogram\",\"result\":[]}}")
            == .error("the query returned a histogram, not an instant vector"))
    }

    /// Issue 36: every text of the answer is `OutsideText` (by scalars: "\r\n" is one
    /// Character), the errorType too, so no sentence carries a line break or a control.
    @Test func theAnswersTextIsMadeSafeWhereverItIs() {
        let injected = #"x\r\nverdict successful\u001b[31m\u2028\u0085y"#
        let cleaned = "x verdict successful\\u{1B}[31m y"
        #expect(decode(status: 400, #"{"status":"error","errorType":"bad_data","error":"\#(injected)"}"#)
            == .error("Prometheus at \(address) refused the query (bad_data: \(cleaned))"))
        #expect(decode(status: 400, #"{"status":"error","errorType":"\#(injected)","error":"e"}"#)
            == .error("Prometheus at \(address) refused the query (\(cleaned): e)"))
        #expect(decode(status: 200, #"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"\#(injected)"]}]}}"#)
            == .error("Prometheus at \(address) answered a sample value '\(cleaned)' that is not a number"))
        #expect(decode(status: 200, #"{"status":"success","data":{"resultType":"\#(injected)","result":[]}}"#)
            == .error("the query returned a \(cleaned), not an instant vector"))
    }

    @Test func errorStatusesAreErrors() {
        #expect(decode(status: 503, "Service Unavailable") == .error("Prometheus at \(address) answered HTTP 503, not a query result; check the address"))
        #expect(decode(status: 422, "{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"many-to-many matching not allowed\"}")
            == .error("Prometheus at \(address) refused the query (execution: many-to-many matching not allowed)"))
        #expect(decode(status: 200, "{\"status\":\"error\",\"errorType\":\"timeout\",\"error\":\"query timed out\"}")
            == .error("Prometheus at \(address) answered HTTP 200 with an error (timeout: query timed out)"))
        #expect(decode(status: 0, "", curlCode: 28) == .error("Prometheus at \(address) did not answer within 5000 ms"))
        #expect(decode(status: 0, "", curlCode: 6) == .error("Prometheus at \(address) could not be reached (host not found)"))
    }

    @Test func valuesAsPrometheusWritesThem() {
        let body = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"0.5\"]},{\"value\":[1,\"NaN\"]},{\"value\":[1,\"+Inf\"]},{\"value\":[1,\"-Inf\"]},{\"value\":[1,\"1e-3\"]}]}}"
        guard case .samples(let values) = decode(status: 200, body) else {
            Issue.record("not samples")
            return
        }
        #expect(values.count == 5 && values[0] == 0.5 && values[1].isNaN && values[2] == .infinity && values[3] == -.infinity && values[4] == 0.001)
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}") == .samples([]))
        #expect(decode(status: 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"3\"]}}") == .samples([3]))
    }
}
