#if canImport(Glibc)
import Glibc
#endif

/// The transitions that follow a child's exit and the passing of time: restarts with backoff,
/// a candidate that takes over or fails, readiness, the start deadline, the watchdog, drains.
extension SupervisorMachine {
    mutating func exited(pid: pid_t, status: ExitStatus, now: Moment) -> [Action] {
        if baseline?.pid == pid { return baselineExited(status: status) }
        if let index = draining.firstIndex(where: { $0.pid == pid }) {
            draining.remove(at: index)
            if pause != nil { return pauseAfterDrain(now: now) }
            return isStopping && children.isEmpty ? stop(with: exitStatus) : []
        }
        switch state {
        case .stopping(let deadline, let serving, let candidate):
            var actions = cancellingProbe(of: pid)
            if serving?.pid == pid {
                exitStatus = status.code
                state = .stopping(deadline: deadline, serving: nil, candidate: candidate)
            } else if candidate?.pid == pid {
                state = .stopping(deadline: deadline, serving: serving, candidate: nil)
            } else {
                return []
            }
            if children.isEmpty { actions += stop(with: exitStatus) }
            return actions
        case .replacing(let child) where child.pid == pid:
            exitStatus = status.code
            return cancellingProbe(of: pid) + [.spawn(.replacement)]
        case .running(let child) where child.pid == pid:
            return servingExited(child, status: status, successor: nil, now: now)
        case .pausing(let pause) where pause.step.child?.pid == pid:
            return pauseTargetExited(pause.step.child!, status: status, now: now)
        case .switching(let serving, let candidate) where serving.pid == pid:
            return servingExited(serving, status: status, successor: candidate, now: now)
        case .switching(let serving, let candidate) where candidate.pid == pid:
            state = .running(serving)
            let why: String
            switch candidate.stop {
            case .hung(let seconds): why = "it was not ready within \(Self.format(seconds)) s"
            case .watchdog, nil: why = "it \(status.description) before it was ready"
            }
            return cancellingProbe(of: pid) + switchFailed(candidate, serving: serving, why: why, now: now)
        default:
            return []
        }
    }

    /// The serving child exited: a candidate already starting takes over; else the app is done
    /// (exit 0) or restarts after the backoff, its crash counted against its build.
    private mutating func servingExited(_ child: SupervisedChild, status: ExitStatus, successor: SupervisedChild?, now: Moment) -> [Action] {
        var actions = cancellingProbe(of: child.pid)
        let cleanExit = status == .exited(0)
        exitStatus = status.code
        if cleanExit && successor == nil { return actions + stop(with: 0) }
        restarts = min(restarts &+ 1, ValueRange.count.upperBound)
        if now.monotonic - child.startedAt >= Double(settings.backoffResetAfterMilliseconds) / 1000 {
            backoff = settings.backoffInitialMilliseconds
        }
        if let successor {
            actions.append(.say("\(child.title) \(status.description); \(successor.title), already starting, takes over."))
        } else {
            actions.append(.say("\(child.title) \(status.description); restarting in \(backoff) ms (restart \(restarts))."))
        }
        if let slot = child.slot, let build = child.build, !cleanExit { actions.append(.countCrash(slot: slot, build: build)) }
        if let successor {
            state = .running(successor)
        } else {
            scheduleRestart(now: now)
        }
        return actions + [.publish]
    }

    /// A live switch that did not happen: the serving child goes on; status and history say
    /// why; the choice is looked at again only when it changes again.
    private mutating func switchFailed(_ child: SupervisedChild, serving: SupervisedChild, why: String, now: Moment) -> [Action] {
        let target = child.knownSlot
        let running = serving.slot ?? target.other
        let reason = "the switch to the \(target.rawValue) slot (\(configuration.version(target))) did not happen: \(why); the \(running.rawValue) slot (\(configuration.version(running))) keeps serving"
        switchFailure = .init(slot: target, at: now.unix, reason: reason)
        return [.say("\(HealthPolicy.capitalized(reason))."),
                .recordHistory(.switchFailed, from: running, to: target, reason: reason),
                .acknowledgeChoice,
                .notifySystemd(["READY=1", "STATUS=\(statusLine(serving)); \(reason)"]),
                .publish]
    }

