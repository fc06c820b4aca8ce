/// Placeholder, filled in by the monitoring work.
public enum Observer {
    public static func checkRecorded(in directory: StateDirectory, manifest: Manifest) {}
}
