import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One writer of the served directive (issue 36, part 6), with the real rollbackctl-remote:
/// a rollout runs in one process; from another shell, an `--abort` or a directive published
/// by hand (`sign --out`) during its pause ends it. The rollback (or the hand's directive)
/// stays served, the running rollout stops with exit 4 and its sentence, and nothing is
/// published after it. A second rollout with the same state file refuses while one runs.
@Suite struct RolloutTakeoverTests {
    final class Workspace {
        let t: TestBundle
        let www: String
        let directive: String
        let state: String
        let plan: String
        let keys: String
        let log: String
        var remote: String { t.bundle + "/bin/rollbackctl-remote" }

        init() throws {
            t = try TestBundle()
            www = t.directory + "/www"
            directive = www + "/directive.json"
            state = t.directory + "/rollout.state"
            plan = t.directory + "/plan"
            keys = t.directory + "/keys"
            log = t.directory + "/rollout.log"
            try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
            let made = try runProcess(remote, ["keygen", "--out", keys])
            try #require(made.status == 0, "\(made)")
            // No checks: each pause only waits (20 s: room for the other shell on a busy machine), so
            // the test needs no Prometheus.
            try """
                rollout.version=9.9.9
                rollout.steps=5,50,100
                rollout.pause_s=20
                rollout.app_id=dev.switchback.sample
                rollout.previous_version=9.9.8

                """.write(toFile: plan, atomically: true, encoding: .utf8)
        }

        var arguments: [String] { ["rollout", "--plan", plan, "--key", keys + "/directive.key", "--out", directive, "--state", state] }

        /// Starts the rollout in the background, its output into `log`.
        func start() throws -> SpawnedProcess {
            try SpawnedProcess(remote, arguments, environment: ["PATH": "/usr/bin:/bin"], stdout: log + ".out", stderr: log + ".err")
        }

        /// Waits until the rollout pauses after step `step`.
        func waitForPause(step: Int) throws {
            let paused = waitUntil(seconds: 60) {
                let text = (try? String(contentsOfFile: state, encoding: .utf8)) ?? ""
                return text.contains("\nstep=\(step)\n") && text.contains("\nphase=analysing\n")
            }
            try #require(paused, "the rollout never paused after step \(step): \(output())")
        }

        func output() -> String {
            ((try? String(contentsOfFile: log + ".out", encoding: .utf8)) ?? "") + ((try? String(contentsOfFile: log + ".err", encoding: .utf8)) ?? "")
        }

        /// The served file's bytes and inode: a replacement (by rename) changes the inode.
        func served() throws -> (bytes: Data, inode: UInt64) {
            var info = stat()
            try #require(stat(directive, &info) == 0)
            return (try Data(contentsOf: URL(fileURLWithPath: directive)), UInt64(info.st_ino))
        }

        /// The served directive's decision and serial.
        func payload() throws -> (decision: String, serial: UInt64) {
            let bytes = try served().bytes
            let envelope = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
            let text = try #require(envelope["payload"] as? String)
            let data = try #require(Data(base64Encoded: text))
            let directive = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let decision = try #require(directive["decision"] as? String)
            let serial = try #require((directive["serial"] as? NSNumber)?.uint64Value)
            return (decision, serial)
        }
    }

    /// `--promote-full` on a rollout waiting at an approval step: the last step (100%) is
    /// published at once, its pause skipped, exit 0 (Argo's promote --full).
    @Test func promoteFullPublishesTheLastStepAtOnce() throws {
        let w = try Workspace()
        try """
            rollout.version=9.9.9
            rollout.steps=5,50,100
            rollout.pause_s=0
            rollout.approval=50
            rollout.app_id=dev.switchback.sample
            rollout.previous_version=9.9.8

            """.write(toFile: w.plan, atomically: true, encoding: .utf8)
        let waiting = try runProcess(w.remote, w.arguments)
        #expect(waiting.status == 3, "\(waiting)")
        #expect(try w.payload().decision == "run_current")
        let promoted = try runProcess(w.remote, w.arguments + ["--promote-full"])
        #expect(promoted.status == 0, "\(promoted)")
        #expect(promoted.stdout.contains("Promoted by the operator (--promote-full): skipping 1 step and their pauses, publishing the last step now, unanalysed."), "\(promoted.stdout)")
        #expect(promoted.stdout.contains("The rollout of 9.9.9 is complete: its last directive (serial \(try w.payload().serial)) was published for every install (100%); its last pause measured: promoted to 100% by the operator (--promote-full): not analysed."), "\(promoted.stdout)")
        let both = try runProcess(w.remote, w.arguments + ["--promote-full", "--abort"])
        #expect(both.status == 64 && both.stderr.hasPrefix("Error: Give '--promote-full' or '--abort', not both."), "\(both)")
    }