    mutating func stop(with code: Int32) -> [Action] {
        state = .stopped(exitCode: code)
        return [.exit(code)]
    }

    // MARK: Timers

    /// A draining child said its accepted connections hold no work: it gets SIGTERM now rather
    /// than at the end of supervise.drain_ms, which stays the bound for one that never says so.
    mutating func drainEnded(pid: pid_t, now moment: Moment) -> [Action] {
        guard let index = draining.firstIndex(where: { $0.pid == pid }), draining[index].terminateAt != nil else { return [] }
        draining[index].terminateAt = nil
        draining[index].drainAgainAt = nil
        draining[index].killAt = moment.monotonic + Double(settings.graceMilliseconds) / 1000
        return [.kill(pid: pid, signal: SIGTERM)]
    }

    mutating func tick(now moment: Moment) -> [Action] {
        let now = moment.monotonic
        var actions: [Action] = []
        if case .stopping(let deadline, _, _) = state, now >= deadline {
            actions += children.map { .kill(pid: $0.pid, signal: SIGKILL) }
        }
        for child in children {
            if let killAt = child.killAt, now >= killAt { actions.append(.kill(pid: child.pid, signal: SIGKILL)) }
        }
        for index in draining.indices {
            if let again = draining[index].drainAgainAt, now >= again {
                actions.append(.drain(pid: draining[index].pid))
                draining[index].drainAgainAt = nil
            }
            guard let terminateAt = draining[index].terminateAt, now >= terminateAt else { continue }
            actions.append(.kill(pid: draining[index].pid, signal: SIGTERM))
            draining[index].terminateAt = nil
            draining[index].killAt = now + Double(settings.graceMilliseconds) / 1000
        }
        guard !isStopping else { return actions }
        actions += checkStartingChildren(moment)
        actions += checkWatchdog(now: now)
        actions += checkProbation(now: moment)
        if settings.readiness != .mark, probing == nil, now >= nextProbeAt, let child = unreadyChild {
            probing = child.pid
            actions.append(.startProbe(pid: child.pid))
        }
        if case .backingOff(let until) = state, now >= until {
            actions.append(.spawn(.restart))
        }
        return actions
    }

    /// Unready children: the ready signal plus the minimum time makes them ready; the
    /// deadline stops them (SIGABRT first, for a backtrace).
    private mutating func checkStartingChildren(_ now: Moment) -> [Action] {
        var actions: [Action] = []
        let runningSlot = serving?.slot
        if let child = serving {
            actions += checkStarting(child, now: now, replacing: nil)
        }
        if let child = candidate {
            actions += checkStarting(child, now: now, replacing: runningSlot)
        }
        return actions
    }

    private mutating func checkStarting(_ child: SupervisedChild, now moment: Moment, replacing running: BuildSlot?) -> [Action] {
        let now = moment.monotonic
        guard child.phase == .starting, child.stop == nil else { return [] }
        if let signal = child.readySignal, now >= signal.at + Double(settings.minReadyMilliseconds) / 1000 {
            update(child.pid) {
                $0.phase = .ready
                $0.lastWatchdogPing = now
            }
            return becameReady(child.pid, now: moment)
        }
        guard let deadline = child.deadline, now >= deadline else { return [] }
        // The deadline it had (extensions included), not the moment this tick ran.
        let seconds = deadline - child.startedAt
        update(child.pid) {
            $0.stop = .hung(seconds: seconds)
            $0.killAt = now + Self.backtraceSeconds
        }
        let slot = child.knownSlot
        let reason = "\(child.title) was not ready within \(Self.format(seconds)) s (supervise.start_deadline_ms); stopped with SIGABRT for a backtrace, counted as a failed start"
        return [.kill(pid: child.pid, signal: SIGABRT),
                .say("\(HealthPolicy.capitalized(reason))."),
                .recordHistory(.hungStart, from: running ?? slot, to: slot, reason: reason)]
    }

