#if canImport(Glibc)
import Glibc
#endif

/// The stop-first switch: when the target of a switch needs the data converted (back: the
/// current build's downgrade; forward: the target's own migrations at its start), no child of
/// another build may serve while it is. Connections wait in the listening sockets' queue; the
/// serving child drains and exits; the data is converted; the target starts and takes the
/// queue. The pause runs from the drain to the target's readiness and is published and
/// recorded. A target that is not ready by its deadline, or exits first, is stopped and the
/// old slot starts again, forced for that start, so that the launcher's own start path puts
/// the data back in its format (the current build migrates forward at its start; the previous
/// slot's start has the current build convert it back); the flag stays, as after a failed
/// start-first switch, and the supervisor does not retry on its own.
extension SupervisorMachine {
    /// A stop-first switch under way.
    struct Pause: Equatable {
        /// Who converts the data.
        enum Conversion: Equatable {
            /// The driver, through `Switcher` (`.convert`), once no child runs: a switch to the
            /// previous slot handed off by `Switcher.perform`, or the supervisor's own verdict.
            case back(SwitchRequest)
            /// The target, at its own start (forward: its migrations; back with the flag
            /// already switched: the launcher's conversion before the previous slot loads).
            case atTargetStart
        }

        /// Where the pause is.
        enum Step: Equatable {
            /// The serving child drains and exits (it is among `draining`).
            case stopping
            /// No child runs; the driver converts the data and answers `.converted`.
            case converting
            /// The target is being spawned.
            case spawning
            /// The target starts; it serves once ready.
            case starting(SupervisedChild)
            /// The target failed: the old slot is being spawned again, forced.
            case restoring

            /// The target, while it starts.
            var child: SupervisedChild? {
                if case .starting(let child) = self { return child }
                return nil
            }
        }

        var from: BuildSlot
        var target: BuildSlot
        /// The path's clause (`SwitchPath.stopFirst(why:)`).
        var why: String
        var conversion: Conversion
        var step: Step
        /// When the serving child was drained (monotonic seconds).
        var began: Double
        /// The same moment in Unix milliseconds (published).
        var beganAt: Int64
        /// When the last old child was gone, and when the target was started (Unix milliseconds).
        var stoppedAt: Int64? = nil
        var targetStartedAt: Int64? = nil

        /// What the supervisor record shows of it (`pausedMilliseconds` nil while it runs).
        func record(_ configuration: Configuration, pausedMilliseconds: Int?, at: Int64, readyAt: Int64?) -> SupervisorRecord.LastSwitch {
            var record = SupervisorRecord.LastSwitch(path: "stop-first", from: from, to: target, fromVersion: configuration.version(from),
                                                     toVersion: configuration.version(target), why: why,
                                                     pausedMilliseconds: pausedMilliseconds, at: at)
            record.drainedAtMilliseconds = beganAt
            record.stoppedAtMilliseconds = stoppedAt
            record.targetStartedAtMilliseconds = targetStartedAt
            record.readyAtMilliseconds = readyAt
            return record
        }
    }

    /// The paused switch, if one is under way.
    var pause: Pause? {
        if case .pausing(let pause) = state { return pause }
        return nil
    }

    /// The persisted choice selects `wanted`, and the switch must be stop-first (`why`).
    mutating func pauseForChoice(_ running: SupervisedChild, wanted: BuildSlot, why: String, now: Moment) -> [Action] {
        beginPause(running, target: wanted, why: why, conversion: .atTargetStart, now: now)
    }

    /// `Switcher.perform` handed a switch to the previous slot to the supervisor (or the
    /// supervisor's own verdict needs one) while a child serves and the data must be converted back.
    /// A `.startFirst` path (the previous build reads the data as it is) needs no pause: the
    /// switch runs at once and the changed choice makes a start-first switch as any other.
    mutating func switchRequested(_ request: SwitchRequest, path: SwitchPath, now: Moment) -> [Action] {
        guard case .stopFirst(let why) = path else { return [.convert(request)] }
        guard case .running(let running) = state, let slot = running.slot, running.stop == nil else {
            // No child of the current build serves: the conversion harms no one now.
            return [.convert(request)]
        }
        guard slot == .current else { return [.convert(request)] }
        return beginPause(running, target: .previous, why: why, conversion: .back(request), now: now)
    }

