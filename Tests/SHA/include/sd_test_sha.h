#include "../../C/sd_sha256.h"
