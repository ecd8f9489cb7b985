/* cli/version.c — see cli/version.h. */
#include "cli/version.h"

#include "kernels/device_info.h"

#ifndef TRAIN_GPT_COMMIT
#define TRAIN_GPT_COMMIT "unknown"
#endif

void version_print(FILE *out)
{
    char build[1024];
    device_build_info(build, sizeof build);
    fprintf(out, "train_gpt %s\n", TRAIN_GPT_COMMIT);
#ifdef __clang__
    fprintf(out, "compiler: clang %s\n", __clang_version__);
#else
    fprintf(out, "compiler: gcc %s\n", __VERSION__);
#endif
    fprintf(out, "%s\n", build);
}