    @Test func anAbortFromAnotherShellEndsTheRunningRolloutAndItsRollbackStays() throws {
        let w = try Workspace()
        let running = try w.start()
        try w.waitForPause(step: 1)

        // A second rollout with the same state file refuses at once, naming the one that runs.
        let second = try runProcess(w.remote, w.arguments)
        #expect(second.status == 1, "\(second)")
        #expect(second.stderr == "Error: Another rollbackctl-remote rollout (pid \(running.pid)) is running with the state file \(w.state); wait for it to end, or run the same command with --abort to roll back now (which ends that rollout).\n")

        let abort = try runProcess(w.remote, w.arguments + ["--abort"])
        #expect(abort.status == 0, "\(abort)")
        let rollback = try w.payload()
        #expect(rollback.decision == "run_previous")
        #expect(abort.stdout.hasPrefix("A rollout is running with the state file \(w.state) (pid \(running.pid)): publishing the rollback beside it;"), "\(abort.stdout)")
        #expect(abort.stdout.hasSuffix("Rolled back 9.9.9 for every install (directive serial \(rollback.serial)): aborted by the operator (--abort).\n"), "\(abort.stdout)")
        let afterAbort = try w.served()

        running.wait(upTo: 60)
        #expect(running.exitCode == 4, "\(w.output())")
        let stderr = (try? String(contentsOfFile: w.log + ".err", encoding: .utf8)) ?? ""
        #expect(stderr == "Error: The rollout of 9.9.9 was aborted from another process (--abort) during the pause of step 1 of 3 (5%): its rollback (directive serial \(rollback.serial)) stays published, and this run publishes nothing more.\n")
        // Nothing published after the abort: the same file, never replaced again.
        let end = try w.served()
        #expect(end.bytes == afterAbort.bytes && end.inode == afterAbort.inode)
        #expect(try w.payload().decision == "run_previous")
        let state = try String(contentsOfFile: w.state, encoding: .utf8)
        #expect(state.contains("\nphase=rolled_back\n") && state.contains("\nrollback.cause=aborted\n"))
        print("RolloutTakeoverTests (abort):\n\(w.output())--- --abort from another shell ---\n\(abort.stdout)")
    }

    @Test func aDirectivePublishedByHandDuringAPauseEndsTheRunningRollout() throws {
        let w = try Workspace()
        let running = try w.start()
        try w.waitForPause(step: 1)
        let signed = try runProcess(w.remote, ["sign", "--key", w.keys + "/directive.key", "--decision", "previous", "--applies-to", "9.9.9",
                                               "--reason", "held by hand", "--app-id", "dev.switchback.sample", "--out", w.directive])
        #expect(signed.status == 0, "\(signed)")
        let hand = try w.payload()
        let afterHand = try w.served()
        running.wait(upTo: 60)
        #expect(running.exitCode == 4, "\(w.output())")
        let stderr = (try? String(contentsOfFile: w.log + ".err", encoding: .utf8)) ?? ""
        #expect(stderr.hasPrefix("Error: The directive file was replaced during the pause of step 1 of 3 (5%): it holds a directive with serial \(hand.serial), not this rollout's (serial "), "\(stderr)")
        #expect(stderr.hasSuffix("), so someone published by hand; this run publishes nothing more over it or after it: find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file.\n"))
        let end = try w.served()
        #expect(end.bytes == afterHand.bytes && end.inode == afterHand.inode, "the hand's directive stays served")
        print("RolloutTakeoverTests (by hand):\n\(w.output())")
    }
}
