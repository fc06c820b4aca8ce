import Foundation
import Testing
@testable import SwitchbackCore
import SwitchbackFiles

/// The strict-mode rules on a real file system (a private directory under /tmp).
@Suite struct StrictModesTests {
    let root: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/switchback-strict-XXXXXX").utf8CString)
        guard let pointer = mkdtemp(&template) else { throw SwitchbackError(.ioFailure, "mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: pointer)).resolvingSymlinksInPath().path
    }

    func directory(_ name: String, mode: mode_t) -> String {
        let path = root + "/" + name
        mkdir(path, 0o700)
        chmod(path, mode)
        return path
    }

    func file(_ path: String, mode: mode_t = 0o600) throws {
        // Test set-up, in directories the checks are meant to refuse: not through the file layer.
        unlink(path)
        guard FileManager.default.createFile(atPath: path, contents: Data("x\n".utf8)) else {
            throw SwitchbackError(.ioFailure, "could not create \(path)")
        }
        chmod(path, mode)
    }

    @Test func aRelativeStateDirectoryFromTheEnvironmentIsRefused() throws {
        #expect(throws: SwitchbackError.self) { try StateDirectory.resolve(appID: "id") { ["SWITCHBACK_STATE_DIR": "state"][$0] } }
        #expect(throws: SwitchbackError.self) { try StateDirectory.resolve(appID: "id") { ["HOME": "home"][$0] } }
        do {
            _ = try StateDirectory.resolve(appID: "id") { ["SWITCHBACK_STATE_DIR": "state"][$0] }
        } catch {
            #expect(error.code == .invalidArgument)
        }
        let explicit = try StateDirectory.resolve(explicit: "typed", appID: "id") { _ in nil }
        #expect(explicit.path.hasPrefix("/") && explicit.path.hasSuffix("/typed"))
    }

    @Test func noHomeAndHomeSlashNameNoStateDirectory() throws {
        for (home, said) in [(nil, "not set"), ("", "empty"), ("/", "/")] as [(String?, String)] {
            #expect { try StateDirectory.resolve(appID: "dev.example") { $0 == "HOME" ? home : nil } } throws: { error in
                (error as? SwitchbackError)?.code == .noStateDirectory
                    && (error as? SwitchbackError)?.message == "No state directory: HOME is \(said) and SWITCHBACK_STATE_DIR is not set; set SWITCHBACK_STATE_DIR to a directory this user can own, such as /var/lib/dev.example."
            }
        }
        #expect(try StateDirectory.resolve(appID: "id") { ["HOME": "/root"][$0] }.path == "/root/.local/state/id")
        #expect(try StateDirectory.resolve(appID: "id") { ["HOME": "/", "SWITCHBACK_STATE_DIR": "/var/lib/id"][$0] }.path == "/var/lib/id")
        #expect(try StateDirectory.resolve(appID: "id") { ["HOME": "/", "XDG_STATE_HOME": "/state"][$0] }.path == "/state/id")
    }

    // MARK: An untrusted state (StartState)

    static let c = StartPlanTests.c, p = StartPlanTests.p
    static let manifest = StartPlanTests.manifest(current: c, previous: p)

    /// A state directory with the flag (rolled back from the current build) and the verdicts
    /// written while it was trusted.
    func stateDirectory(rollback: Bool = true, from: String = c, currentBad: Bool = false) throws -> StateDirectory {
        let directory = StateDirectory(path: root + "/state")
        try directory.prepare()
        if rollback {
            try StateStore(directory: directory).save(StartPlanTests.rolledBack(from: from, to: Self.p).state)
        }
        if currentBad {
            try HealthStore(directory: directory).update(durable: false) { (record: inout HealthRecord) throws(SwitchbackError) in
                record.set(SlotHealth(build: Self.c, verdict: .bad, note: "3 starts without a good mark", markedBy: .auto))
            }
        }
        return directory
    }

