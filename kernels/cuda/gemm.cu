/* kernels/cuda/gemm.cu — every matrix product of the backend, through
 * cuBLASLt (see cuda_gemm in cuda_common.cuh for the contract).
 *
 * Per distinct problem (shape, transposes, leading dimensions, types, bias
 * or not, beta zero or not, epilogue, pointer alignment) the matmul
 * descriptor, the four layouts and one algorithm are made once and kept in
 * a small cache; a call then only sets the bias and aux pointers and
 * launches. The same algorithm for the same problem gives the same bits
 * (cuBLASLt's reduction schemes are all ordered), which recompute 0 vs 1
 * relies on.
 *
 * The algorithm: cuBLASLt's heuristic proposes up to GEMM_TUNE_CANDIDATES;
 * each is timed on the call's own operands (GEMM_TUNE_REPS runs after one
 * warm-up, the median; a beta != 0 product runs on a copy of D), and the
 * fastest is taken when it beats the heuristic's first choice by more
 * than GEMM_TUNE_MARGIN, else the first choice stays. The choice is made
 * once per problem and remembered for the rest of the run, also past the
 * cache's eviction, so every call of a shape in one run uses one
 * algorithm. Two runs time independently and may choose differently when
 * two candidates are within the timing noise: runs that must agree bit for
 * bit across processes (comparisons of recompute modes or of the NCCL path
 * between two processes) set TRAIN_GPT_GEMM_TUNE=0, which keeps the
 * heuristic's first choice, a function of the problem alone.
 * TRAIN_GPT_GEMM_VERBOSE=1 or --profile-ops prints each choice ("gemm
 * algo: ..." on stderr).
 *
 * The cache holds GEMM_CACHE_SIZE problems; past that the oldest entry is
 * dropped (only head_logits with many different row counts gets there). */
#include "cuda_common.cuh"

#include <cublasLt.h>
#include <string.h>

#include "kernels/cuda_libs.h"

/* cuBLASLt's functions, from the library opened when the first backend
 * is made (kernels/cuda_libs.h); cuda_gemm_init opens it, so the calls
 * after it find it open. */
static const CudaLtApi *gemm_lt(void)
{
    char why[512];
    const CudaLtApi *lt = cuda_libs_lt(why, sizeof why);
    if (!lt) CUDA_FATAL("%s", why);
    return lt;
}
#define LT (gemm_lt())

static void cublas_check_(cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "cublasLt error: %s failed: %s (status %d) at %s:%d\n", call,
            LT->GetStatusString(s), (int)s, file, line);
    exit(1);
}
#define CUBLAS_CHECK(call) cublas_check_((call), #call, __FILE__, __LINE__)

#define GEMM_CACHE_SIZE 64
#define GEMM_TUNE_CANDIDATES 8
#define GEMM_TUNE_REPS 5
#define GEMM_TUNE_MARGIN 0.03f /* a candidate must be 3% faster than the first choice */

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldd, ab_bf16, dd_bf16, has_bias, beta_zero, align, epi, ldaux;
} GemmKey;

/* One call's operands: the algorithm is timed on them. */
typedef struct {
    const void *A, *B, *bias;
    void *D, *aux;
    float beta;
} GemmCall;

typedef struct {
    int used;
    GemmKey key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
} GemmEntry;

/* The candidate chosen for a problem, kept for the whole run. */
typedef struct {
    GemmKey key;
    int pick;
} GemmChoice;

struct GemmCache {
    GemmEntry e[GEMM_CACHE_SIZE];
    int next; /* slot to fill or evict next */
    GemmChoice *choices;
    int nchoices, cap;
};

void cuda_gemm_init(CudaState *st)
{
    cublasLtHandle_t h;
    CUBLAS_CHECK(LT->Create(&h));
    st->lt = (void *)h;
    st->gemm = (GemmCache *)calloc(1, sizeof(GemmCache));
    if (!st->gemm) CUDA_FATAL("out of host memory for the matmul cache");
}

static void entry_destroy(GemmEntry *e)
{
    if (!e->used) return;
    CUBLAS_CHECK(LT->MatrixLayoutDestroy(e->a));
    CUBLAS_CHECK(LT->MatrixLayoutDestroy(e->b));
    CUBLAS_CHECK(LT->MatrixLayoutDestroy(e->d));
    CUBLAS_CHECK(LT->MatmulDescDestroy(e->desc));
    e->used = 0;
}

void cuda_gemm_destroy(CudaState *st)
{
    if (st->gemm) {
        for (int i = 0; i < GEMM_CACHE_SIZE; i++) entry_destroy(&st->gemm->e[i]);
        free(st->gemm->choices);
        free(st->gemm);
        st->gemm = NULL;
    }
    if (st->lt) CUBLAS_CHECK(LT->Destroy((cublasLtHandle_t)st->lt));
    st->lt = NULL;
}

