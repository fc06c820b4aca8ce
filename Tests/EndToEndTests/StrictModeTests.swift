import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing

/// Strict modes (issue 11, part 4), through the real binaries on a copy of the bundle: every
/// file the launcher trusts that another user could change, or that is a link where none is
/// expected, is refused with one sentence naming the path, the owner and mode found and the
/// fix, and no attacker code ever runs.
@Suite struct StrictModeTests {
    @Test func aWorldWritableManifestIsRefusedBeforeAnyLibraryItNamesIsLoaded() throws {
        let t = try TestBundle()
        let marker = t.directory + "/attacker-ran"
        let evil = t.directory + "/libevil.so"
        try compileAttackerLibrary(at: evil, marker: marker)
        for slot in ["current", "previous"] {
            try t.setManifestSetting("\(slot).needed", evil + "," + t.manifestValue("\(slot).needed"))
        }
        let manifest = t.bundle + "/manifest"
        try shell("chmod", "666", manifest)
        let sentence = "The manifest \(manifest) is writable by other users (owner uid \(geteuid()), mode 666); refusing to trust it: run 'chmod go-w \(manifest)'."

        let result = try t.launcher()
        #expect(result.status == 70)
        #expect(result.stderr == "launcher: \(sentence)\n")
        #expect(result.stdout.isEmpty)
        let status = try t.rollbackctl("status")
        #expect(status.status == 1)
        #expect(status.stderr == "Error: \(sentence)\n")
        #expect(!FileManager.default.fileExists(atPath: marker), "the attacker's constructor ran")
    }

    /// The launcher and its slot find their libraries through a `DT_RPATH` into the bundle's
    /// `lib/` (and the slot's are opened by path, from the manifest), so what loads is what
    /// the manifest and the library stamp checked: a library planted under one of their names
    /// in LD_LIBRARY_PATH, which the dynamic loader searches after a `DT_RPATH` (but before a
    /// `DT_RUNPATH`), is never loaded, and neither is it by `rollbackctl`. Nor is a planted libcrypto, which
    /// hashes the slot: it is opened from the C library's directory by path.
    @Test func aLibraryPlantedInTheSearchPathUnderALoadedNameIsNeverLoaded() throws {
        let t = try TestBundle()
        let marker = t.directory + "/attacker-ran"
        let planted = t.directory + "/planted"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: false)
        // The launcher's own runtime, two the slot alone loads, one only a library of it loads,
        // and the libcrypto the first start hashes the slot with.
        for name in ["libswiftCore.so", "libswift_Concurrency.so", "libFoundationEssentials.so", "libswift_Builtin_float.so", "libcrypto.so.3"] {
            try compileAttackerLibrary(at: planted + "/" + name, marker: marker)
        }

