#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// `serve [--crash-after SECONDS]`: a long-running loop that marks itself good once it is
/// up, writes a heartbeat naming its version five times a second, and exits 0 on SIGTERM or
/// SIGINT. `--crash-after` crashes it after that long (after the good mark).
struct Server {
    let launch: LaunchInfo

    func run(_ arguments: [String]) -> Int32 {
        var crashAfter: Double?
        if arguments.count == 2, arguments[0] == "--crash-after", let seconds = Double(arguments[1]) {
            crashAfter = seconds
        } else if !arguments.isEmpty {
            printError("Error: usage: serve [--crash-after SECONDS]")
            return 64
        }
        // Take SIGTERM and SIGINT synchronously, with sigtimedwait, between heartbeats.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        makeDirectory(launch.dataDirectory)
        let heartbeat = launch.dataDirectory + "/heartbeat"
        let started = monotonicSeconds()
        var beats = 0
        while true {
            beats += 1
            writeHeartbeat(heartbeat, beats: beats, state: "running")
            if beats == 1 {
                launch.markGood()
                print("serving: version \(launch.version), pid \(getpid())")
                fflushStandardOutput()
            }
            if let crashAfter, monotonicSeconds() - started >= crashAfter {
                fatalError("the sample server crashes on purpose after \(crashAfter) s")
            }
            var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
            let signal = sigtimedwait(&signals, nil, &timeout)
            if signal == SIGTERM || signal == SIGINT {
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

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func fflushStandardOutput() {
    fflush(nil)
}
