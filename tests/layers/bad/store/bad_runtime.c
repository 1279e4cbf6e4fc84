/* bad_runtime.c: a fixture for the layer check (never compiled): the store
 * sees the runtime through devices/runtime/state.h only; the check must fail. */
#include "devices/runtime/runtime.h"