    func startState(_ directory: StateDirectory) -> (StartState, SlotDecision) {
        var problem: SwitchbackError?
        do { try directory.checkPermissions() } catch { problem = error }
        let read = StartState.load(directory: directory, directoryProblem: problem, manifest: Self.manifest)
        let plan = try? StartPlan.make(state: read.loaded, health: read.health, manifest: Self.manifest, forcedSlot: nil, applyHealth: read.isTrusted)
        return (read, plan?.decision ?? SlotDecision(slot: .current, reason: .firstStart))
    }

    @Test func anUntrustedStateThatRecordsARollbackRunsThePreviousBuild() throws {
        let directory = try stateDirectory()
        #expect(startState(directory).0.isTrusted)
        chmod(directory.path, 0o777)  // an emptyDir's mode
        let (read, decision) = startState(directory)
        #expect(!read.isTrusted)
        #expect(read.trustProblem?.code == .insecurePermissions)
        #expect(decision.slot == .previous)
        let found = "The state directory \(directory.path) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(directory.path)'"
        #expect(read.loaded.problemSentence == "\(found); it records that an operator rolled back with rollbackctl on 2026-11-18 11:06:40 UTC: \"bad\", so the previous slot runs, and nothing is written there until it is trusted again.")
        #expect(decision.explanation == "an operator rolled back with rollbackctl on 2026-11-18 11:06:40 UTC: \"bad\", which is honoured although the state is not trusted: the\(found.dropFirst(3))")
    }

    @Test func anUntrustedFlagFileIsReadWithoutTrustingIt() throws {
        let directory = try stateDirectory()
        chmod(directory.statePath, 0o666)
        let (read, decision) = startState(directory)
        #expect(read.trustProblem?.path == directory.statePath)
        #expect(decision.slot == .previous)
        // The same file as a link is never followed, so nothing is recorded: the current build.
        let elsewhere = root + "/elsewhere"
        rename(directory.statePath, elsewhere)
        symlink(elsewhere, directory.statePath)
        let (linked, current) = startState(directory)
        #expect(!linked.isTrusted)
        #expect(current.slot == .current)
        #expect(linked.loaded.problemSentence?.hasSuffix("; ignoring it and running the current slot.") == true)
    }

    @Test func anUntrustedBadVerdictOnTheCurrentBuildRunsThePreviousBuild() throws {
        let directory = try stateDirectory(rollback: false, currentBad: true)
        chmod(directory.path, 0o777)
        let (read, decision) = startState(directory)
        #expect(decision.slot == .previous)
        #expect(read.loaded.untrustedRejection == "the current build (1.2.0) is bad (3 starts without a good mark)")
        #expect(read.health == HealthRecord(), "untrusted verdicts must not feed automatic rollback")
    }

    @Test func anUntrustedStateThatRecordsNoRejectionRunsTheCurrentBuild() throws {
        // No flag at all, and a rollback a newer release superseded (from another build).
        for (rollback, from) in [(false, Self.c), (true, StartPlanTests.n)] {
            let directory = try stateDirectory(rollback: rollback, from: from)
            chmod(directory.path, 0o777)
            let (read, decision) = startState(directory)
            #expect(decision.slot == .current, "\(decision)")
            #expect(read.loaded.untrustedRejection == nil)
            #expect(decision.explanation.hasPrefix("the state is not trusted and records no rollback: the state directory \(directory.path) is writable by other users"))
            try FileManager.default.removeItem(atPath: directory.path)
        }
    }

    @Test func aDamagedStateIsExplainedInOneSentence() {
        let damaged = LoadedState(state: .initial, problem: SwitchbackError(.stateInvalid, "The state file /s/state is truncated."))
        let decision = SlotDecision(slot: .current, reason: .damagedState(damaged))
        #expect(decision.explanation == "the state file /s/state is truncated; assuming the default (current); run 'rollbackctl rollback' or 'rollbackctl rollforward' to write a fresh one")
        #expect(SlotDecision.clause("HOME is /") == "HOME is /")
        #expect(SlotDecision.clause("Reading x failed") == "reading x failed")
    }