/* Largest power of two (<= 16) dividing the address. cuBLASLt picks kernels
 * by the alignment it is promised, so it is part of the key; capping it at
 * 16 bytes (what its vectorised kernels need) keeps the same algorithm, and
 * so the same bits, when the same product runs on buffers at different
 * offsets (recompute 0 and 1 place a block's tape in different slots). */
static int ptr_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int al = 16;
    while (al > 1 && (a % al) != 0) al >>= 1;
    return al;
}

static void set_ptr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void *p)
{
    CUBLAS_CHECK(LT->MatmulDescSetAttribute(desc, attr, &p, sizeof(p)));
}

/* The descriptor and layouts of problem k; the pointers of call c are set
 * on the descriptor (the heuristic reads their alignment). */
static void entry_describe(GemmEntry *e, const GemmKey *k, const GemmCall *c)
{
    cudaDataType_t abt = k->ab_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cudaDataType_t ddt = k->dd_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(LT->MatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opa = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(LT->MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa,
                                            sizeof(opa)));
    CUBLAS_CHECK(LT->MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb,
                                            sizeof(opb)));
    cublasLtEpilogue_t epi = k->has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (k->epi == GEMM_EPI_GELU_AUX)
        epi = k->has_bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    else if (k->epi == GEMM_EPI_DGELU)
        epi = CUBLASLT_EPILOGUE_DGELU;
    CUBLAS_CHECK(LT->MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                            sizeof(epi)));
    if (k->has_bias) {
        int32_t bt = (int32_t)ddt;
        CUBLAS_CHECK(LT->MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bt, sizeof(bt)));
        set_ptr(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c->bias);
    }
    if (k->epi != GEMM_EPI_NONE) {
        /* aux: m x n, D's type (cuBLASLt's default for GELU), column-major */
        int64_t ld = k->ldaux;
        CUBLAS_CHECK(LT->MatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                &ld, sizeof(ld)));
        set_ptr(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c->aux);
    }
    /* stored shapes, column-major: A is (ta ? k x m : m x k), B (tb ? n x k : k x n) */
    CUBLAS_CHECK(LT->MatrixLayoutCreate(&e->a, abt, k->ta ? k->k : k->m,
                                        k->ta ? k->m : k->k, k->lda));
    CUBLAS_CHECK(LT->MatrixLayoutCreate(&e->b, abt, k->tb ? k->n : k->k,
                                        k->tb ? k->k : k->n, k->ldb));
    CUBLAS_CHECK(LT->MatrixLayoutCreate(&e->d, ddt, k->m, k->n, k->ldd));
}

/* Up to GEMM_TUNE_CANDIDATES algorithms for the problem, the heuristic's
 * order; exits naming the problem when there is none. */
static int entry_candidates(CudaState *st, GemmEntry *e, const GemmKey *k,
                            cublasLtMatmulHeuristicResult_t *res)
{
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(LT->MatmulPreferenceCreate(&pref));
    size_t ws = CUDA_LT_WORKSPACE_BYTES;
    uint32_t al = (uint32_t)k->align;
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    /* Split-K partial sums in fp32 (the compute type) only: the in-place and
     * output-type schemes keep them in D's type, and with bf16 D and a long
     * k (the head's dx = dlogits . wte, k = V = 50257) that rounding reached
     * 3.6% of max|dx| on the H200 (gpu_check, 2026-11-29), past the 2e-2
     * bf16 tolerance. Unsplit algorithms stay allowed. */
    uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof(reduction)));
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof(al)));
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof(al)));
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof(al)));
    CUBLAS_CHECK(LT->MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof(al)));
    memset(res, 0, sizeof(*res) * GEMM_TUNE_CANDIDATES);
    int found = 0;
    /* No algorithm for the problem comes back as CUBLAS_STATUS_NOT_SUPPORTED
     * (not as found = 0): name the problem below rather than the call. */
    cublasStatus_t hs = LT->MatmulAlgoGetHeuristic((cublasLtHandle_t)st->lt, e->desc, e->a,
                                                   e->b, e->d, e->d, pref,
                                                   GEMM_TUNE_CANDIDATES, res, &found);
    if (hs != CUBLAS_STATUS_NOT_SUPPORTED)
        cublas_check_(hs, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
    CUBLAS_CHECK(LT->MatmulPreferenceDestroy(pref));
    int n = 0; /* the usable prefix */
    while (hs == CUBLAS_STATUS_SUCCESS && n < found && res[n].state == CUBLAS_STATUS_SUCCESS) n++;
    if (n < 1)
        CUDA_FATAL("cuBLASLt has no algorithm for m=%d n=%d k=%d ta=%d tb=%d lda=%d ldb=%d "
                   "ldd=%d %s->%s bias=%d epilogue=%d align=%d",
                   k->m, k->n, k->k, k->ta, k->tb, k->lda, k->ldb, k->ldd,
                   k->ab_bf16 ? "bf16" : "fp32", k->dd_bf16 ? "bf16" : "fp32", k->has_bias,
                   k->epi, k->align);
    return n;
}

