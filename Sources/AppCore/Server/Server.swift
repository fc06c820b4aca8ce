#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// `serve [--crash-after SECONDS] [--http HOST:PORT] [--inherited]`: a long-running loop that
/// marks itself good once it is up, writes a heartbeat naming its version five times a second,
/// and exits 0 on SIGTERM or SIGINT. `--crash-after` crashes it after that long (after the
/// good mark). With `--http` it also serves HTTP (``HTTPServer``), is up once it listens, and
/// on SIGTERM or SIGINT closes its listening socket at once, lets the requests in flight
/// finish, then exits 0. Under a watchdog (`WATCHDOG_USEC`) it pings at a third of the
/// interval. The knobs are ``ServeOptions``'s.
struct Server {
    let launch: LaunchInfo

    func run(_ arguments: [String]) -> Int32 {
        let options: ServeOptions
        switch ServeOptions.parse(arguments, environment: { getenv($0).map { String(cString: $0) } }) {
        case .success(let parsed): options = parsed
        case .failure(let error):
            printError("Error: \(error)")
            return 64
        }
        // Take SIGTERM and SIGINT synchronously, with sigtimedwait, between heartbeats; blocked
        // before any thread starts, so that every thread inherits the mask.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        makeDirectory(launch.dataDirectory)
        if options.hangAtStartVersion == launch.version {
            // A start that never gets ready: SIGTERM stays blocked, only SIGKILL ends it.
            printError("serve: hanging at start on purpose (SAMPLE_HANG_AT_START=\(launch.version))")
            while true { sleep(60) }
        }
        let http: HTTPServer?
        do {
            http = try options.http.map { source throws(HTTPServer.Failure) in try HTTPServer.start(source, launch: launch) }
        } catch {
            printError("Error: \(error)")
            return 1
        }

        let heartbeat = launch.dataDirectory + "/heartbeat"
        let started = monotonicSeconds()
        var watchdog = Watchdog(launch: launch, started: started, stopAfter: options.stopWatchdogAfter)
        var beats = 0
        var nextBeat = started
        while true {
            let now = monotonicSeconds()
            // A millisecond early counts: sigtimedwait may wake a hair before the beat is due.
            if now >= nextBeat - 0.001 {
                beats += 1
                writeHeartbeat(heartbeat, beats: beats, state: "running")
                nextBeat = now + 0.2
                if beats == 1 {
                    if options.marksItselfGood { launch.markGood() }
                    print("serving: version \(launch.version), pid \(getpid())")
                    if let http { print("http: listening on \(http.address)") }
                    fflushStandardOutput()
                }
            }
            if let crashAfter = options.crashAfter, now - started >= crashAfter {
                fatalError("the sample server crashes on purpose after \(crashAfter) s")
            }
            watchdog.pingIfDue(at: now)
            var timeout = timespec(seconds: max(0, min(nextBeat, watchdog.nextPing) - monotonicSeconds()))
            let signal = sigtimedwait(&signals, nil, &timeout)
            if signal == SIGTERM || signal == SIGINT {
                if let http {
                    http.stopAccepting()
                    print("http: closed \(http.address); finishing \(http.connectionCount) connection(s)")
                    fflushStandardOutput()
                    while http.connectionCount > 0 {
                        watchdog.pingIfDue(at: monotonicSeconds())
                        sleep(milliseconds: 10)
                    }
                }
                writeHeartbeat(heartbeat, beats: beats, state: "stopped")
                print("stopping: version \(launch.version) got signal \(signal)")
                return 0
            }
        }
    }

    private func writeHeartbeat(_ path: String, beats: Int, state: String) {
        let text = "version=\(launch.version)\nslot=\(launch.slot?.rawValue ?? "none")\npid=\(getpid())\nbeats=\(beats)\nstate=\(state)\n"
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        var bytes = text
        _ = bytes.withUTF8 { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        rename(temporary, path)
    }
}

/// The watchdog pings: `WATCHDOG=1` at a third of the interval the service manager set,
/// until `SAMPLE_STOP_WATCHDOG_AFTER_S` (if set) has passed.
struct Watchdog {
    let launch: LaunchInfo
    private let period: Double?
    private let stopsAt: Double
    /// When the next ping is due; infinity when none will be.
    private(set) var nextPing: Double

    init(launch: LaunchInfo, started: Double, stopAfter: Double?) {
        self.launch = launch
        period = launch.watchdogInterval.map { interval in
            let (seconds, attoseconds) = interval.components
            return (Double(seconds) + Double(attoseconds) / 1e18) / 3
        }
        stopsAt = stopAfter.map { started + $0 } ?? .infinity
        nextPing = period == nil ? .infinity : started
    }

    mutating func pingIfDue(at now: Double) {
        guard let period, now >= nextPing - 0.001 else { return }
        guard now < stopsAt else {
            nextPing = .infinity
            return
        }
        launch.notifyWatchdog()
        nextPing = now + period
    }
}

extension timespec {
    init(seconds: Double) {
        let whole = Int(seconds)
        self.init(tv_sec: whole, tv_nsec: Int((seconds - Double(whole)) * 1e9))
    }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func fflushStandardOutput() {
    fflush(nil)
}
