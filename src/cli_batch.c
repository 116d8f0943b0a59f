#include "cli.h"
int qlm_cmd_batch(int argc, char **argv)
{
    (void)argc; (void)argv;
    return qlm_cli_error(QLM_EUSAGE, "qlm batch: not implemented yet");
}
