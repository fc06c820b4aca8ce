// rollbackctl-remote: the network and signing half of rollbackctl (sync, keygen, sign).
// rollbackctl executes it for those subcommands, so only they pay for FoundationEssentials,
// libcurl and libcrypto at start. Parses, calls, prints, exits.
#if canImport(Glibc)
import Glibc
#endif
import RemoteCtlKit

exit(RemoteCtl.main(Array(CommandLine.arguments.dropFirst())))
