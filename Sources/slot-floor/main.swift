// The floor of the launcher's design, for scripts/bench only: a Swift executable that opens
// the slot named by SWITCHBACK_FLOOR_SLOT lazily and calls its entry point. No bundle, no
// manifest, no state, no checks of any kind: the launcher minus everything it decides and
// verifies, so that "launcher vs floor" is the cost of that work alone. Never ship it.
// The app gets SWITCHBACK_FLOOR_STATE_DIR (else SWITCHBACK_STATE_DIR) as its state directory.
import Glibc
import CSwitchbackContract

func fail(_ message: String, _ code: Int32) -> Never {
    var line = "slot-floor: " + message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    exit(code)
}

guard let path = getenv("SWITCHBACK_FLOOR_SLOT") else {
    fail("set SWITCHBACK_FLOOR_SLOT to a slot's libAppCore.so; this is a benchmark baseline, not a launcher.", 64)
}

/// Opens the slot, calls it, exits with its code.
func run(_ path: UnsafePointer<CChar>) -> Never {
    guard let handle = dlopen(path, RTLD_LAZY | RTLD_NODELETE), let symbol = dlsym(handle, SWITCHBACK_ENTRY_SYMBOL) else {
        fail("cannot open \(String(cString: path)): \(dlerror().map { String(cString: $0) } ?? "no entry point").", 70)
    }
    let entry = unsafeBitCast(symbol, to: SwitchbackEntryPoint.self)
    let context = UnsafeMutablePointer<SwitchbackContext>.allocate(capacity: 1)
    context.initialize(to: SwitchbackContext(
        contract_version: UInt32(SWITCHBACK_CONTRACT_VERSION), size: UInt32(MemoryLayout<SwitchbackContext>.size),
        slot: Int32(SWITCHBACK_SLOT_CURRENT.rawValue), reserved: 0,
        slot_version: strdup(getenv("SWITCHBACK_FLOOR_VERSION").map { String(cString: $0) } ?? "0.0.0"),
        other_slot_version: strdup("0.0.0"), state_directory: getenv("SWITCHBACK_FLOOR_STATE_DIR") ?? getenv("SWITCHBACK_STATE_DIR"),
        mark_good: { _ in 0 }, launcher_data: nil))
    exit(entry(CommandLine.argc, CommandLine.unsafeArgv, environ, context))
}

run(path)
