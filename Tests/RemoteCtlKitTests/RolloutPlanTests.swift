@testable import RemoteCtlKit
import SwitchbackCore
import Testing

/// The rollout plan: every key, its defaults, and one sentence naming the key for each
/// mistake, before anything is published.
@Suite struct RolloutPlanTests {
    static func plan(_ lines: String...) throws(RolloutPlanError) -> RolloutPlan {
        let text = try! KeyValueText.parse(Array(lines.joined(separator: "\n").utf8), describing: "plan")
        return try RolloutPlan.parse(text, file: "plan")
    }

    @Test func aFullPlanIsRead() throws {
        let plan = try Self.plan(
            "rollout.version=1.3.0", "rollout.steps=1, 10,50,100", "rollout.pause_s=2m", "rollout.approval=50",
            "rollout.expires_in=12h", "rollout.app_id=dev.example", "rollout.previous_version=1.2.0",
            "analysis.checks=rollbacks", "analysis.check.rollbacks.kind=prometheus",
            "analysis.check.rollbacks.address=http://127.0.0.1:9090",
            "analysis.check.rollbacks.query=sum(switchback_rollbacks_total{source=\"auto\"}) or vector(0)",
            "analysis.check.rollbacks.success=result[0] == 0")
        #expect(plan.version == "1.3.0")
        #expect(plan.steps == [1, 10, 50, 100])
        #expect(plan.pauses.allSatisfy { $0 == 120 } && plan.pauses.count == plan.steps.count)
        #expect(plan.approvalSteps == [50])
        #expect(plan.expiresInSeconds == 43_200)
        #expect(plan.appID == "dev.example")
        #expect(plan.previousVersion == "1.2.0")
        #expect(plan.checkNames == ["rollbacks"])
        #expect(plan.hasChecks)
        #expect(plan.stepsSummary == "1%, 10%, 50% (approval), 100%")
    }

    @Test func theDefaults() throws {
        let plan = try Self.plan("rollout.version=1.3.0", "rollout.steps=100")
        #expect(plan.pauses.allSatisfy { $0 == 60 })
        #expect(plan.expiresInSeconds == 7 * 86_400)
        #expect(plan.approvalSteps.isEmpty)
        #expect(plan.appID == nil && plan.previousVersion == nil)
        #expect(!plan.hasChecks)
    }