        // The first start opens each library, then the slot with every symbol bound; the second,
        // of the same verified file, opens the slot alone and lazily.
        for run in ["first", "second"] {
            let result = try t.launcher(environment: ["LD_LIBRARY_PATH": planted])
            #expect(result.status == 0, "\(run): \(result)")
            #expect(result.stdout.hasPrefix(t.greeting(.current)), "\(run): \(result)")
            #expect(!FileManager.default.fileExists(atPath: marker), "\(run) start: a planted library's constructor ran")
        }
        let status = try t.rollbackctl("status", environment: ["LD_LIBRARY_PATH": planted])
        #expect(status.status == 0, "\(status)")
        #expect(!FileManager.default.fileExists(atPath: marker), "a planted library's constructor ran")
    }

    @Test func aLibraryTheManifestNamesInAWritableDirectoryIsNeverLoaded() throws {
        let t = try TestBundle()
        let marker = t.directory + "/attacker-ran"
        let shared = t.directory + "/shared"
        try shell("mkdir", "-m", "777", shared)
        let evil = shared + "/libevil.so"
        try compileAttackerLibrary(at: evil, marker: marker)
        for slot in ["current", "previous"] {
            try t.setManifestSetting("\(slot).needed", evil + "," + t.manifestValue("\(slot).needed"))
        }
        let result = try t.launcher()
        #expect(result.status == 70)
        #expect(result.stderr.hasPrefix("launcher: neither slot can run. First: The directory of the current slot's library \(shared) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(shared)'. Then: The directory of the previous slot's library \(shared) is writable"))
        #expect(!FileManager.default.fileExists(atPath: marker), "the attacker's constructor ran")
    }

    /// One verdict per directory (issue 36, part 5): the remembered stamp of a slot's
    /// libraries covers the files, not the directory that holds them, so `chmod 777 lib`
    /// after a good start is refused at the next start with the sentence a fresh state
    /// directory gets, and `status` says it for both slots.
    @Test func aWritableLibDirectoryAfterAGoodStartIsRefusedAsAtAFreshInstall() throws {
        let t = try TestBundle()
        for run in ["first", "second"] {  // the second binds lazily, on the remembered stamp
            let result = try t.launcher()
            #expect(result.status == 0 && result.stdout.hasPrefix(t.greeting(.current)), "\(run): \(result)")
        }
        let lib = t.bundle + "/lib"
        try shell("chmod", "777", lib)
        let found = "is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(lib)'."
        let started = try t.launcher()
        #expect(started.status == 70, "\(started)")
        #expect(started.stdout.isEmpty)
        #expect(started.stderr == "launcher: neither slot can run. First: The directory of the current slot's library \(lib) \(found) Then: The directory of the previous slot's library \(lib) \(found) Rebuild the bundle with scripts/bundle, or restore the files named above.\n", "\(started)")
        let fresh = try t.launcher(environment: ["SWITCHBACK_STATE_DIR": t.directory + "/fresh-state"])
        #expect(fresh.status == 70)
        #expect(fresh.stderr == started.stderr, "a fresh install and a start after a good one disagree: \(fresh)")

        let status = try t.status()
        for slot in ["current", "previous"] {
            #expect(status.slots[slot]?.ok == false, "\(slot): \(status.slots)")
            #expect(status.slots[slot]?.problem == "The directory of the \(slot) slot's library \(lib) \(found)", "\(slot): \(status.slots)")
        }
        try shell("chmod", "755", lib)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
    }

    @Test func aSlotLinkedIntoAWorldWritableDirectoryIsRefused() throws {
        let t = try TestBundle()
        let slot = t.slotPath(.current)
        let shared = t.directory + "/shared"
        try shell("mkdir", "-m", "777", shared)
        try shell("mv", slot, shared + "/libAppCore.so")
        try shell("ln", "-s", shared + "/libAppCore.so", slot)

        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.previous)))
        #expect(result.stderr == "launcher: The directory of the current slot \(shared) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(shared)'. Running the previous slot (\(t.previousVersion)) instead.\n")

        // The same link into a directory only its owner can write: resolved, checked, run.
        try shell("chmod", "755", shared)
        let trusted = try t.launcher()
        #expect(trusted.stdout.hasPrefix(t.greeting(.current)), "\(trusted)")
        #expect(trusted.stderr.isEmpty)
    }

    /// The attack that ran code in 34 of 300 starts: the slot file is swapped for another of
    /// the same size while launchers start. The launcher checks and maps one descriptor, so
    /// the file it hashed is the file it maps: each start runs the real build or falls back.
    @Test func aSlotSwappedWhileLaunchersStartNeverRunsAttackerCode() throws {
        let t = try TestBundle()
        let slot = t.slotPath(.current)
        let directory = (slot as NSString).deletingLastPathComponent
        let size = try FileManager.default.attributesOfItem(atPath: slot)[.size] as! Int
        let marker = t.directory + "/attacker-ran"
        let evil = directory + "/evil.so"
        try compileAttackerLibrary(at: evil, marker: marker)
        try shell("truncate", "-s", String(size), evil)  // same size: only the hash tells them apart
        try shell("ln", slot, directory + "/good.so")
        let swapper = try SpawnedProcess("/bin/sh", ["-c", """
            cd '\(directory)' && while :; do ln -f evil.so next && mv -f next libAppCore.so; ln -f good.so next && mv -f next libAppCore.so; done
            """], environment: ["PATH": "/usr/bin:/bin"], ownProcessGroup: true)
        defer { kill(-swapper.pid, SIGKILL); swapper.wait() }

        var ranCurrent = 0, fellBack = 0
        for _ in 0..<120 {
            let result = try t.launcher()
            #expect(!result.stdout.contains("EVIL"), "\(result)")
            if result.stdout.hasPrefix(t.greeting(.current)) {
                #expect(result.status == 0, "\(result)")
                ranCurrent += 1
            } else if result.status == 70 {
                // The first start migrated the data: the previous build may not run on it,
                // and the swapped current build cannot convert it back, so nothing runs.
                #expect(result.stderr.contains("does not match the manifest's SHA-256"), "\(result)")
                #expect(result.stderr.contains("cannot run instead"), "\(result)")
                fellBack += 1
            } else {
                #expect(result.stdout.hasPrefix(t.greeting(.previous)), "\(result)")
                #expect(result.stderr.contains("does not match the manifest's SHA-256"), "\(result)")
                fellBack += 1
            }
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "the attacker's constructor ran")
        print("swapped slot: \(ranCurrent) starts ran the real build, \(fellBack) refused it, 0 ran the attacker's")
    }

    @Test func aSymlinkedStateDirectoryIsNotFollowed() throws {
        let t = try TestBundle()
        let real = t.directory + "/real-state"
        try shell("mkdir", "-m", "700", real)
        try shell("ln", "-s", real, t.state)
        let sentence = "The state directory \(t.state) is a symbolic link; refusing to follow it: use the real path (\(real)) instead"

        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.current)))
        #expect(result.stderr == "launcher: \(sentence); ignoring it and running the current slot.\n")
        let rollback = try t.rollbackctl("rollback")
        #expect(rollback.status == 1)
        #expect(rollback.stderr == "Error: \(sentence).\n")
        // Neither tool wrote its own files through the link. (The sample app still gets the
        // path in its context and keeps its data there, as it does in any untrusted directory.)
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: real))
        #expect(written.isDisjoint(with: ["state", "history.log", "lock", "health", "verified-slots", "remote", "install-id"]),
                "written through the link: \(written.sorted())")
    }

    @Test func aSymlinkedHistoryOrLockIsNotFollowed() throws {
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback").status == 0)
        let outside = t.directory + "/outside.log"
        try "untouched\n".write(toFile: outside, atomically: true, encoding: .utf8)

        let history = t.state + "/history.log"
        try FileManager.default.removeItem(atPath: history)
        try shell("ln", "-s", outside, history)
        let read = try t.rollbackctl("history")
        #expect(read.status == 1)
        #expect(read.stderr == "Error: The file \(history) is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).\n")
        let write = try t.rollbackctl("rollforward")
        #expect(write.status == 1)
        #expect(write.stderr.contains("\(history) is a symbolic link; refusing to follow it"), "\(write)")
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "untouched\n")
        try FileManager.default.removeItem(atPath: history)

        let lock = t.state + "/lock"
        let dangling = t.directory + "/made-through-the-link"
        try FileManager.default.removeItem(atPath: lock)
        try shell("ln", "-s", dangling, lock)
        let locked = try t.rollbackctl("rollforward")
        #expect(locked.status == 1)
        #expect(locked.stderr == "Error: The lock file \(lock) is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).\n")
        #expect(!FileManager.default.fileExists(atPath: dangling))
    }

    /// Mode 0666 files in a 0755 directory: the directory passes, each file is refused.
    @Test func stateFilesOthersCanWriteAreRefused() throws {
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        try shell("chmod", "755", t.state)
        func writable(_ path: String) -> String {
            "The file \(path) is writable by other users (owner uid \(geteuid()), mode 666); refusing to trust it: run 'chmod go-w \(path)'"
        }

        // Untrusted files are written nowhere and decide nothing but the rejection they record.
        let honoured = "it records that an operator rolled back with rollbackctl on "
        let state = t.state + "/state"
        try shell("chmod", "666", state)
        let ignored = try t.launcher()
        #expect(ignored.stdout.hasPrefix(t.greeting(.previous)), "the rollback in a file others can write was undone")
        #expect(ignored.stderr.hasPrefix("launcher: \(writable(state)); \(honoured)"), "\(ignored)")
        try shell("rm", state)  // no flag: the verdicts still say the operator rejected the current build
        let health = t.state + "/health"
        try shell("chmod", "666", health)
        let untrusted = try t.launcher()
        #expect(untrusted.stdout.hasPrefix(t.greeting(.previous)), "\(untrusted)")
        #expect(untrusted.stderr.hasPrefix("launcher: \(writable(health)); it records that the current build (\(t.currentVersion)) is bad (an operator rolled back from it"), "\(untrusted)")

        let history = t.state + "/history.log"
        try shell("chmod", "666", history)
        let read = try t.rollbackctl("history")
        #expect(read.status == 1)
        #expect(read.stderr == "Error: \(writable(history)).\n")
        try shell("chmod", "600", history)

        let lock = t.state + "/lock"
        try shell("chmod", "666", lock)
        let locked = try t.rollbackctl("rollforward")
        #expect(locked.status == 1)
        #expect(locked.stderr == "Error: The lock file \(lock) is writable by other users (owner uid \(geteuid()), mode 666); refusing to trust it: run 'chmod go-w \(lock)'.\n")
    }

    @Test func aRelativeStateDirectoryIsRefused() throws {
        let t = try TestBundle()
        let sentence = "SWITCHBACK_STATE_DIR is the relative path 'state', which would name a different state directory in every working directory; set it to an absolute path."
        let launcher = try t.launcher(environment: ["SWITCHBACK_STATE_DIR": "state"])
        #expect(launcher.status == 64)
        #expect(launcher.stderr == "launcher: \(sentence)\n")
        #expect(launcher.stdout.isEmpty)
        let status = try t.rollbackctl("status", environment: ["SWITCHBACK_STATE_DIR": "state"])
        #expect(status.status == 64)
        #expect(status.stderr.hasPrefix("Error: \(sentence)\n"))

        // --state-dir, typed for one command, is made absolute against the working directory.
        let explicit = try t.run("/usr/bin/env", ["-C", t.directory, t.bundle + "/bin/rollbackctl", "--state-dir", "typed", "status"])
        #expect(explicit.status == 0, "\(explicit)")
        #expect(explicit.stdout.contains("State directory: \(t.directory)/typed"))
    }
}

