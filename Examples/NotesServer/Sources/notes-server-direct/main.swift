// NotesServer linked directly into an executable, without the launcher: `swift run
// notes-server-direct serve`, and the baseline a benchmark compares the launcher against.
// LaunchInfo.slot is nil here, and the data lives in ./.switchback/data (or $SWITCHBACK_DATA_DIR).
import NotesServer
import Switchback
import Glibc

exit(Switchback.main())