    private mutating func beginPause(_ running: SupervisedChild, target: BuildSlot, why: String, conversion: Pause.Conversion, now moment: Moment) -> [Action] {
        let now = moment.monotonic
        var old = running
        var actions: [Action] = [
            .say("the persisted choice now selects the \(target.rawValue) slot; stop-first: \(why); stopping \(running.title) first, new connections wait in the queue."),
            .notifySystemd(["RELOADING=1", "STATUS=Switching to the \(target.rawValue) slot (\(configuration.version(target))), stop-first",
                            "MONOTONIC_USEC=\(Int64(now * 1e6))"]),
        ]
        actions += cancellingProbe(of: old.pid)
        // A baseline still serving beside it reads the data too: it stops first as well, and
        // the conversion waits for both (`draining` empty).
        actions += releaseBaseline(because: "a stop-first switch stops every build before the data is converted", now: moment)
        if configuration.hasListeners && old.phase == .ready {
            // Out of the accept pool at once; SIGTERM after supervise.drain_ms, as after a
            // start-first switch, so that connections it accepted just before are answered.
            actions.append(.drain(pid: old.pid))
            old.terminateAt = now + Double(settings.drainMilliseconds) / 1000
            old.drainAgainAt = now + Double(settings.drainMilliseconds) / 2000
        } else {
            actions.append(.kill(pid: old.pid, signal: SIGTERM))
            old.killAt = now + Double(settings.graceMilliseconds) / 1000
        }
        old.phase = .draining
        draining.append(old)
        state = .pausing(Pause(from: running.slot ?? target.other, target: target, why: why, conversion: conversion, step: .stopping,
                               began: now, beganAt: moment.unixMilliseconds))
        return actions + [.publish]
    }

    /// A draining child exited: once none is left, the data is converted or the target starts.
    mutating func pauseAfterDrain(now: Moment) -> [Action] {
        guard var pause, pause.step == .stopping, draining.isEmpty else { return [] }
        pause.stoppedAt = now.unixMilliseconds
        switch pause.conversion {
        case .back(let request):
            pause.step = .converting
            state = .pausing(pause)
            return [.convert(request)]
        case .atTargetStart:
            pause.step = .spawning
            state = .pausing(pause)
            return [.spawn(.stopFirst(pause.target))]
        }
    }

    /// The driver's answer to `.convert`: nil when the flag now selects the target, else why
    /// the switch did not happen (the old slot then starts again).
    mutating func converted(failure: String?, now: Moment) -> [Action] {
        guard var pause, pause.step == .converting else { return [] }
        guard let failure else {
            pause.step = .spawning
            state = .pausing(pause)
            return [.spawn(.stopFirst(pause.target))]
        }
        return pauseFailed(pause, why: failure, now: now)
    }

    /// The target did not serve (`why`): the old slot starts again, forced, on data its own
    /// start puts back in its format.
    mutating func pauseFailed(_ failed: Pause, why: String, now: Moment) -> [Action] {
        var pause = failed
        let reason = "the switch to the \(pause.target.rawValue) slot (\(configuration.version(pause.target))) did not happen: \(why); the \(pause.from.rawValue) slot (\(configuration.version(pause.from))) serves again, on data in its own format"
        switchFailure = .init(slot: pause.target, at: now.unix, reason: reason)
        pause.step = .restoring
        state = .pausing(pause)
        return [.say("\(HealthPolicy.capitalized(reason))."),
                .recordHistory(.switchFailed, from: pause.from, to: pause.target, reason: reason),
                .acknowledgeChoice,
                .spawn(.restore(pause.from)),
                .publish]
    }

    /// The target or the restored slot was spawned (or could not be).
    mutating func pauseSpawned(_ launch: Launch, child: SupervisedChild?, error: String?, now: Moment) -> [Action] {
        guard let pause else {
            if let child { return [.kill(pid: child.pid, signal: SIGKILL)] }
            return []
        }
        switch (launch, pause.step) {
        case (.stopFirst, .spawning):
            guard let child else { return pauseFailed(pause, why: "it could not be started (\(error ?? "spawn failed"))", now: now) }
            var next = pause
            next.step = .starting(child)
            next.targetStartedAt = now.unixMilliseconds
            state = .pausing(next)
            return [.publish]
        case (.restore, .restoring):
            guard let child else {
                scheduleRestart(now: now)
                return [.say("starting the app failed: \(error ?? "spawn failed"); retrying in \(backoff) ms."), .publish]
            }
            state = .running(child)
            keepsChoice = child.pid
            return [.publish]
        default:
            if let child { return [.kill(pid: child.pid, signal: SIGKILL)] }
            return []
        }
    }

    /// The target of the pause became ready: it serves; the pause is recorded.
    mutating func pauseEnded(_ child: SupervisedChild, now: Moment) -> [Action] {
        guard let pause, case .starting(let target) = pause.step, target.pid == child.pid else { return [] }
        state = .running(child)
        switchFailure = nil
        let paused = max(0, Int(((now.monotonic - pause.began) * 1000).rounded()))
        let record = pause.record(configuration, pausedMilliseconds: paused, at: now.unix, readyAt: now.unixMilliseconds)
        lastSwitch = record
        return [.say("\(child.title) is ready (\(child.readySignal?.how ?? "ready")); \(record.sentence)."),
                .recordHistory(.stopFirst, from: pause.from, to: pause.target, reason: record.sentence)]
    }

    /// The target exited before it was ready (or after its deadline's SIGABRT).
    mutating func pauseTargetExited(_ child: SupervisedChild, status: ExitStatus, now: Moment) -> [Action] {
        guard let pause else { return [] }
        let why: String
        switch child.stop {
        case .hung(let seconds): why = "it was not ready within \(Self.format(seconds)) s"
        case .watchdog, nil: why = "it \(status.description) before it was ready"
        }
        return cancellingProbe(of: child.pid) + pauseFailed(pause, why: why, now: now)
    }
}
