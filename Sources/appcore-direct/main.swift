// The sample app linked directly into an executable, without the launcher: the baseline
// scripts/bench compares the launcher against. Any app's direct executable is these lines.
import AppCore
import Switchback
import Glibc

exit(Switchback.main())
