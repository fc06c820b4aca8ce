// The sample app linked directly into an executable, without the launcher: the baseline
// scripts/bench compares the launcher against.
import AppCore
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
exit(SampleApp(launch: LaunchInfo(nil)).run(arguments))
