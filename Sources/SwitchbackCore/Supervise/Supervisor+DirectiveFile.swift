#if canImport(Glibc)
import Glibc
#endif

/// A directive read from a local file (`remote.url=file:///etc/app/directive.json`): the
/// supervisor watches the file's directory on its own inotify descriptor (one more watch, no
/// thread), and when something changed there and one `stat` shows the file did (compared with
/// the version the last sync judged, `DirectiveFile`), it runs the sync at once as its child:
/// no interval, no random wait, since a local read costs nothing. An applied directive
/// changes the state file, which the state directory's watch sees next.
///
/// The kubelet updates a ConfigMap volume by writing a new timestamped directory, then
/// renaming a temporary link over `..data` (`IN_MOVED_TO`); configuration management renames
/// a file into place (`IN_MOVED_TO`) or rewrites it (`IN_CLOSE_WRITE`). Every event in the
/// directory only marks it for one comparison at the next turn of the loop.
extension Supervisor {
    /// What happens in the directive file's directory that can change the file it names.
    static let directiveEvents = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB)

    /// Adds the watch of the directive file's directory (the directory as configured: inotify
    /// follows a link to it). A directory that does not exist yet is tried again at each tick.
    func watchDirectiveFile() {
        guard let path = directiveFile, inotifyFD >= 0, directiveWatch < 0 else { return }
        let watch = inotify_add_watch(inotifyFD, FileSystem.parentDirectory(of: path), Self.directiveEvents)
        guard watch >= 0 else { return }
        directiveWatch = watch
        directiveDirty = true  // whatever happened before the watch is compared once
    }

    /// Marks the file for a comparison when one of `events` (as `read(2)` returned them from
    /// the inotify descriptor) is in its directory; forgets the watch when the kernel dropped it
    /// (the directory was removed or unmounted: `IN_IGNORED`).
    func noticeDirectoryEvents(_ events: ArraySlice<UInt8>) {
        var offset = events.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= events.endIndex {
            let event = events[offset..<(offset + header)].withUnsafeBytes { $0.loadUnaligned(as: inotify_event.self) }
            if event.wd == directiveWatch {
                directiveDirty = true
                if event.mask & UInt32(IN_IGNORED) != 0 { directiveWatch = -1 }
            }
            offset += header + Int(event.len)
        }
    }

    /// At each tick: watch the directory if it is not yet, and when it changed, compare the
    /// file (one `stat`, one `readlink`) and start the sync if the file is a version no sync
    /// judged nor was started for. One sync at a time; the next comparison follows its exit.
    func noticeDirectiveFile() {
        guard let path = directiveFile, let trigger = remoteCheck else { return }
        if directiveWatch < 0 { watchDirectiveFile() }
        guard directiveDirty, directiveSync == nil else { return }
        directiveDirty = false
        let version = DirectiveFile.fingerprint(of: path, for: trigger.currentVersion)
        guard version != DirectiveFile.seen(in: directory), version != directiveTried else { return }
        directiveTried = version
        let (pid, problem) = trigger.startSyncChild()
        if let problem { Launcher.printError("launcher: supervisor: \(problem)") }
        if let pid { directiveSync = (pid, version) }
    }

    /// The sync of the directive file exited: compare again, the file may have changed meanwhile.
    func directiveSyncExited() {
        directiveSync = nil
        directiveDirty = true
    }
}
