import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/deploying.md's Kubernetes manifests (the ConfigMap with a signed directive, the
/// PersistentVolumeClaim, the Deployment with its security context, the Service), played by
/// `podman kube play`. The test changes three things in the text: the image (the one
/// ``NotesImage`` built, whose bundle reads its directive from the ConfigMap's mount), the
/// container's args (the sample's `serve`, which both its builds run: a heartbeat in the state
/// directory, which the test reads) and the ConfigMap's envelope (signed with this run's key).
///
/// What podman's Kubernetes does differently from a kubelet, and so what this test does not
/// show: podman fills a new PersistentVolumeClaim's volume from the image (as it does a named
/// volume: /var/lib/notes owned by 10001, state/ 0700) where a kubelet chgrp's it for
/// `fsGroup`; and a ConfigMap volume holds the files themselves, with no `..data` link that
/// an update renames. The kubelet's layouts stay covered where they were: `DirectiveFileTests`
/// (the `..data` swap, the read-only mount) and `StrictModeTests` (fsGroup's group-writable
/// state directory).
@Suite struct KubePlayTests {
    @Test func theManifestsPlayApplyTheDirectiveAndKeepTheStateAcrossDownAndPlay() throws {
        let image = try NotesImage.shared()
        let documented = try documentedBlock("docs/deploying.md", after: "### With a PersistentVolumeClaim", language: "yaml")
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // podman 4.3 refuses to play a PersistentVolumeClaim whose volume exists ("volume with
        // name notes-data already exists"), where `kubectl apply` leaves the claim as it is: the
        // plays after the first leave its document out, and the Deployment finds the volume.
        func manifests(_ decision: String, serial: Int, withClaim: Bool) throws -> String {
            var lines: [String] = []
            var inEnvelope = false
            for line in documented.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
                if inEnvelope && line.hasPrefix("    ") { continue }
                inEnvelope = false
                if line.hasPrefix("          image: ") {
                    lines.append("          image: \(image.name)")
                } else if line.hasPrefix("          args: ") {
                    lines.append("          args: [\"serve\"]")
                } else if line == "  directive.json: |" {
                    lines.append(line)
                    lines += try image.signed(decision, serial: serial).split(separator: "\n").map { "    " + $0 }
                    inEnvelope = true
                } else {
                    lines.append(line)
                }
            }
            let file = directory + "/notes-\(serial)\(withClaim ? "" : "-without-claim").yaml"
            let documents = lines.joined(separator: "\n").components(separatedBy: "\n---\n")
                .filter { withClaim || !$0.contains("\nkind: PersistentVolumeClaim\n") }
            try documents.joined(separator: "\n---\n").write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }
        let first = try manifests("previous", serial: 1, withClaim: true)
        let again = try manifests("previous", serial: 1, withClaim: false)
        // What an earlier run left (the names are the docs').
        _ = try Podman.run("kube", "down", first)
        _ = try Podman.run("volume", "rm", "-f", "notes-data", "notes-directive")
        defer {
            _ = try? Podman.run("kube", "down", first)
            _ = try? Podman.run("volume", "rm", "-f", "notes-data", "notes-directive")
        }
        func appContainer() throws -> String {
            let names = try Podman.check("ps", "--format", "{{.Names}}", "--filter", "label=io.kubernetes.pod.name")
                .split(separator: "\n").map(String.init)
            let found = try Podman.check("ps", "--format", "{{.Names}}").split(separator: "\n").map(String.init)
                .filter { $0.hasSuffix("-notes") && $0.hasPrefix("notes") }
            guard let name = (found.isEmpty ? names : found).first else {
                throw TestFailure("no container of the notes pod runs: \(Podman.say("ps", "-a"))")
            }
            return name
        }
        func answers(_ version: String) -> Bool {
            var found = false
            _ = waitUntil(seconds: 60) {
                guard let container = try? appContainer() else { return false }
                found = Podman.waitForServer(container, stateDirectory: "/var/lib/notes/state", version: version, within: 1) != nil
                return found
            }
            return found
        }

        // The first play: the ConfigMap says "previous" (serial 1), applied by the first start.
        let played = ContinuousClock.now
        let play = try Podman.run("kube", "play", first)
        try #require(play.status == 0, "podman kube play: \(play)")
        #expect(answers(image.previous), "the directive of the ConfigMap was not applied at start: \(Podman.say("pod", "logs", "notes-pod"))")
        print(String(format: "KubePlayTests: podman kube play to the first server running in the pod, the previous slot as the ConfigMap's directive says: %.2f s", seconds(since: played)))
        var container = try appContainer()
        #expect(try Podman.check("exec", container, "id", "-u") == "10001")
        #expect(try Podman.bash(container, "grep CapEff /proc/self/status").stdout == "CapEff:\t0000000000000000\n")
        let status = try Podman.check("exec", container, "/opt/notes/bin/rollbackctl", "status")
        #expect(status.contains("remote"), "\(status)")

        // An operator's rollforward in the pod, then kube down and play: the claim's volume
        // keeps the state, and the ConfigMap's serial 1, already accepted, does not apply again.
        let forward = try Podman.run("exec", container, "/opt/notes/bin/rollbackctl", "rollforward", "--reason", "fixed")
        #expect(forward.status == 0, "\(forward)")
        try Podman.check("kube", "down", first)
        try Podman.check("kube", "play", again)
        #expect(answers(image.current), "after kube down and kube play on the same claim")

        // A replaced ConfigMap with a new directive (serial 2): kube play --replace rolls back.
        let second = try manifests("previous", serial: 2, withClaim: false)
        let replaced = ContinuousClock.now
        try Podman.check("kube", "play", "--replace", second)
        #expect(answers(image.previous), "after kube play --replace with a new directive")
        print(String(format: "KubePlayTests: podman kube play --replace with a new ConfigMap (previous, serial 2) to the first answer from the previous slot: %.2f s", seconds(since: replaced)))
        container = try appContainer()
        let history = try Podman.check("exec", container, "/opt/notes/bin/rollbackctl", "history")
        #expect(history.contains("serial 2"), "\(history)")
        try Podman.check("kube", "down", second)
    }
}
