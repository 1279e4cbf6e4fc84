/* bad_rank.c: a fixture for the layer check (never compiled): a file of
 * devices/thread/ must not include a header of the higher rank runtime/. */
#include "devices/runtime/runtime.h"