static cublasStatus_t launch(CudaState *st, GemmEntry *e, const cublasLtMatmulAlgo_t *algo,
                             const GemmCall *c, void *D)
{
    float alpha = 1.0f;
    return LT->Matmul((cublasLtHandle_t)st->lt, e->desc, &alpha, c->A, e->a, c->B, e->b,
                          &c->beta, D, e->d, D, e->d, algo, st->workspace,
                          CUDA_LT_WORKSPACE_BYTES, st->stream);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median milliseconds of GEMM_TUNE_REPS runs of each candidate (after one
 * warm-up) into ms[i]; a candidate that fails to launch gets +inf. D is
 * the call's own output when beta == 0 (the real call overwrites it
 * afterwards), else a copy of it. Returns 0, or -1 when the copy could not
 * be allocated (then nothing was timed). */
static int time_candidates(CudaState *st, GemmEntry *e, const GemmKey *k, const GemmCall *c,
                           const cublasLtMatmulHeuristicResult_t *res, int n, float *ms)
{
    void *D = c->D, *copy = NULL;
    if (c->beta != 0.0f) {
        size_t bytes = (size_t)k->ldd * k->n * (k->dd_bf16 ? 2 : 4);
        if (cudaMalloc(&copy, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        CUDA_CHECK(cudaMemcpyAsync(copy, c->D, bytes, cudaMemcpyDeviceToDevice, st->stream));
        D = copy;
    }
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < n; i++) {
        ms[i] = INFINITY;
        if (launch(st, e, &res[i].algo, c, D) != CUBLAS_STATUS_SUCCESS) {
            /* a refused candidate may leave a (non-sticky) launch error
             * behind, which the next LAUNCH's check would blame on its
             * own kernel */
            (void)cudaGetLastError();
            continue;
        }
        float t[GEMM_TUNE_REPS];
        for (int r = 0; r < GEMM_TUNE_REPS; r++) {
            CUDA_CHECK(cudaEventRecord(e0, st->stream));
            CUBLAS_CHECK(launch(st, e, &res[i].algo, c, D));
            CUDA_CHECK(cudaEventRecord(e1, st->stream));
            CUDA_CHECK(cudaEventSynchronize(e1));
            CUDA_CHECK(cudaEventElapsedTime(&t[r], e0, e1));
        }
        qsort(t, GEMM_TUNE_REPS, sizeof t[0], cmp_float);
        ms[i] = t[GEMM_TUNE_REPS / 2];
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    if (copy) {
        CUDA_CHECK(cudaStreamSynchronize(st->stream));
        CUDA_CHECK(cudaFree(copy));
    }
    return 0;
}

/* The rule: the heuristic's first choice unless another is more than
 * GEMM_TUNE_MARGIN faster; among those, the fastest (ties: the earlier). */
static int pick_fastest(const float *ms, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (ms[i] < ms[best] && ms[i] < ms[0] * (1.0f - GEMM_TUNE_MARGIN)) best = i;
    return best;
}

static int choice_find(const GemmCache *c, const GemmKey *k)
{
    for (int i = 0; i < c->nchoices; i++)
        if (memcmp(&c->choices[i].key, k, sizeof *k) == 0) return c->choices[i].pick;
    return -1;
}

static void choice_add(GemmCache *c, const GemmKey *k, int pick)
{
    if (c->nchoices == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        GemmChoice *p = (GemmChoice *)realloc(c->choices, sizeof(GemmChoice) * (size_t)cap);
        if (!p) CUDA_FATAL("out of host memory for the matmul choices");
        c->choices = p;
        c->cap = cap;
    }
    c->choices[c->nchoices].key = *k;
    c->choices[c->nchoices].pick = pick;
    c->nchoices++;
}

static int verbose(const CudaState *st)
{
    return st->gemm_verbose || (st->owner && st->owner->profile);
}

/* One line per choice: the problem, the algorithm's configuration and
 * the times behind the choice (none when it was not timed). */
static void print_choice(const GemmKey *k, const cublasLtMatmulAlgo_t *algo, int pick, int n,
                         const float *ms, const char *why)
{
    int32_t id = -1;
    uint32_t tile = 0, stages = 0, splitk = 0;
    LT->MatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, NULL);
    LT->MatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                     NULL);
    LT->MatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                     sizeof stages, NULL);
    LT->MatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                     sizeof splitk, NULL);
    fprintf(stderr,
            "gemm algo: m=%d n=%d k=%d t=%d%d ld=%d,%d,%d %s->%s bias=%d beta=%d epi=%d "
            "align=%d: candidate %d of %d (id %d tile %u stages %u splitk %u)",
            k->m, k->n, k->k, k->ta, k->tb, k->lda, k->ldb, k->ldd, k->ab_bf16 ? "bf16" : "fp32",
            k->dd_bf16 ? "bf16" : "fp32", k->has_bias, !k->beta_zero, k->epi, k->align, pick,
            n, id, tile, stages, splitk);
    if (ms) fprintf(stderr, " %.4f ms, heuristic's first %.4f ms", ms[pick], ms[0]);
    fprintf(stderr, " [%s]\n", why);
}