    @Test func linksAreResolvedAndEveryStepIsChecked() throws {
        let kept = directory("kept", mode: 0o755)
        try file(kept + "/lib.so", mode: 0o644)
        symlink(kept + "/lib.so", root + "/link.so")
        symlink("link.so", root + "/relative.so")
        #expect(try StrictModes.resolve(root + "/relative.so", what: "test file") == kept + "/lib.so")
        #expect(try StrictModes.resolve(root + "/missing.so", what: "test file") == nil)

        let open = directory("open", mode: 0o777)
        try file(open + "/lib.so", mode: 0o644)
        symlink(open + "/lib.so", root + "/into-open.so")
        #expect { try StrictModes.resolve(root + "/into-open.so", what: "test file") } throws: { error in
            (error as? SwitchbackError)?.code == .insecurePermissions
                && (error as? SwitchbackError)?.message == "The directory of the test file \(open) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(open)'."
        }
    }

    @Test func aStickyAncestorIsAcceptedButNotAsTheHolderOfAFile() throws {
        let sticky = directory("sticky", mode: 0o1777)
        let inside = sticky + "/inside"
        mkdir(inside, 0o755)
        try file(inside + "/f", mode: 0o644)
        try file(sticky + "/f", mode: 0o644)
        #expect(try StrictModes.resolve(inside + "/f", what: "test file") == inside + "/f")
        #expect(throws: SwitchbackError.self) { try StrictModes.resolve(sticky + "/f", what: "test file") }
        #expect(try StrictModes.checkDirectory(inside, what: "state directory"))
        let open = directory("open", mode: 0o777)
        mkdir(open + "/inside", 0o755)
        #expect(throws: SwitchbackError.self) { try StrictModes.checkDirectory(open + "/inside", what: "state directory") }
    }

    @Test func trustedReadsRefuseLinksAndFilesOthersCanWrite() throws {
        try file(root + "/target")
        symlink(root + "/target", root + "/link")
        #expect { try FileSystem.read(root + "/link") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        #expect { try FileSystem.appendDurably(root + "/link", [0x41]) } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        try FileSystem.replace(root + "/link", with: Array("new\n".utf8))
        #expect(try FileSystem.read(root + "/target") == Array("x\n".utf8), "replace wrote through the link")
        #expect(try FileSystem.read(root + "/link") == Array("new\n".utf8))

        try file(root + "/open", mode: 0o666)
        #expect { try FileSystem.read(root + "/open") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        #expect(try FileSystem.read(root + "/absent") == nil)
    }

    /// Issue 36: a group can have members no file lists (a supplementary group), so a file
    /// its group may write is never trusted, private group or not; a directory still is.
    @Test func aFileItsGroupMayWriteIsNeverTrusted() throws {
        try file(root + "/state", mode: 0o660)
        #expect { try FileSystem.read(root + "/state") } throws: { error in
            let error = error as? SwitchbackError
            return error?.code == .insecurePermissions && error?.message == "The file \(root)/state is writable by its group (owner uid \(geteuid()), group \(getegid()), mode 660), whose members no file lists (a supplementary group such as Kubernetes' fsGroup); refusing to trust it: run 'chmod g-w \(root)/state' once you have checked what it holds (each start of the launcher does so for the files of its own state directory)."
        }
        chmod(root + "/state", 0o640)
        #expect(try FileSystem.read(root + "/state") == Array("x\n".utf8))
    }

    /// What a start does after the kubelet's pass: the state directory and this user's files
    /// lose group write, each file (not the lock) rewritten into a new inode with its content,
    /// and another user's file is left alone.
    @Test func tighteningTakesGroupWriteOffTheDirectoryAndItsFiles() throws {
        guard Self.ownGroupIsPrivate() else { return }
        let state = directory("state", mode: 0o2770)
        try file(state + "/state", mode: 0o660)
        try file(state + "/lock", mode: 0o660)
        try file(state + "/world", mode: 0o666)
        var before = stat(), lockBefore = stat()
        stat(state + "/state", &before)
        stat(state + "/lock", &lockBefore)
        StateDirectory(path: state).tighten()
        var info = stat()
        stat(state, &info)
        #expect(info.st_mode & 0o7777 == 0o2750)
        stat(state + "/state", &info)
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(info.st_ino != before.st_ino, "the file was not written anew: a descriptor opened before still writes it")
        #expect(try FileSystem.read(state + "/state") == Array("x\n".utf8))
        stat(state + "/lock", &info)
        #expect(info.st_mode & 0o777 == 0o640 && info.st_ino == lockBefore.st_ino)
        stat(state + "/world", &info)
        #expect(info.st_mode & 0o777 == 0o666, "a world-writable file was made trusted")
        // Nothing to do: one lstat, nothing changes.
        StateDirectory(path: state).tighten()
        stat(state, &info)
        #expect(info.st_mode & 0o7777 == 0o2750)
    }

    /// Whether this process's group passes the private-group rule here (the tightening only
    /// acts on a directory that passes it).
    static func ownGroupIsPrivate() -> Bool {
        guard let accounts = try? LocalAccounts.system() else { return false }
        return accounts.whyNotPrivate(getegid(), user: geteuid(), effectiveGroup: getegid()) == nil
    }

    @Test func waitingForALockIsBounded() throws {
        let path = root + "/lock"
        let held = try FileLock(path: path)
        let started = Date()
        #expect { try FileLock(path: path, timeout: 0.3) } throws: { ($0 as? SwitchbackError)?.code == .lockFailed }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.3 && waited < 3, "waited \(waited) s")
        // This process already waited the bound out for this lock: it does not wait again.
        let again = Date()
        #expect { try FileLock(path: path, timeout: 5) } throws: { ($0 as? SwitchbackError)?.code == .lockFailed }
        #expect(Date().timeIntervalSince(again) < 1)
        #expect(try FileLock.acquire(path: path, wait: false) == nil)
        withExtendedLifetime(held) {}
        symlink(path, root + "/lock-link")
        #expect { try FileLock(path: root + "/lock-link") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
    }
}