/// The launcher's own files in a state directory: a start that does not trust the directory
/// must leave every one of them as it was (the sample app keeps its data there too: not these).
let launcherFiles = ["state", "history.log", "lock", "health", "verified-slots", "remote", "install-id", "data-state"]

/// Each launcher file in `directory` with its size, mode and modification time.
func launcherFilesSnapshot(_ directory: String) throws -> [String: String] {
    var snapshot: [String: String] = [:]
    for name in launcherFiles {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + name) else { continue }
        snapshot[name] = "\(attributes[.size]!) \(attributes[.posixPermissions]!) \((attributes[.modificationDate] as! Date).timeIntervalSince1970)"
    }
    return snapshot
}

/// What the kubelet does at each mount of a volume with a pod `fsGroup` (unless
/// `fsGroupChangePolicy: OnRootMismatch`): chgrp -R to the group, g+rw on files, g+rwx and
/// setgid on directories.
func kubeletOwnershipPass(_ volume: String, group: gid_t) throws {
    try shell("chgrp", "-R", String(group), volume)
    try shell("chmod", "-R", "g+rwX", volume)
    try shell("find", volume, "-type", "d", "-exec", "chmod", "g+s", "{}", "+")
}

/// Kubernetes volumes (issue 24, item 6): an emptyDir is mode 0777, and the kubelet's fsGroup
/// pass makes everything group-writable by the fsGroup. An untrusted state is written
/// nowhere, but a rollback it records is honoured: the build an operator rejected never runs.
@Suite struct StateOnSharedVolumeTests {
    /// The state directory inside a volume mounted at `volume` (created mode 0755).
    static func volume(_ t: TestBundle) throws -> (volume: String, state: String) {
        let volume = t.directory + "/volume"
        try shell("mkdir", "-m", "755", volume)
        return (volume, volume + "/state")
    }