static void entry_build(CudaState *st, GemmEntry *e, const GemmKey *k, const GemmCall *c)
{
    entry_describe(e, k, c);
    cublasLtMatmulHeuristicResult_t res[GEMM_TUNE_CANDIDATES];
    const int n = entry_candidates(st, e, k, res);
    float ms[GEMM_TUNE_CANDIDATES];
    const float *timed = NULL;
    const char *why;
    int pick = choice_find(st->gemm, k);
    if (pick >= 0) {
        why = "chosen earlier in this run";
        if (pick >= n) pick = 0; /* cannot happen: the heuristic is a function of the problem */
    } else if (!st->gemm_tune || n == 1) {
        pick = 0;
        why = st->gemm_tune ? "the only candidate" : "TRAIN_GPT_GEMM_TUNE=0: heuristic's first";
        choice_add(st->gemm, k, pick);
    } else if (time_candidates(st, e, k, c, res, n, ms) == 0) {
        pick = pick_fastest(ms, n);
        timed = ms;
        why = "timed";
        choice_add(st->gemm, k, pick);
    } else {
        pick = 0;
        why = "no memory for a copy of D to time on: heuristic's first";
        choice_add(st->gemm, k, pick);
    }
    if (verbose(st)) print_choice(k, &res[pick].algo, pick, n, timed, why);
    e->algo = res[pick].algo;
    e->key = *k;
    e->used = 1;
}

static GemmEntry *cache_get(CudaState *st, const GemmKey *k, const GemmCall *c)
{
    GemmCache *gc = st->gemm;
    for (int i = 0; i < GEMM_CACHE_SIZE; i++)
        if (gc->e[i].used && memcmp(&gc->e[i].key, k, sizeof *k) == 0) return &gc->e[i];
    GemmEntry *e = &gc->e[gc->next];
    gc->next = (gc->next + 1) % GEMM_CACHE_SIZE;
    entry_destroy(e);
    entry_build(st, e, k, c);
    return e;
}

void cuda_gemm_epi(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
                   const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
                   const void *bias, float beta, int epi, void *aux, int ldaux)
{
    if (m <= 0 || n <= 0) return;
    if (epi != GEMM_EPI_NONE && (!aux || ldaux < m || ldaux % 8 != 0))
        CUDA_FATAL("gemm epilogue %d: aux %p with leading dimension %d (m = %d; needs a "
                   "multiple of 8, at least m)",
                   epi, aux, ldaux, m);
    if (epi == GEMM_EPI_DGELU && (bias || beta != 0.0f))
        CUDA_FATAL("gemm DGELU epilogue: bias and beta must be off");
    GemmKey key;
    memset(&key, 0, sizeof key); /* the key is compared with memcmp */
    key.ta = ta;
    key.tb = tb;
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = lda;
    key.ldb = ldb;
    key.ldd = ldd;
    key.ab_bf16 = ab_bf16;
    key.dd_bf16 = dd_bf16;
    key.has_bias = bias != NULL;
    key.beta_zero = beta == 0.0f;
    key.epi = epi;
    key.ldaux = epi != GEMM_EPI_NONE ? ldaux : 0;
    int al = ptr_align(A);
    if (ptr_align(B) < al) al = ptr_align(B);
    if (ptr_align(D) < al) al = ptr_align(D);
    if (bias && ptr_align(bias) < al) al = ptr_align(bias);
    if (aux && ptr_align(aux) < al) al = ptr_align(aux);
    key.align = al;
    GemmCall call = {A, B, bias, D, aux, beta};
    GemmEntry *e = cache_get(st, &key, &call);
    if (bias) set_ptr(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (epi != GEMM_EPI_NONE) set_ptr(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
    CUBLAS_CHECK(launch(st, e, &e->algo, &call, D));
}

void cuda_gemm(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
               const void *bias, float beta)
{
    cuda_gemm_epi(st, ta, tb, m, n, k, A, lda, B, ldb, D, ldd, ab_bf16, dd_bf16, bias, beta,
                  GEMM_EPI_NONE, NULL, 0);
}