/// The private-group rule (Debian OpenSSH's "user-group-modes"): group write is trusted only
/// by this process's own group, which no other account has. The accounts database is text
/// given here, so no real account is needed.
@Suite struct PrivateGroupTests {
    static let passwd = """
        root:x:0:0:root:/root:/bin/bash
        # a comment, and a NIS line, are no accounts
        +::::::
        app:x:10001:10001::/var/lib/app:/usr/sbin/nologin
        bob:x:1002:1002::/home/bob:/bin/sh
        """
    static let group = """
        root:x:0:
        app:x:10001:
        bob:x:1002:
        shared:x:3000:app,bob
        """

    static func accounts(passwd: String = passwd, group: String = group) -> LocalAccounts {
        LocalAccounts.parse(passwd: Array(passwd.utf8), group: Array(group.utf8))
    }

    /// A directory's status as the kubelet leaves it: chgrp'ed to `gid`, g+rwx and setgid.
    static func status(mode: mode_t, uid: uid_t = 10001, gid: gid_t) -> stat {
        var info = stat()
        info.st_mode = FileMode.directory | mode
        info.st_uid = uid
        info.st_gid = gid
        return info
    }

    func check(_ info: stat, user: uid_t = 10001, group: gid_t = 10001, accounts: LocalAccounts = accounts()) throws(SwitchbackError) {
        try StrictModes.checkSharedWrite(info, path: "/v/state", what: "state directory", user: user, group: group) { accounts }
    }

