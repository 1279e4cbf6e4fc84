/*
 * fuzz_monitor_config.c: fuzz target for neuron-monitor's configuration
 * reader (tools/monitor_config.c): the input is the file's bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "tools/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mon_config cfg;
    if (mon_config_loadb("fuzz", (const char *)data, size, &cfg) == 0)
        mon_config_free(&cfg);
    return 0;
}