    /// (a) An emptyDir's 0777 mount point above the state: a rollback recorded before the
    /// mode changed is honoured, nothing is written, and the operator is told what to change.
    @Test func aRollbackUnderAWorldWritableParentStillRunsThePreviousBuild() throws {
        let t = try TestBundle()
        let (volume, state) = try Self.volume(t)
        let environment = ["SWITCHBACK_STATE_DIR": state]
        #expect(try t.rollbackctl("rollback", "--reason", "1.2.0 corrupts exports", environment: environment).status == 0)
        #expect(try t.launcher(environment: environment).stdout.hasPrefix(t.greeting(.previous)))
        try shell("chmod", "777", volume)
        let before = try launcherFilesSnapshot(state)

        let found = "The directory of the state directory \(volume) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(volume)'"
        for _ in 0..<2 {
            let result = try t.launcher(environment: environment)
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix(t.greeting(.previous)), "the rejected build ran: \(result)")
            #expect(result.stderr.hasPrefix("launcher: \(found); it records that an operator rolled back with rollbackctl on "), "\(result)")
            #expect(result.stderr.hasSuffix(": \"1.2.0 corrupts exports\", so the previous slot runs, and nothing is written there until it is trusted again.\n"), "\(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
        }
        #expect(try launcherFilesSnapshot(state) == before, "the launcher wrote to an untrusted state directory")

        let status = try t.status(environment: environment)
        #expect(status.activeSlot == "previous")
        #expect(status.rollback == true)
        let trust = status.stateTrust
        #expect(trust.trusted == false)
        #expect(trust.reason == found + ".")
        let text = try t.rollbackctl("status", environment: environment).stdout
        #expect(text.hasPrefix("The next start runs the previous slot (\(t.previousVersion)) because an operator rolled back with rollbackctl on "), "\(text)")
        #expect(text.contains("\"1.2.0 corrupts exports\", which is honoured although the state is not trusted: the directory of the state directory \(volume) is writable"), "\(text)")
        #expect(text.hasSuffix("\nState: not trusted. \(found).\n"), "\(text)")

