#include "switchback_system.h"
