#include "switchback_sdk.h"
#include "switchback.h"

#ifndef SWITCHBACK_APP_VERSION
#define SWITCHBACK_APP_VERSION "0.0.0-dev"
#endif
#ifndef SWITCHBACK_APP_BUILD
#define SWITCHBACK_APP_BUILD "dev"
#endif

const char *switchback_app_version(void) { return SWITCHBACK_APP_VERSION; }
const char *switchback_app_build(void) { return SWITCHBACK_APP_BUILD; }
const char *switchback_abi_stamp(void) { return switchback_compiled_abi_stamp(); }

// Defined by the app, in the same library: `@_cdecl("switchback_register")`. Weak, so a
// library that forgot it still loads, and the SDK says what line is missing.
extern void switchback_register(void) __attribute__((weak));

int32_t switchback_sdk_call_register(void) {
    if (!switchback_register) return 0;
    switchback_register();
    return 1;
}