        // Nothing writes there, rollbackctl included; the mode the operator is told restores it all.
        let forward = try t.rollbackctl("rollforward", environment: environment)
        #expect(forward.status == 1)
        #expect(forward.stderr == "Error: \(found).\n")
        try shell("chmod", "755", volume)
        let trusted = try t.launcher(environment: environment)
        #expect(trusted.stdout.hasPrefix(t.greeting(.previous)) && trusted.stderr.isEmpty, "\(trusted)")
        let restored = try t.status(environment: environment).stateTrust
        #expect(restored.trusted == true)
        #expect(restored.reason == nil)
    }

    /// (a) The same parent before any rollback: the state records nothing, so the launcher
    /// runs the current build (with the line), whose SDK then refuses to make or migrate its
    /// data below that parent (the file layer: no write where another user can create
    /// entries); `rollbackctl rollback` says what to change.
    @Test func aFreshStateUnderAWorldWritableParentIsRefusedWithTheFix() throws {
        let t = try TestBundle()
        let (volume, state) = try Self.volume(t)
        let environment = ["SWITCHBACK_STATE_DIR": state]
        try shell("chmod", "777", volume)
        let found = "The directory of the state directory \(volume) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(volume)'"
        let result = try t.launcher(environment: environment)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "launcher: \(found); ignoring it and running the current slot.\nError: the app (version \(t.currentVersion)) could not prepare its data in \(state)/data: The directory above the data directory \(volume) is writable by other users (owner uid \(geteuid()), mode 777); refusing to write there: run 'chmod go-w \(volume)'.\n", "\(result)")
        let rollback = try t.rollbackctl("rollback", environment: environment)
        #expect(rollback.status == 1)
        #expect(rollback.stderr == "Error: \(found).\n")
        let status = try t.status(environment: environment)
        #expect(status.explanation == "The next start runs the current slot (\(t.currentVersion)) because the state is not trusted and records no rollback: the\(found.dropFirst(3)).")
        #expect(status.stateTrust.reason == found + ".")
    }

    /// (b) After an operator's rollback, the kubelet chgrp's the volume to an fsGroup this
    /// process does not run as: the state is untrusted, and the rejected build still never runs.
    @Test func aRollbackSurvivesTheKubeletsPassToAnotherGroup() throws {
        let t = try TestBundle()
        let (volume, state) = try Self.volume(t)
        let environment = ["SWITCHBACK_STATE_DIR": state]
        #expect(try t.rollbackctl("rollback", "--reason", "1.2.0 corrupts exports", environment: environment).status == 0)
        #expect(try t.launcher(environment: environment).stdout.hasPrefix(t.greeting(.previous)))
        let fsGroup: gid_t = 4242
        try kubeletOwnershipPass(volume, group: fsGroup)
        let before = try launcherFilesSnapshot(state)

        // The first directory the walk finds wrong is the volume's mount point (root's, 2775 now).
        let found = "The directory of the state directory \(volume) is writable by its group (owner uid 0, group \(fsGroup), mode 2775), and group \(fsGroup) is not this process's group (\(getegid())); refusing to trust it: run 'chmod g-w \(volume)', or run this program with group \(fsGroup) as its group (in Kubernetes: runAsGroup equal to fsGroup)"
        // Container restarts: each start, and the kubelet's pass again at each mount.
        for _ in 0..<3 {
            let result = try t.launcher(environment: environment)
            #expect(!(result.status == 0 && result.stdout.hasPrefix(t.greeting(.current))), "the rejected build ran: \(result)")
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix(t.greeting(.previous)), "\(result)")
            #expect(result.stderr.hasPrefix("launcher: \(found); it records that an operator rolled back with rollbackctl on "), "\(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
            try kubeletOwnershipPass(volume, group: fsGroup)
        }
        #expect(try launcherFilesSnapshot(state) == before, "the launcher wrote to an untrusted state directory")

        let status = try t.status(environment: environment)
        #expect(status.activeSlot == "previous")
        let trust = status.stateTrust
        #expect(trust.trusted == false)
        #expect(trust.reason == found + ".")
        // A forced slot is still the operator's to choose; but its SDK writes no data below a
        // directory another group can write (the file layer), and says so.
        let forced = try t.launcher(environment: environment.merging(["SWITCHBACK_SLOT": "current"]) { $1 })
        #expect(forced.status == 1, "\(forced)")
        #expect(forced.stderr.hasSuffix("\nError: the app (version \(t.currentVersion)) could not prepare its data in \(state)/data: The directory above the data directory \(volume) is writable by its group (owner uid \(geteuid()), group \(fsGroup), mode 2775), and group \(fsGroup) is not this process's group (\(getegid())); refusing to write there: run 'chmod g-w \(volume)', or run this program with group \(fsGroup) as its group (in Kubernetes: runAsGroup equal to fsGroup).\n"), "\(forced)")
    }

    /// (b) The same pass when the files, not the directory, are what changed: a state file
    /// others can write is read without trusting it, and its rollback honoured.
    @Test func aRollbackInAStateFileOthersCanWriteIsHonoured() throws {
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback").status == 0)
        try shell("chmod", "755", t.state)
        try shell("chmod", "666", t.state + "/state")
        let result = try t.launcher()
        #expect(result.stdout.hasPrefix(t.greeting(.previous)), "\(result)")
        #expect(result.stderr.hasPrefix("launcher: The file \(t.state)/state is writable by other users (owner uid \(geteuid()), mode 666); refusing to trust it: run 'chmod go-w \(t.state)/state'; it records that an operator rolled back"), "\(result)")
        #expect(try t.status().stateTrust.trusted == false)
    }
}