    /// One pause per step, as Argo's steps each carry their own (issue 40: one rollout.pause_s
    /// served every step); the machine pauses each step for its own.
    @Test func aPausePerStep() throws {
        let plan = try Self.plan("rollout.version=1.3.0", "rollout.steps=5,50,100", "rollout.pause_s=2m, 30m,0")
        #expect(plan.pauses == [120, 1800, 0])
        #expect(plan.pause(afterStep: 2) == 1800)
        #expect(plan.pausesSummary == "a pause of 120 s, 1800 s and 0 s after each step in turn")
        #expect(try Self.plan("rollout.version=1.3.0", "rollout.steps=5,100", "rollout.pause_s=90").pausesSummary == "a 90 s pause after each")
        #expect(throws: RolloutPlanError("The rollout plan plan has rollout.pause_s=1m,2m: 2 pauses for 3 steps (5%, 50%, 100%); give one pause for every step, or one for all.")) {
            try Self.plan("rollout.version=1.3.0", "rollout.steps=5,50,100", "rollout.pause_s=1m,2m")
        }
        var machine = RolloutMachine(plan: plan, state: nil, approve: false)
        let first = machine.resume(onDisk: nil, abort: false, now: 100)
        #expect(RolloutMachineTests.publish(&machine, first, serial: 1) == .analyse(step: 1, percent: 5, seconds: 120, resumed: false))
        let second = machine.judged(.passed("fine"), now: 300)
        #expect(RolloutMachineTests.publish(&machine, second, serial: 2) == .analyse(step: 2, percent: 50, seconds: 1800, resumed: false))
    }

    @Test func queryVariablesAreSubstituted() {
        let query = "count(switchback_slot_info{version=\"$version\"}) / count(switchback_slot_info{version=\"$previous_version\"})"
        #expect(AnalysisCheck.Prometheus.variablesUsed(in: query) == ["version", "previous_version"])
        let plan = try! Self.plan("rollout.version=1.3.0", "rollout.steps=100", "rollout.previous_version=1.2.0")
        #expect(AnalysisCheck.Prometheus(address: "", query: query, success: nil, failure: nil).query(substituting: plan.variableValues)
            == "count(switchback_slot_info{version=\"1.3.0\"}) / count(switchback_slot_info{version=\"1.2.0\"})")
    }

    @Test(arguments: [
        (["rollout.steps=1,100"], "The rollout plan plan has no rollout.version (the current-slot version to roll out, such as 1.3.0)."),
        (["rollout.version=1.3.0"], "The rollout plan plan has no rollout.steps (the percentages to publish in turn, such as 1,10,50,100)."),
        (["rollout.version=1.3.0", "rollout.steps=1,soon"], "The rollout plan plan has rollout.steps=1,soon: 'soon' is not a whole percentage from 1 to 100."),
        (["rollout.version=1.3.0", "rollout.steps=0,100"], "The rollout plan plan has rollout.steps=0,100: '0' is not a whole percentage from 1 to 100."),
        (["rollout.version=1.3.0", "rollout.steps=50,10"], "The rollout plan plan has rollout.steps=50,10: the percentages must go up, and 10 comes after 50."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "rollout.pause_s=a minute"],
         "The rollout plan plan has rollout.pause_s=a minute, which is not a duration such as 90s, 30m, 12h or 7d (0 for none)."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "rollout.expires_in=0"],
         "The rollout plan plan has rollout.expires_in=0, which is not a duration such as 90s, 30m, 12h or 7d."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "rollout.approval=50"],
         "The rollout plan plan has rollout.approval=50: '50' is not one of the steps (1,100)."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "rollout.pase_s=5"],
         "The rollout plan plan has an unknown key rollout.pase_s; the keys are rollout.app_id, rollout.approval, rollout.expires_in, rollout.pause_s, rollout.previous_version, rollout.steps, rollout.version, analysis.* and hooks.*."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "rollout.steps=5,100"], "The rollout plan plan sets rollout.steps twice; keep one line."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "hooks.url=https://hooks.example.com/r"],
         "In the rollout plan plan, hooks.url is set without hooks.secret_file; name the file holding the key the events are signed with (HMAC-SHA256), so that the receiver can tell them from forgeries."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "analysis.window_s=60"],
         "The rollout plan plan sets analysis.window_s=60, but a rollout's analysis window is each step's pause; set rollout.pause_s instead."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "analysis.check.web.kind=http"],
         "The rollout plan plan has analysis.check.web.kind=http, but a fleet rollout runs kind=prometheus checks only (http and app checks judge one host's bake window)."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "analysis.checks=errors", "analysis.check.errors.kind=prometheus",
          "analysis.check.errors.address=http://127.0.0.1:9090", "analysis.check.errors.query=up", "analysis.check.errors.success=result[0] <"],
         "In the rollout plan plan, analysis.check.errors.success 'result[0] <' does not parse: expected a number, result, len(result), isNaN(...) or ( at column 12, found the end of the condition; write a condition such as result[0] < 0.05."),
        (["rollout.version=1.3.0", "rollout.steps=1,100", "analysis.check.errors.query=up{host=\"$hostname\"}"],
         "The rollout plan plan has $hostname in analysis.check.errors.query, which a fleet rollout has no value for; use $version or $previous_version."),
    ])
    func aBadPlanIsOneSentenceNamingTheKey(lines: [String], message: String) {
        let text = try! KeyValueText.parse(Array(lines.joined(separator: "\n").utf8), describing: "plan")
        #expect(throws: RolloutPlanError(message)) { try RolloutPlan.parse(text, file: "plan") }
    }
}
