import Switchback

// The sample's whole glue: the launcher runs SampleApp (see docs/adopting.md).
@_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(SampleApp.self) }