    @Test func theFilesAreParsed() {
        let parsed = Self.accounts()
        #expect(parsed.accounts.map(\.name) == ["root", "app", "bob"])
        #expect(parsed.accounts[1] == LocalAccounts.Account(name: "app", uid: 10001, gid: 10001))
        #expect(parsed.groups.first { $0.gid == 3000 }?.members == ["app", "bob"])
    }

    @Test func ownPrivateGroupIsAccepted() throws {
        #expect(Self.accounts().whyNotPrivate(10001, user: 10001, effectiveGroup: 10001) == nil)
        // /etc/group may list the user itself as a member.
        #expect(Self.accounts(group: "app:x:10001:app\n").whyNotPrivate(10001, user: 10001, effectiveGroup: 10001) == nil)
        // A numeric runAsUser the image's /etc/passwd does not know (and no files at all).
        #expect(Self.accounts(passwd: "root:x:0:0::/root:/bin/sh\n", group: "").whyNotPrivate(10001, user: 10001, effectiveGroup: 10001) == nil)
        #expect(LocalAccounts.parse(passwd: [], group: []).whyNotPrivate(10001, user: 10001, effectiveGroup: 10001) == nil)
        // The directory and a file after the kubelet's pass with fsGroup = runAsGroup, by the
        // private-group rule alone (a file is refused before it: aFileItsGroupMayWriteIsNeverTrusted).
        try check(Self.status(mode: 0o2770, gid: 10001))
        var file = Self.status(mode: 0o660, gid: 10001)
        file.st_mode = FileMode.regular | 0o660
        try check(file)
        // An ancestor owned by root, group-writable by the same group.
        try check(Self.status(mode: 0o2775, uid: 0, gid: 10001))
    }

