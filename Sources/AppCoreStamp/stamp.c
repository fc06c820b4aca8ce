#include "appcore_stamp.h"

const char *switchback_app_version(void) { return SWITCHBACK_APP_VERSION; }
const char *switchback_app_build(void) { return SWITCHBACK_APP_BUILD; }