/// The cases that need a second user: files owned by another uid, and another uid holding
/// the lock. Runs as root (it creates the user `switchback-other` if missing).
@Suite(.enabled(if: geteuid() == 0, "needs root to create files owned by a second uid and run a process as that uid"))
struct StrictModeSecondUserTests {
    @Test func filesOwnedByAnotherUserAreRefused() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        func owned(_ path: String, what: String = "file") throws -> String {
            let mode = String((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int), radix: 8)
            return "The \(what) \(path) is owned by another user (owner uid \(other), mode \(mode)); refusing to trust it: run 'chown 0 \(path)' or remove it"
        }

        // Another user's files are written nowhere, and what they record decides nothing
        // (issue 36: they are another account's words). The rollback is still honoured here,
        // from this user's own health file, which records the current build as rejected.
        let honoured = "it records that an operator rolled back with rollbackctl on "
        let state = t.state + "/state"
        try shell("chown", String(other), state)
        let ignored = try t.launcher()
        #expect(ignored.stdout.hasPrefix(t.greeting(.previous)), "\(ignored)")
        #expect(ignored.stderr.hasPrefix("launcher: \(try owned(state)); it records that the current build (\(t.currentVersion)) is bad (an operator rolled back from it), so the previous slot runs"), "\(ignored)")
        try shell("chown", "0", state)

        let health = t.state + "/health"
        try shell("chown", String(other), health)
        #expect(try t.launcher().stderr.hasPrefix("launcher: \(try owned(health)); \(honoured)"))

        let history = t.state + "/history.log"
        try shell("chown", String(other), history)
        let read = try t.rollbackctl("history")
        #expect(read.status == 1)
        #expect(read.stderr == "Error: \(try owned(history)).\n")
        try shell("chown", "0", history)

        let lock = t.state + "/lock"
        try shell("chown", String(other), lock)
        let locked = try t.rollbackctl("rollforward")
        #expect(locked.status == 1)
        #expect(locked.stderr == "Error: \(try owned(lock, what: "lock file")).\n")
        try shell("chown", "0", lock)

        let slot = t.slotPath(.previous)  // the flag says previous: it falls back to current
        try shell("chown", String(other), slot)
        let fellBack = try t.launcher()
        #expect(fellBack.stdout.hasPrefix(t.greeting(.current)), "\(fellBack)")
        #expect(fellBack.stderr == "launcher: \(try owned(slot, what: "previous slot")). Running the current slot (\(t.currentVersion)) instead.\n")
        try shell("chown", "0", slot)

        // The fallback above ran the current build, which moved the data up: the previous build
        // the untrusted state still asks for cannot read it, and converting it back would write
        // there, so the current build runs instead: an untrusted state never stops the start
        // (issue 36, part 3; it used to exit 70). Its SDK then writes no data in a directory
        // another user owns, and says so.
        try shell("chown", String(other), t.state)
        let untrusted = try t.launcher()
        #expect(untrusted.status == 1, "\(untrusted)")
        #expect(untrusted.stdout.isEmpty, "\(untrusted)")
        #expect(untrusted.stderr.hasPrefix("launcher: \(try owned(t.state, what: "state directory")); \(honoured)"), "\(untrusted)")
        #expect(untrusted.stderr.contains(", but the previous slot (\(t.previousVersion)) cannot run on the data: its reader floor is \(t.currentVersion), and converting it back would write to a state directory the launcher does not trust; fix its permissions as said, and the choice it records counts again. Running the current slot (\(t.currentVersion)) instead.\nError: the app (version \(t.currentVersion)) could not prepare its data in \(t.state)/data: The directory above the data directory \(t.state) is owned by another user (owner uid \(other), mode 700); refusing to write there: run 'chown 0 \(t.state)' or choose another directory.\n"), "\(untrusted)")
        let write = try t.rollbackctl("rollforward")
        #expect(write.status == 1)
        #expect(write.stderr == "Error: \(try owned(t.state, what: "state directory")).\n")
        try shell("chown", "0", t.state)

