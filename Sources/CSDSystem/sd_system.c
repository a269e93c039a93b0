/* Everything lives in include/sd_system.h; SwiftPM wants one source file. */
#include "sd_system.h"
