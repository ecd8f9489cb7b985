/* cli/version.c — see cli/version.h. */
#include "cli/version.h"

#include "distributed/dist.h"
#include "kernels/device_info.h"

#ifndef TRAIN_GPT_COMMIT
#define TRAIN_GPT_COMMIT "unknown"
#endif

const char *version_commit(void) { return TRAIN_GPT_COMMIT; }

void version_print(FILE *out)
{
    char build[1024], dist[512];
    device_build_info(build, sizeof build);
    dist_build_info(dist, sizeof dist);
    fprintf(out, "train_gpt %s\n", TRAIN_GPT_COMMIT);
#ifdef __clang__
    fprintf(out, "compiler: clang %s\n", __clang_version__);
#else
    fprintf(out, "compiler: gcc %s\n", __VERSION__);
#endif
    fprintf(out, "%s\n", build);
    fprintf(out, "%s\n", dist);
}
