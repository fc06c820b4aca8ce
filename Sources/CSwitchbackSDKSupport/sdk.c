#include "switchback_sdk.h"
#include "switchback.h"

#ifndef SWITCHBACK_APP_VERSION
#define SWITCHBACK_APP_VERSION "0.0.0-dev"
#endif
#ifndef SWITCHBACK_APP_BUILD
#define SWITCHBACK_APP_BUILD "dev"
#endif

// The bundler links a small object that defines these two (switchback-bundle: the version and
// build of each slot), so a new build id changes one object and the final link, not this
// target's compile flags: re-planning and recompiling the package graph for every commit made
// a one-line release cost several times a plain build. Weak: a plain `swift build` has none,
// and then the build-time defines above apply.
extern const char switchback_stamped_app_version[] __attribute__((weak));
extern const char switchback_stamped_app_build[] __attribute__((weak));

const char *switchback_app_version(void) {
    return switchback_stamped_app_version ? switchback_stamped_app_version : SWITCHBACK_APP_VERSION;
}
const char *switchback_app_build(void) {
    return switchback_stamped_app_build ? switchback_stamped_app_build : SWITCHBACK_APP_BUILD;
}
const char *switchback_abi_stamp(void) { return switchback_compiled_abi_stamp(); }

// Defined by the app, in the same library: `@_cdecl("switchback_register")`. Weak, so a
// library that forgot it still loads, and the SDK says what line is missing.
extern void switchback_register(void) __attribute__((weak));

int32_t switchback_sdk_call_register(void) {
    if (!switchback_register) return 0;
    switchback_register();
    return 1;
}
