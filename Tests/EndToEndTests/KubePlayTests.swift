import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/deploying.md's Kubernetes manifests (the ConfigMap with a signed directive, the
/// PersistentVolumeClaim, the Deployment with its security context, the Service), played by
/// `podman kube play`. The test changes three things in the text: the image (the one
/// ``NotesImage`` built, whose bundle reads its directive from the ConfigMap's mount), the
/// container's args (the sample's command) and the ConfigMap's envelope (signed with this run's
/// key).
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
        func manifests(_ decision: String, serial: Int) throws -> String {
            var lines: [String] = []
            var inEnvelope = false
            for line in documented.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
                if inEnvelope && line.hasPrefix("    ") { continue }
                inEnvelope = false
                if line.hasPrefix("          image: ") {
                    lines.append("          image: \(image.name)")
                } else if line.hasPrefix("          args: ") {
                    lines.append("          args: [\"serve\", \"--http\", \"0.0.0.0:8080\"]")
                } else if line == "  directive.json: |" {
                    lines.append(line)
                    lines += try image.signed(decision, serial: serial).split(separator: "\n").map { "    " + $0 }
                    inEnvelope = true
                } else {
                    lines.append(line)
                }
            }
            let file = directory + "/notes-\(serial).yaml"
            try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }
        let first = try manifests("previous", serial: 1)
        // What an earlier run left (the names are the docs').
        _ = try Podman.run("kube", "down", first)
        _ = try Podman.run("volume", "rm", "-f", "notes-data")
        defer {
            _ = try? Podman.run("kube", "down", first)
            _ = try? Podman.run("volume", "rm", "-f", "notes-data")
        }
        func appContainer() throws -> String {
            let names = try Podman.check("ps", "--format", "{{.Names}}", "--filter", "label=io.kubernetes.pod.name")
                .split(separator: "\n").map(String.init)
            let found = try Podman.check("ps", "--format", "{{.Names}}").split(separator: "\n").map(String.init)
                .filter { $0.hasSuffix("-notes") && $0.hasPrefix("notes") }
            guard let name = (found.isEmpty ? names : found).first else {
                throw TestFailure("no container of the notes pod runs: \(try Podman.run("ps", "-a"))")
            }
            return name
        }
        func answers(_ version: String) -> Bool {
            waitUntil(seconds: 60) {
                guard let container = try? appContainer(), let reply = try? Podman.get(container, port: 8080) else { return false }
                return reply.status == 200 && reply.body.hasPrefix("version \(version) ")
            }
        }

        // The first play: the ConfigMap says "previous" (serial 1), applied by the first start.
        let played = ContinuousClock.now
        let play = try Podman.run("kube", "play", first)
        try #require(play.status == 0, "podman kube play: \(play)")
        #expect(answers(image.previous), "the directive of the ConfigMap was not applied at start: \(try Podman.run("pod", "logs", "notes-pod"))")
        print(String(format: "KubePlayTests: podman kube play to the first HTTP 200 in the pod, from the previous slot as the ConfigMap's directive says: %.2f s", seconds(since: played)))
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
        try Podman.check("kube", "play", first)
        #expect(answers(image.current), "after kube down and kube play on the same claim")

        // A replaced ConfigMap with a new directive (serial 2): kube play --replace rolls back.
        let second = try manifests("previous", serial: 2)
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