    @Test func aGroupAnotherAccountHasIsRefused() {
        let listed = Self.accounts().whyNotPrivate(3000, user: 10001, effectiveGroup: 3000)
        #expect(listed == "/etc/group lists bob as a member of group 3000")
        let primary = Self.accounts(passwd: Self.passwd + "\nother:x:1003:10001::/:/bin/sh").whyNotPrivate(10001, user: 10001, effectiveGroup: 10001)
        #expect(primary == "the account other (uid 1003) also has group 10001 as its primary group")
        #expect { try check(Self.status(mode: 0o2770, gid: 3000), group: 3000) } throws: { error in
            (error as? SwitchbackError)?.code == .insecurePermissions
                && (error as? SwitchbackError)?.message == "The state directory /v/state is writable by its group (owner uid 10001, group 3000, mode 2770), and /etc/group lists bob as a member of group 3000; refusing to trust it: run 'chmod g-w /v/state', or give group 3000 to this user alone."
        }
    }

    @Test func aGroupThatIsNotThisProcesssIsRefused() {
        // The kubelet chgrp'ed the volume to an fsGroup the pod does not run as.
        #expect { try check(Self.status(mode: 0o2770, gid: 2000)) } throws: { error in
            (error as? SwitchbackError)?.message == "The state directory /v/state is writable by its group (owner uid 10001, group 2000, mode 2770), and group 2000 is not this process's group (10001); refusing to trust it: run 'chmod g-w /v/state', or run this program with group 2000 as its group (in Kubernetes: runAsGroup equal to fsGroup)."
        }
    }

    @Test func worldWritableIsRefusedWhateverTheGroup() {
        #expect { try check(Self.status(mode: 0o2777, gid: 10001)) } throws: { error in
            (error as? SwitchbackError)?.message == "The state directory /v/state is writable by other users (owner uid 10001, mode 2777); refusing to trust it: run 'chmod go-w /v/state'."
        }
    }

    /// `TrustPolicy.strict` (SwitchbackFiles, the writers) and `StrictModes` (the launcher's
    /// reads) ask the one reader of the accounts files: the same files give the same clause.
    @Test func bothTrustLayersReadTheAccountsFilesAlike() throws {
        let root = try StrictModesTests().root
        let passwd = root + "/passwd", group = root + "/group"
        try Self.passwd.write(toFile: passwd, atomically: false, encoding: .utf8)
        try Self.group.write(toFile: group, atomically: false, encoding: .utf8)
        for gid: gid_t in [10001, 3000, 1002] {
            let parsed = Self.accounts().whyNotPrivate(gid, user: 10001, effectiveGroup: gid)
            #expect(LocalAccounts.whyNotPrivate(gid, user: 10001, effectiveGroup: gid, passwdPath: passwd, groupPath: group) == parsed)
        }
        #expect(LocalAccounts.whyNotPrivate(3000, user: 10001, effectiveGroup: 3000, passwdPath: passwd, groupPath: group)
                == "/etc/group lists bob as a member of group 3000")
        // A file that exists and cannot be read (here a directory): the rule refuses, saying why.
        #expect(LocalAccounts.whyNotPrivate(10001, user: 10001, effectiveGroup: 10001, passwdPath: root, groupPath: group)
                == "whether other accounts share group 10001 is unknown (Reading \(root) failed: Is a directory)")
        // Missing files hold no accounts (an image without them): private.
        #expect(LocalAccounts.whyNotPrivate(10001, user: 10001, effectiveGroup: 10001, passwdPath: root + "/none", groupPath: root + "/none") == nil)
    }

    @Test func unreadableAccountsAreRefused() {
        #expect { try StrictModes.checkSharedWrite(Self.status(mode: 0o770, gid: 10001), path: "/v/state", what: "state directory", user: 10001, group: 10001) {
            () throws(FileError) in throw FileError.system("Reading", path: "/etc/passwd", errno: EACCES)
        } } throws: { error in
            (error as? SwitchbackError)?.message.contains("and whether other accounts share group 10001 is unknown (Reading /etc/passwd failed: Permission denied)") == true
        }
    }

    /// On the real file system and accounts: a directory writable by this process's group is
    /// trusted exactly when that group is private here; one of another group never is.
    @Test(.enabled(if: geteuid() == 0, "chgrp to a group this process is not in needs root"))
    func realDirectoriesFollowTheRule() throws {
        let root = try StrictModesTests().root
        let own = root + "/own"
        mkdir(own, 0o700)
        chmod(own, 0o2770)
        let isPrivate = try LocalAccounts.system().whyNotPrivate(getegid(), user: geteuid(), effectiveGroup: getegid()) == nil
        if isPrivate {
            #expect(try StrictModes.checkDirectory(own, what: "state directory"))
        } else {
            #expect(throws: SwitchbackError.self) { try StrictModes.checkDirectory(own, what: "state directory") }
        }
        let other = root + "/other"
        mkdir(other, 0o700)
        chown(other, geteuid(), 54_321)
        chmod(other, 0o2770)
        #expect { try StrictModes.checkDirectory(other, what: "state directory") } throws: { error in
            (error as? SwitchbackError)?.message.contains("is writable by its group (owner uid 0, group 54321, mode 2770), and group 54321 is not this process's group") == true
        }
    }
}

@Suite struct FileModeTests {
    @Test func numbersAreTheSystemsMacros() {
        #expect(FileMode.typeMask == S_IFMT)
        #expect(FileMode.regular == S_IFREG)
        #expect(FileMode.directory == S_IFDIR)
        #expect(FileMode.symbolicLink == S_IFLNK)
        #expect(FileMode.sharedWrite == mode_t(S_IWGRP | S_IWOTH))
        #expect(FileMode.sticky == mode_t(S_ISVTX))
        var info = stat()
        #expect(lstat("/", &info) == 0 && FileMode.type(info) == FileMode.directory)
        #expect(lstat("/proc/self", &info) == 0 && FileMode.type(info) == FileMode.symbolicLink)
        #expect(lstat("/proc/self/exe", &info) == 0 && FileMode.type(info) == FileMode.symbolicLink)
        #expect(stat("/proc/self/exe", &info) == 0 && FileMode.type(info) == FileMode.regular)
    }
}
