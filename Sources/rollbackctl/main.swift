// rollbackctl: the operator's command line. Parses, calls, prints, exits.
import Foundation
import RollbackCtlKit

exit(RollbackCtl.main(Array(CommandLine.arguments.dropFirst())))
