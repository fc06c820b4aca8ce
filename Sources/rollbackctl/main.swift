// rollbackctl: the operator's command line. Parses, calls, prints, exits.
#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit

exit(RollbackCtl.main(Array(CommandLine.arguments.dropFirst())))