    /// A child became ready: a candidate takes over and the old child drains; the serving
    /// child's build is marked good and systemd hears READY=1.
    private mutating func becameReady(_ pid: pid_t, now moment: Moment) -> [Action] {
        let now = moment.monotonic
        var actions = cancellingProbe(of: pid)
        var comparison: ProbationRecord.Comparison? = configuration.comparesWithBaseline ? .none("no other build was serving when it started") : nil
        if case .switching(let old, let child) = state, child.pid == pid {
            // The switch: the new child serves; the old one stops gracefully (or, compared
            // with it, serves beside it for the bake window).
            actions += releaseBaseline(because: "\(child.title) replaced the build it was compared with", now: moment)
            if keepsAsBaseline(old, beside: child, now: moment) {
                baseline = old
                comparison = .beside(baselinePID: old.pid, canaryPID: child.pid, slot: old.knownSlot,
                                     version: old.outdatedVersion ?? configuration.version(old.knownSlot), build: old.build ?? "")
                actions.append(.say("\(child.title) is ready (\(child.readySignal?.how ?? "ready")); \(old.title) keeps serving beside it as the baseline of its bake window."))
            } else {
                if comparison != nil, old.phase != .ready { comparison = .none("the build it replaced was not ready") }
                actions.append(drain(old, now: now))
                actions.append(.say("\(child.title) is ready (\(child.readySignal?.how ?? "ready")); stopping \(old.title) gracefully."))
            }
            state = .running(child)
            switchFailure = nil
        }
        if let ended = pause, let target = ended.step.child, target.pid == pid {
            if comparison != nil { comparison = .none("the switch stopped the old build first (\(ended.why))") }
            actions += pauseEnded(target, now: moment)
        }
        guard let serving, serving.pid == pid else { return actions }
        if let how = serving.readySignal?.how { actions.append(.recordGoodMark(serving, how: how)) }
        actions.append(.notifySystemd(["READY=1", "STATUS=\(statusLine(serving))", "MAINPID=\(configuration.supervisorPID)"]))
        actions += probationOnReady(serving, now: moment, comparison: comparison)
        if keepsChoice == pid {
            // Restored after a failed stop-first switch: no retry until the choice changes again.
            keepsChoice = nil
            return actions + [.publish, .acknowledgeChoice]
        }
        // The choice may have changed again while the candidate started.
        return actions + [.publish, .reconsiderChoice]
    }

    /// Moves `child` out of the accept pool and into `draining`: connections it accepted just
    /// before get their requests read, so its graceful stop (SIGTERM when it says it is idle,
    /// or at the end of `supervise.drain_ms`) finishes them instead of dropping them.
    mutating func drain(_ child: SupervisedChild, now: Double) -> Action {
        var old = child
        old.phase = .draining
        old.terminateAt = now + Double(settings.drainMilliseconds) / 1000
        old.drainAgainAt = now + Double(settings.drainMilliseconds) / 2000
        draining.append(old)
        return .drain(pid: old.pid)
    }

    private mutating func checkWatchdog(now: Double) -> [Action] {
        guard settings.watchdogMilliseconds > 0, let child = serving, child.phase == .ready, child.stop == nil,
              now - child.lastWatchdogPing >= Double(settings.watchdogMilliseconds) / 1000 else { return [] }
        update(child.pid) {
            $0.stop = .watchdog
            $0.killAt = now + Self.backtraceSeconds
        }
        return [.kill(pid: child.pid, signal: SIGABRT),
                .say("\(child.title) sent no WATCHDOG=1 within \(settings.watchdogMilliseconds) ms (supervise.watchdog_ms); stopped with SIGABRT for a backtrace, counted as a crash.")]
    }
}