        let manifest = t.bundle + "/manifest"
        try shell("chown", String(other), manifest)
        let refused = try t.launcher()
        #expect(refused.status == 70)
        #expect(refused.stderr == "launcher: \(try owned(manifest, what: "manifest")).\n")
    }

    @Test func aSlotLinkOwnedByAnotherUserIsNotFollowed() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        let slot = t.slotPath(.current)
        let kept = t.directory + "/kept"
        try shell("mkdir", "-m", "755", kept)
        try shell("mv", slot, kept + "/libAppCore.so")
        try shell("ln", "-s", kept + "/libAppCore.so", slot)
        try shell("chown", "-h", String(other), slot)
        let result = try t.launcher()
        #expect(result.stdout.hasPrefix(t.greeting(.previous)))
        #expect(result.stderr == "launcher: The symbolic link \(slot) on the way to the current slot is owned by another user (owner uid \(other)); refusing to follow it: remove it or run 'chown -h 0 \(slot)'. Running the previous slot (\(t.previousVersion)) instead.\n")
    }

    /// Another user who can read the lock file can `flock` it; the operator's command waits
    /// 10 seconds, then fails with a sentence that names the file, instead of forever.
    @Test func aLockAnotherUserHoldsFailsWithinTheBound() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        try shell("chmod", "755", t.directory)
        try shell("mkdir", "-m", "755", t.state)
        let lock = t.state + "/lock"
        try shell("install", "-m", "644", "/dev/null", lock)
        let holder = try SpawnedProcess("/usr/bin/setpriv", ["--reuid=\(other)", "--regid=\(other)", "--clear-groups",
                                                             "/usr/bin/flock", lock, "/bin/sleep", "60"],
                                        environment: ["PATH": "/usr/bin:/bin"], ownProcessGroup: true)
        defer { kill(-holder.pid, SIGKILL); holder.wait() }
        var held = false
        for _ in 0..<200 where !held {
            held = try runProcess("/usr/bin/flock", ["-n", lock, "true"]).status != 0
            if !held { usleep(25_000) }
        }
        try #require(held, "the second user never took the lock")

        let started = Date()
        let result = try t.rollbackctl("rollback")
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The lock file \(lock) is still held by another process after 10 seconds; find it with 'fuser -v \(lock)' and stop it (or wait for it to finish), then try again.\n")
        #expect(elapsed >= 9.5 && elapsed < 25, "waited \(elapsed) s")
        #expect(!FileManager.default.fileExists(atPath: t.state + "/state"))
    }
}

