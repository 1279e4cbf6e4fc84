/* bad_arrow.c: a fixture for the layer check (never compiled): emu must
 * not include a devices header nor a vendor one; the check must fail. */
#include "devices/machine/machine.h"
#include "nrt/nrt_status.h"
