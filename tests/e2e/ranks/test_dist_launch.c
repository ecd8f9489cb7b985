/* tests/e2e/ranks/test_dist_launch.c — how a process finds its place in the world from
 * what its launcher left in the environment: the node-local rank that picks
 * its GPU (dist_local_rank), and a Slurm step whose tasks cannot form one
 * MPI world.
 *
 * References: the variables each launcher documents for the process it
 * starts — Open MPI's mpirun OMPI_COMM_WORLD_LOCAL_RANK; MPICH's and Intel
 * MPI's mpiexec (Hydra) MPI_LOCALRANKID (and PMI_RANK, PMI_SIZE); MVAPICH2's
 * mpirun_rsh MV2_COMM_WORLD_LOCAL_RANK and MV2_COMM_WORLD_SIZE; srun
 * SLURM_PROCID (the task's rank in the step), SLURM_LOCALID (its rank on
 * the node) and SLURM_STEP_NUM_TASKS — and what a
 * process launched by mpiexec inside a Slurm allocation inherits: mpiexec
 * starts one proxy per node with srun, so every rank on a node sees the
 * proxy's SLURM_PROCID and SLURM_LOCALID (0 on the first node). The
 * expected values are written out by hand for each case. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Every variable dist_local_rank may read, cleared: the test runner may
 * itself run under a launcher. */
static void clear_launcher_env(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                 "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "SLURM_PROCID",
                                 "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                 "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

TestSuite(dist_launch, .init = clear_launcher_env);

Test(dist_launch, no_launcher_variable_takes_the_node_rank)
{
    cr_expect_eq(dist_local_rank(5, 3), 3);
}

Test(dist_launch, open_mpi_local_rank_is_taken)
{
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    setenv("SLURM_LOCALID", "0", 1); /* mpirun's daemon, started by srun */
    setenv("SLURM_PROCID", "0", 1);
    cr_expect_eq(dist_local_rank(6, 2), 2);
}

Test(dist_launch, srun_direct_launch_takes_slurm_localid)
{
    /* srun --mpi=pmix: SLURM_PROCID is this very rank */
    setenv("SLURM_PROCID", "9", 1);
    setenv("SLURM_LOCALID", "1", 1);
    cr_expect_eq(dist_local_rank(9, 1), 1);
}

Test(dist_launch, hydra_inside_slurm_ignores_the_proxys_slurm_localid)
{
    /* mpiexec -n 4 on one node of an allocation: ranks 0..3 all inherit the
     * proxy's SLURM_LOCALID=0 and SLURM_PROCID=0; taking SLURM_LOCALID put
     * all four on device 0 (NCCL: duplicate GPU). */
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_LOCALID", "0", 1);
    for (int r = 0; r < 4; r++) {
        unsetenv("MPI_LOCALRANKID");
        cr_expect_eq(dist_local_rank(r, r), r, "rank %d without MPI_LOCALRANKID", r);
        char v[16];
        snprintf(v, sizeof v, "%d", r);
        setenv("MPI_LOCALRANKID", v, 1);
        cr_expect_eq(dist_local_rank(r, r), r, "rank %d with MPI_LOCALRANKID=%d", r, r);
    }
}

Test(dist_launch, mpich_and_mvapich_local_ranks_are_taken)
{
    setenv("MPI_LOCALRANKID", "3", 1);
    cr_expect_eq(dist_local_rank(11, 0), 3);
    unsetenv("MPI_LOCALRANKID");
    setenv("MV2_COMM_WORLD_LOCAL_RANK", "1", 1);
    cr_expect_eq(dist_local_rank(9, 0), 1);
}

Test(dist_launch, a_malformed_variable_is_not_taken)
{
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x1", 1);
    setenv("MPI_LOCALRANKID", "-1", 1);
    cr_expect_eq(dist_local_rank(4, 1), 1);
}

/* Run the tiny model for one step with the environment `env` (an "env
 * VAR=..." prefix); output to d/run.out and .err. */
static int run_with(const char *d, const char *env)
{
    char args[2048], prefix[700];
    snprintf(args, sizeof args, "%s --steps 1", tc_model_args(d));
    snprintf(prefix, sizeof prefix, "%s/run", d);
    return tc_run(env, args, prefix);
}

Test(dist_launch, srun_tasks_without_pmi_are_refused, .timeout = 60)
{
    /* srun -n 2 without --mpi=pmix (MpiDefault=none): no PMI variable, so
     * each task ran alone as rank 0 of 1, two copies of one run writing the
     * same files on device 0 */
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    int rc = run_with(d, "env SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 SLURM_LOCALID=1");
    cr_expect_eq(rc, 1, "exit %d, want 1", rc);
    cr_expect(tc_file_has(tu_path(d, "run.err"), "srun started 2 tasks"),
              "the message does not say what srun did");
    cr_expect(tc_file_has(tu_path(d, "run.err"), "--mpi=pmix"), "no remedy named");
    cr_expect(!tc_file_has(tu_path(d, "run.out"), "step     1/"), "trained alone");
    tu_remove_tree(d);
}

Test(dist_launch, one_task_or_a_batch_script_runs_alone, .timeout = 60)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    /* srun -n 1 */
    int rc = run_with(d, "env SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0 SLURM_LOCALID=0");
    cr_expect_eq(rc, 0, "srun -n 1: exit %d", rc);
    /* the batch script of sbatch -n 4 itself (no step of its own) */
    rc = run_with(d, "env SLURM_NTASKS=4 SLURM_PROCID=0 SLURM_LOCALID=0");
    cr_expect_eq(rc, 0, "in a batch script: exit %d", rc);
    tu_remove_tree(d);
}

Test(dist_launch, each_launchers_world_is_recognised)
{
    cr_expect_eq(dist_launched(), 0, "no launcher");
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                 "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        setenv(vars[i], "2", 1);
        cr_expect_eq(dist_launched(), 1, "%s alone", vars[i]);
        unsetenv(vars[i]);
    }
}