/// A non-root user as a Kubernetes pod runs the app (`runAsUser`, `runAsGroup` and `fsGroup`
/// all its own private group), with only the environment given: no HOME unless it is set.
@Suite(.enabled(if: geteuid() == 0, "needs root to create a user and run the bundle as it"))
struct NonRootStateTests {
    /// Runs `program` of the bundle as the pod user, from /, with exactly `environment`.
    static func run(_ t: TestBundle, _ program: String, _ arguments: [String] = [], environment: [String: String]) throws -> ProcessResult {
        let user = try PodUser.ids()
        let variables = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }.map { "\($0.key)=\($0.value)" }.sorted()
        return try runProcess("/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups",
                                                   "/usr/bin/env", "-i", "-C", "/"] + variables + [t.bundle + "/bin/" + program] + arguments)
    }

    /// A bundle the pod user can run, and a volume the kubelet has chgrp'ed to its group.
    static func podBundle() throws -> (TestBundle, volume: String, state: String) {
        let t = try TestBundle()
        try shell("chmod", "755", t.directory)
        let volume = t.directory + "/volume"
        try shell("mkdir", "-m", "755", volume)
        try kubeletOwnershipPass(volume, group: try PodUser.ids().gid)
        return (t, volume, volume + "/state")
    }

    /// (c) runAsUser, runAsGroup and fsGroup the same private group: after the kubelet's pass
    /// (group-writable, setgid) the state is trusted, and a rollback survives restarts.
    @Test func theStateStaysTrustedWhenFsGroupIsTheUsersOwnGroup() throws {
        let (t, volume, state) = try Self.podBundle()
        let user = try PodUser.ids()
        let environment = ["SWITCHBACK_STATE_DIR": state, "HOME": "/"]
        let first = try Self.run(t, "launcher", environment: environment)
        #expect(first.status == 0 && first.stdout.hasPrefix(t.greeting(.current)), "\(first)")
        #expect(first.stderr.isEmpty, "\(first)")
        #expect(try Self.run(t, "rollbackctl", ["rollback", "--reason", "1.2.0 corrupts exports"], environment: environment).status == 0)

        for restart in 0..<3 {
            try kubeletOwnershipPass(volume, group: user.gid)
            let info = try FileManager.default.attributesOfItem(atPath: state)
            #expect(info[.posixPermissions] as? Int == 0o2770, "restart \(restart): the pass left \(info[.posixPermissions]!)")
            #expect(info[.groupOwnerAccountID] as? Int == Int(user.gid))
            let result = try Self.run(t, "launcher", environment: environment)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.hasPrefix(t.greeting(.previous)), "restart \(restart): \(result)")
            #expect(result.stderr.isEmpty, "restart \(restart): the state was not trusted: \(result)")
        }
        let status = try Self.run(t, "rollbackctl", ["status", "--json"], environment: environment)
        let json = try? JSONDecoder().decode(StatusDocument.self, from: Data(status.stdout.utf8))
        #expect(json?.activeSlot == "previous")
        #expect(json?.stateTrust.trusted == true)
        #expect(json?.stateTrust.reason == nil)
        // The operator can still write there: the rollforward is recorded and runs the current build.
        #expect(try Self.run(t, "rollbackctl", ["rollforward"], environment: environment).status == 0)
        try kubeletOwnershipPass(volume, group: user.gid)
        #expect(try Self.run(t, "launcher", environment: environment).stdout.hasPrefix(t.greeting(.current)))
    }

    /// (d) A container user with no passwd entry gets HOME=/, or none at all: no default
    /// under //.local, but one sentence naming SWITCHBACK_STATE_DIR, from both programs.
    @Test func noHomeOrHomeSlashIsRefusedInOneSentence() throws {
        let (t, _, _) = try Self.podBundle()
        for (environment, home) in [([String: String](), "not set"), (["HOME": "/"], "/")] {
            let sentence = "No state directory: HOME is \(home) and SWITCHBACK_STATE_DIR is not set; set SWITCHBACK_STATE_DIR to a directory this user can own, such as /var/lib/dev.switchback.sample."
            let launcher = try Self.run(t, "launcher", environment: environment)
            #expect(launcher.status == 70, "\(launcher)")
            #expect(launcher.stderr == "launcher: \(sentence)\n")
            #expect(launcher.stdout.isEmpty)
            let status = try Self.run(t, "rollbackctl", ["status"], environment: environment)
            #expect(status.status == 1, "\(status)")
            #expect(status.stderr == "Error: \(sentence)\n")
            #expect(status.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: "//.local/state/dev.switchback.sample"))
    }
}

/// The user a pod runs as in `NonRootStateTests`: its own group (`--user-group`), which no
/// other account shares, stands for runAsGroup and fsGroup.
enum PodUser {
    static let name = "switchback-pod"

    static func ids() throws -> (uid: uid_t, gid: gid_t) {
        try created.get()
    }

    private static let created: Result<(uid: uid_t, gid: gid_t), TestFailure> = {
        func found() -> (uid: uid_t, gid: gid_t)? { getpwnam(name).map { ($0.pointee.pw_uid, $0.pointee.pw_gid) } }
        if let ids = found() { return .success(ids) }
        let group = getgrnam(name) != nil ? ["--gid", name] : ["--user-group"]
        let result = try? runProcess("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin"] + group + [name])
        if let ids = found() { return .success(ids) }
        return .failure(TestFailure("useradd \(name) failed: \(result.map(\.description) ?? "not run")"))
    }()
}

/// A second, unprivileged user for the tests that need files owned by someone else.
enum SecondUser {
    static let name = "switchback-other"

    /// Its uid, creating the user (no home, no shell) when it does not exist.
    static func uid() throws -> uid_t {
        try created.get()
    }

    private static let created: Result<uid_t, TestFailure> = {
        if let entry = getpwnam(name) { return .success(entry.pointee.pw_uid) }
        let result = (try? runProcess("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]))
        if let entry = getpwnam(name) { return .success(entry.pointee.pw_uid) }
        return .failure(TestFailure("useradd \(name) failed: \(result.map(\.description) ?? "not run")"))
    }()
}

/// A shared library whose constructor appends to `marker` as soon as anything maps it, and
/// which poses as an AppCore build that prints "EVIL RAN".
func compileAttackerLibrary(at path: String, marker: String) throws {
    try compileSharedLibrary("""
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        __attribute__((constructor)) static void attacker(void) {
            int fd = open("\(marker)", O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) { write(fd, "ran\\n", 4); close(fd); }
        }
        const char *switchback_abi_stamp(void) { return "evil"; }
        int switchback_main(int c, char **v, char **e, const void *x) { puts("EVIL RAN"); return 0; }
        """, to: path)
}
