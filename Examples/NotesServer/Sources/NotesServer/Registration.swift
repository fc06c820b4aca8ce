import Switchback

// The whole glue: the launcher loads this library and runs NotesServer.
@_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(NotesServer.self) }
