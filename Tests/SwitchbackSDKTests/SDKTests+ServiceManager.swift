import Foundation
import CSwitchbackContract
import SystemdNotify
import Testing
import SwitchbackTestSupport
@testable import Switchback

/// What the SDK tells systemd or the supervisor, on a real socket bound here, and what it
/// reads from them. The environment is a value given to `LaunchInfo`, never the test
/// process's own: other suites spawn launchers that would inherit it. In SDKTests, whose
/// tests run one at a time, because these count the fake launcher's good marks too.
extension SDKTests {
    /// A launch whose environment is `environment`, with `NOTIFY_SOCKET` naming `receiver`
    /// unless `environment` names another.
    func launch(_ environment: [String: String] = [:], notifying receiver: NotifyReceiver? = nil,
                context: UnsafePointer<SwitchbackContext>? = nil) -> LaunchInfo {
        var environment = environment
        if let receiver, environment["NOTIFY_SOCKET"] == nil { environment["NOTIFY_SOCKET"] = receiver.name }
        return LaunchInfo(arguments: [], context: context, service: ServiceEnvironment(environment: environment, processID: getpid()))
    }

    func makeReceiver() throws -> NotifyReceiver {
        try NotifyReceiver(path: try temporaryDirectory() + "/notify")
    }

    // MARK: Notifications

    @Test func failuresAreReportedAsARunningTotalAndBadOnOneLine() throws {
        let receiver = try makeReceiver()
        let socket = NotifySocket(name: receiver.name)
        let first = try #require(Switchback.reportFailures(1, to: socket))
        #expect(Switchback.reportFailures(3, to: socket) == first + 3)
        #expect(Switchback.reportFailures(0, to: socket) == nil)
        Switchback.reportBad("schema\nmismatch", to: socket)
        #expect(receiver.messages() == ["X_SWITCHBACK_FAILURES=\(first)", "X_SWITCHBACK_FAILURES=\(first + 3)", "X_SWITCHBACK_BAD=schema mismatch"])
        // Without a socket: nothing is sent, nothing fails.
        Switchback.reportBad("x", to: nil)
    }

    @Test func markGoodSendsReadyOnceWithoutTheLauncher() async throws {
        let receiver = try makeReceiver()
        let launch = launch(notifying: receiver)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { launch.markGood() } }
        }
        launch.markGood()
        #expect(receiver.messages() == ["READY=1"])
    }

    /// The launcher's good-mark callback says READY=1 (an end-to-end test holds that): the SDK
    /// does not say it a second time.
    @Test func underTheLauncherTheSDKLeavesReadyToTheLauncher() throws {
        let receiver = try makeReceiver()
        let launcher = FakeLauncher(stateDirectory: try temporaryDirectory(), slot: .current)
        FakeLauncher.goodMarks.withLock { $0 = 0 }
        launcher.withContext { context in
            let launch = launch(notifying: receiver, context: context)
            launch.markGood()
            launch.markGood()
        }
        #expect(FakeLauncher.goodMarks.withLock { $0 } == 1)
        #expect(receiver.messages(waitingUpTo: 0.2) == [])
    }

    @Test func extendingTheStartDeadlineSendsMicroseconds() throws {
        let receiver = try makeReceiver()
        let launch = launch(notifying: receiver)
        #expect(launch.extendStartDeadline(by: .seconds(5)))
        #expect(launch.extendStartDeadline(by: .milliseconds(1500)))
        #expect(launch.extendStartDeadline(by: .nanoseconds(2500)))
        #expect(launch.extendStartDeadline(by: .zero) == false)
        #expect(launch.extendStartDeadline(by: .seconds(-1)) == false)
        #expect(receiver.messages() == ["EXTEND_TIMEOUT_USEC=5000000", "EXTEND_TIMEOUT_USEC=1500000", "EXTEND_TIMEOUT_USEC=2"])
    }

    @Test func notifyWatchdogSendsWatchdog1() throws {
        let receiver = try makeReceiver()
        #expect(launch(notifying: receiver).notifyWatchdog())
        #expect(receiver.messages() == ["WATCHDOG=1"])
    }

    @Test func withoutANotifySocketNothingIsSent() throws {
        let receiver = try makeReceiver()
        let launch = launch(["NOTIFY_SOCKET": ""], notifying: receiver)
        launch.markGood()
        #expect(launch.extendStartDeadline(by: .seconds(5)) == false)
        #expect(launch.notifyWatchdog() == false)
        #expect(receiver.messages(waitingUpTo: 0.2) == [])
    }

    @Test func anAppsUnitTestLaunchHasNoServiceManager() {
        let launch = LaunchInfo(dataDirectory: "/tmp/unit-test-data")
        #expect(launch.listeners.isEmpty && launch.watchdogInterval == nil)
        #expect(launch.notifyWatchdog() == false)
    }

    // MARK: Listeners

    @Test func listenersAreTheDescriptorsFrom3WithTheirNames() {
        let launch = launch(["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "http:admin"])
        #expect(launch.listeners == [
            LaunchInfo.Listener(name: "http", fileDescriptor: 3),
            LaunchInfo.Listener(name: "admin", fileDescriptor: 4),
        ])
    }

    @Test func aListenerWithoutANameIsUnknown() {
        let pid = "\(getpid())"
        #expect(launch(["LISTEN_PID": pid, "LISTEN_FDS": "2"]).listeners.map(\.name) == ["unknown", "unknown"])
        #expect(launch(["LISTEN_PID": pid, "LISTEN_FDS": "3", "LISTEN_FDNAMES": "a::"]).listeners.map(\.name) == ["a", "unknown", "unknown"])
    }

    @Test func listenersForAnotherProcessAreNone() {
        let other = "\(getpid() + 1)"
        #expect(launch(["LISTEN_PID": other, "LISTEN_FDS": "1", "LISTEN_FDNAMES": "http"]).listeners.isEmpty)
        #expect(launch(["LISTEN_FDS": "1"]).listeners.isEmpty)
    }

    @Test func aMalformedListenFdsIsNone() {
        let pid = "\(getpid())"
        for count in ["", "0", "-1", "two", "1 ", "+1", "99999999999"] {
            #expect(launch(["LISTEN_PID": pid, "LISTEN_FDS": count]).listeners.isEmpty, "\(count)")
        }
        #expect(launch(["LISTEN_PID": " \(pid)", "LISTEN_FDS": "1"]).listeners.isEmpty)
    }

    // MARK: Watchdog

    @Test func theWatchdogIntervalIsWatchdogUsec() {
        #expect(launch(["WATCHDOG_USEC": "3000000"]).watchdogInterval == .seconds(3))
        #expect(launch(["WATCHDOG_USEC": "1500", "WATCHDOG_PID": "\(getpid())"]).watchdogInterval == .microseconds(1500))
    }

    @Test func noWatchdogForAnotherProcessOrAZeroOrMalformedInterval() {
        #expect(launch(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "\(getpid() + 1)"]).watchdogInterval == nil)
        #expect(launch(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "x"]).watchdogInterval == nil)
        for value in ["0", "", "-5", "3s", "1e6"] {
            #expect(launch(["WATCHDOG_USEC": value]).watchdogInterval == nil, "\(value)")
        }
        #expect(launch().watchdogInterval == nil)
    }
}
