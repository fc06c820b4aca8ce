// rollbackctl-remote: the network and signing half of rollbackctl (sync, keygen, sign).
// rollbackctl executes it for those subcommands, so only they pay for Foundation, libcurl
// and libcrypto at start. Parses, calls, prints, exits.
import Foundation
import RemoteCtlKit

exit(RemoteCtl.main(Array(CommandLine.arguments.dropFirst())))
