/* dev/cuda/check_timing.c — check_kernels --time: the main ops at GPT-2
 * 124M's shape (B=4, T=1024, C=768, NH=12, V=50257), each timed with CUDA
 * events on the backend's stream: 3 warm-up runs, then the median of 20.
 * Inputs are random (never zeros). Rates use the usual counts: a matmul is
 * 2*N*IC*OC FLOPs forward and twice that backward; causal attention is
 * 2*B*NH*T*T*hs forward (QK^T and PV over the lower triangle) and 2.5x that
 * backward; byte rates count each tensor read or written once. The head is
 * also timed step by step (cuda_head_part): its three gemms and its loss
 * kernel for one chunk, and the whole head against the sum of its gemms
 * (the goal: at most 1.3x). The Llama family's RMSNorm, RoPE and SwiGLU
 * are timed at the same rows (SwiGLU at F = 2048).
 * CHECK_TIMING_TOKENS=FILE (an llm.c token shard: a 256-int32 header,
 * then uint16 ids; dev/gpu_check/gpu_bundle.sh carries 64K ids of
 * tokenized tinyshakespeare): encoder_backward again on the file's first
 * B*T ids at B=4 and B=64, after the table. The table's ids are spread
 * evenly over the vocabulary; text's frequent ids give one token thousands
 * of positions, the case that the backward's sort and run sums must
 * handle. */
#ifdef CUDA_EMU
#include <stdio.h>

#include "kernels/backend.h"
int check_timing(Backend *gpu, int bf16)
{
    (void)gpu, (void)bf16;
    fprintf(stderr, "check_kernels: --time needs a real GPU (this is the emulator build)\n");
    return 1;
}
#else
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/rope.h"
#include "model/planner.h"

#define CT(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "check_timing: %s failed: %s (%s:%d)\n", #call,                     \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                               \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

enum { B_ = 4, T_ = 1024, C_ = 768, NH_ = 12, V_ = 50257, VP_ = 50304 };
#define N_ (B_ * T_)

typedef struct {
    Backend *be;
    void *x, *y, *z, *p, *w, *w2, *bias, *dw, *dbias, *wte, *wpe, *qkv, *dqkv;
    float *mean, *rstd, *lse, *losses, *buf, *master, *m, *v, *table, *qkrstd;
    int *tokens;
    size_t nparams;
    int chunk, which;
} TArgs;

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median_ms(TArgs *a, void (*fn)(TArgs *))
{
    cudaStream_t s = (cudaStream_t)a->be->ops->native_stream(a->be);
    cudaEvent_t e0, e1;
    CT(cudaEventCreate(&e0));
    CT(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) fn(a);
    float t[20];
    for (int i = 0; i < 20; i++) {
        CT(cudaEventRecord(e0, s));
        fn(a);
        CT(cudaEventRecord(e1, s));
        CT(cudaEventSynchronize(e1));
        CT(cudaEventElapsedTime(&t[i], e0, e1));
    }
    CT(cudaEventDestroy(e0));
    CT(cudaEventDestroy(e1));
    qsort(t, 20, sizeof t[0], cmp_float);
    return 0.5f * (t[9] + t[10]);
}

static void *rand_dev(Backend *be, size_t n, int bytes, uint64_t *s, int positive);

/* The first n ids of an llm.c token shard (repeated when it holds fewer),
 * or NULL with the reason on stderr. */
static int *read_token_file(const char *path, int n)
{
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    if (!f || fread(h, sizeof h, 1, f) != 1 || h[0] != 20240520 || h[2] <= 0) {
        fprintf(stderr, "check_timing: CHECK_TIMING_TOKENS=%s: %s\n", path,
                f ? "not an llm.c token shard (magic 20240520)" : "cannot open it");
        if (f) fclose(f);
        return NULL;
    }
    int have = h[2] < n ? h[2] : n;
    uint16_t *ids = malloc((size_t)have * sizeof *ids);
    int *tok = malloc((size_t)n * sizeof *tok);
    size_t got = fread(ids, sizeof *ids, (size_t)have, f);
    fclose(f);
    if (got != (size_t)have) {
        fprintf(stderr, "check_timing: CHECK_TIMING_TOKENS=%s: short file (%zu of %d ids)\n", path,
                got, have);
        free(ids), free(tok);
        return NULL;
    }
    for (int i = 0; i < n; i++) tok[i] = ids[i % have] < V_ ? ids[i % have] : 0;
    free(ids);
    return tok;
}

/* The most positions one id holds among n (the longest run the sort makes). */
static int longest_run(const int *tok, int n)
{
    int *cnt = calloc(V_, sizeof *cnt), best = 0;
    for (int i = 0; i < n; i++)
        if (++cnt[tok[i]] > best) best = cnt[tok[i]];
    free(cnt);
    return best;
}

typedef struct {
    Backend *be;
    void *dwte, *dwpe, *dout;
    int *tokens;
    int B;
} EncText;
static EncText *enc_text_arg; /* median_ms's fn takes TArgs: the text run's own arguments */
static void f_enc_bwd_text(TArgs *a)
{
    (void)a;
    EncText *e = enc_text_arg;
    e->be->ops->encoder_backward(e->be, e->dwte, e->dwpe, e->dout, e->tokens, e->B, T_, C_);
}

/* encoder_backward on the file's ids at B=4 and B=64 */
static int time_encoder_text(TArgs *a, const char *path, int ab, uint64_t *seed)
{
    Backend *be = a->be;
    const int Bs[2] = {B_, 64};
    int *tok = read_token_file(path, 64 * T_);
    if (!tok) return 1;
    printf("\nencoder_backward on text (CHECK_TIMING_TOKENS=%s), median of 20 after 3 warm-ups\n",
           path);
    printf("%-28s %10s %12s  %s\n", "op", "ms", "rate", "longest run");
    for (int k = 0; k < 2; k++) {
        int n = Bs[k] * T_;
        EncText e = {be, a->dw, a->w2, NULL, NULL, Bs[k]};
        e.dout = rand_dev(be, (size_t)n * C_, ab, seed, 0);
        e.tokens = be->ops->mem_alloc(be, (size_t)n * sizeof(int));
        be->ops->mem_upload(be, e.tokens, tok, (size_t)n * sizeof(int));
        enc_text_arg = &e;
        float ms = median_ms(a, f_enc_bwd_text);
        char name[64];
        snprintf(name, sizeof name, "encoder_backward text B%d", Bs[k]);
        printf("%-28s %10.4f %9.1f GB/s  %d of %d positions\n", name, ms,
               3.0 * n * C_ * ab / (ms * 1e-3) / 1e9, longest_run(tok, n), n);
        be->ops->mem_free(be, e.dout);
        be->ops->mem_free(be, e.tokens);
    }
    free(tok);
    return 0;
}

static const int MM[4][2] = {{C_, 3 * C_}, {C_, C_}, {C_, 4 * C_}, {4 * C_, C_}};
static const char *MM_NAME[4] = {"qkv", "attn proj", "fc", "fc proj"};

static void f_enc_fwd(TArgs *a) { a->be->ops->encoder_forward(a->be, a->x, a->tokens, a->wte, a->wpe, B_, T_, C_); }
static void f_enc_bwd(TArgs *a) { a->be->ops->encoder_backward(a->be, a->dw, a->w2, a->x, a->tokens, B_, T_, C_); }
static void f_ln_fwd(TArgs *a) { a->be->ops->layernorm_forward(a->be, a->y, a->mean, a->rstd, a->x, a->w, a->bias, N_, C_); }
static void f_ln_bwd(TArgs *a) { a->be->ops->layernorm_backward(a->be, a->z, a->dw, a->dbias, a->y, a->x, a->w, a->mean, a->rstd, N_, C_); }
static void f_mm_fwd(TArgs *a) { a->be->ops->matmul_forward(a->be, a->y, a->x, a->w, a->bias, N_, MM[a->which][0], MM[a->which][1]); }
static void f_mm_bwd(TArgs *a) { a->be->ops->matmul_backward(a->be, a->z, a->dw, a->dbias, a->y, a->x, a->w, N_, MM[a->which][0], MM[a->which][1]); }
static void f_att_fwd(TArgs *a) { a->be->ops->attention_forward(a->be, a->y, a->lse, a->qkv, B_, T_, C_, NH_, NH_); }
static void f_att_bwd(TArgs *a) { a->be->ops->attention_backward(a->be, a->dqkv, a->z, a->qkv, a->y, a->lse, B_, T_, C_, NH_, NH_); }
static void f_gelu_fwd(TArgs *a) { a->be->ops->gelu_forward(a->be, a->y, a->x, (size_t)N_ * 4 * C_); }
static void f_gelu_bwd(TArgs *a) { a->be->ops->gelu_backward(a->be, a->z, a->x, a->y, (size_t)N_ * 4 * C_); }
static void f_resid(TArgs *a) { a->be->ops->residual_forward(a->be, a->z, a->x, a->y, (size_t)N_ * C_); }
static void f_resid_ln(TArgs *a) { a->be->ops->residual_layernorm_forward(a->be, a->z, a->p, a->mean, a->rstd, a->x, a->y, a->w, a->bias, N_, C_); }
/* the fc layer with its GELU (fused when TRAIN_GPT_FUSE_GELU=1), and the fc
 * projection's backward with the GELU's */
static void f_mm_gelu_fwd(TArgs *a) { a->be->ops->matmul_gelu_forward(a->be, a->z, a->p, a->x, a->w, a->bias, N_, C_, 4 * C_); }
static void f_mm_bwd_gelu(TArgs *a) { a->be->ops->matmul_backward_gelu(a->be, a->z, a->dw, a->dbias, a->y, a->x, a->w, a->p, N_, 4 * C_, C_); }
static void f_head(TArgs *a) { a->be->ops->head_forward_backward(a->be, a->losses, a->z, a->dw, a->y, a->wte, a->tokens, a->buf, N_, C_, V_, VP_, a->chunk, 1.0f / N_); }
static void f_head_eval(TArgs *a) { a->be->ops->head_forward_backward(a->be, a->losses, NULL, a->dw, a->y, a->wte, a->tokens, a->buf, N_, C_, V_, VP_, a->chunk, 1.0f / N_); }
/* the head's four steps for one chunk, each launched alone exactly as the
 * head launches it (kernels/backend.h: cuda_head_part); a->which: the step */
static void f_head_part(TArgs *a) { cuda_head_part(a->be, a->which, a->losses, a->z, a->dw, a->y, a->wte, a->tokens, a->buf, a->chunk, C_, V_, VP_, 1.0f / N_); }
/* the Llama family's ops at this shape: RMSNorm over C, RoPE in place on
 * qkv (as many key heads as heads), SwiGLU at Llama's width for C (8C/3
 * rounded up to 256: 2048, a Llama-style 125M's) */
#define FFN_ ((8 * C_ / 3 + 255) / 256 * 256)
static void f_rn_fwd(TArgs *a) { a->be->ops->rmsnorm_forward(a->be, a->y, a->rstd, a->x, a->w, N_, C_, 1e-5f); }
static void f_rn_bwd(TArgs *a) { a->be->ops->rmsnorm_backward(a->be, a->z, a->dw, a->y, a->x, a->w, a->rstd, N_, C_); }
static void f_rope_fwd(TArgs *a) { a->be->ops->rope_forward(a->be, a->qkv, a->qkv, a->table, B_, T_, C_, NH_, NH_); }
static void f_rope_bwd(TArgs *a) { a->be->ops->rope_backward(a->be, a->dqkv, a->dqkv, a->table, B_, T_, C_, NH_, NH_); }
/* qk-norm in place on qkv (as many key heads as heads), its rstd (N, 2 NH) */
static void f_qn_fwd(TArgs *a) { a->be->ops->qknorm_forward(a->be, a->qkv, a->qkrstd, a->qkv, a->w, a->w, N_, C_, NH_, NH_, 1e-6f); }
static void f_qn_bwd(TArgs *a) { a->be->ops->qknorm_backward(a->be, a->dqkv, a->dw, (char *)a->dw + (size_t)(C_ / NH_) * a->be->act_bytes, a->dqkv, a->qkv, a->w, a->w, a->qkrstd, N_, C_, NH_, NH_); }
static void f_sg_fwd(TArgs *a) { a->be->ops->swiglu_forward(a->be, a->y, a->x, N_, FFN_); }
static void f_sg_bwd(TArgs *a) { a->be->ops->swiglu_backward(a->be, a->z, a->x, a->y, N_, FFN_); }
static void f_adamw(TArgs *a) { a->be->ops->adamw_update(a->be, a->w2, a->master, a->dw, a->m, a->v, a->nparams, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 2); }
static void f_norm(TArgs *a) { (void)a->be->ops->grad_norm_sq(a->be, a->dw, a->nparams); }

/* random bytes that are finite, non-zero numbers of either type: uniform in
 * +-[0.25, 1) for fp32; the same magnitudes in bf16 */
static void *rand_dev(Backend *be, size_t n, int bytes, uint64_t *s, int positive)
{
    void *d = be->ops->mem_alloc(be, n * bytes);
    unsigned char *h = malloc(n * bytes);
    if (!d || !h) {
        fprintf(stderr, "check_timing: cannot allocate %zu bytes\n", n * bytes);
        exit(2);
    }
    for (size_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(*s >> 33);
        float f = 0.25f + 0.75f * (float)(r & 0xffffff) / 16777216.0f;
        if (!positive && (r >> 24) & 1) f = -f;
        if (bytes == 4) ((float *)h)[i] = f;
        else {
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)h)[i] = (uint16_t)(u >> 16);
        }
    }
    be->ops->mem_upload(be, d, h, n * bytes);
    free(h);
    return d;
}

int check_timing(Backend *be, int bf16)
{
    TArgs a = {0};
    uint64_t s = 12345;
    int ab = be->act_bytes;
    /* the largest activation: fc's (N, 4C), or SwiGLU's (N, 2F) */
    size_t big = (size_t)N_ * (2 * FFN_ > 4 * C_ ? 2 * FFN_ : 4 * C_);
    a.be = be;
    a.nparams = 124475904; /* GPT-2 124M with Vp = 50304 */
    a.x = rand_dev(be, big, ab, &s, 0);
    a.y = rand_dev(be, big, ab, &s, 0);
    a.z = rand_dev(be, big, ab, &s, 0);
    a.p = rand_dev(be, big, ab, &s, 0);
    a.qkv = rand_dev(be, (size_t)N_ * 3 * C_, ab, &s, 0);
    a.dqkv = rand_dev(be, (size_t)N_ * 3 * C_, ab, &s, 0);
    a.w = rand_dev(be, (size_t)4 * C_ * C_, ab, &s, 0);
    a.bias = rand_dev(be, 4 * C_, ab, &s, 0);
    a.dbias = rand_dev(be, 4 * C_, ab, &s, 0);
    a.wte = rand_dev(be, (size_t)VP_ * C_, ab, &s, 0);
    a.wpe = rand_dev(be, (size_t)T_ * C_, ab, &s, 0);
    a.dw = rand_dev(be, a.nparams, ab, &s, 0); /* gradients; also dwte and dW */
    a.w2 = rand_dev(be, a.nparams, ab, &s, 0); /* params; also dwpe */
    a.m = rand_dev(be, a.nparams, 4, &s, 0);
    a.v = rand_dev(be, a.nparams, 4, &s, 1);
    a.master = bf16 ? rand_dev(be, a.nparams, 4, &s, 0) : NULL;
    a.mean = rand_dev(be, N_, 4, &s, 0);
    a.rstd = rand_dev(be, N_, 4, &s, 1);
    a.lse = rand_dev(be, (size_t)B_ * NH_ * T_, 4, &s, 1);
    a.losses = rand_dev(be, N_, 4, &s, 0);
    a.chunk = planner_default_loss_chunk(B_, T_, VP_, DTYPE_BF16);
    a.buf = rand_dev(be, (size_t)a.chunk * VP_, 4, &s, 0);
    a.table = rand_dev(be, rope_table_floats(T_, C_ / NH_), 4, &s, 0); /* values: any */
    a.qkrstd = rand_dev(be, (size_t)N_ * 2 * NH_, 4, &s, 1);
    int *tok = malloc(N_ * sizeof(int));
    for (int i = 0; i < N_; i++) tok[i] = (int)((i * 2654435761u) % V_);
    a.tokens = be->ops->mem_alloc(be, N_ * sizeof(int));
    be->ops->mem_upload(be, a.tokens, tok, N_ * sizeof(int));
    free(tok);
    /* the attention backward needs a real forward's out and lse */
    f_att_fwd(&a);
    be->ops->sync(be);

    const char *dt = bf16 ? "bf16" : "fp32";
    double act = (double)N_ * C_ * ab;
    printf("\ntiming (%s): B=%d T=%d C=%d NH=%d V=%d, median of 20 after 3 warm-ups\n", dt, B_, T_,
           C_, NH_, V_);
    printf("%-28s %10s %12s\n", "op", "ms", "rate");
#define ROW(name, fn, work, unit)                                                              \
    do {                                                                                       \
        float ms = median_ms(&a, fn);                                                          \
        printf("%-28s %10.4f %9.1f %s\n", name, ms, (work) / (ms * 1e-3) / 1e12 *              \
               (unit[0] == 'G' ? 1e3 : 1.0), unit);                                           \
    } while (0)
    ROW("encoder_forward", f_enc_fwd, 3 * act, "GB/s");
    ROW("encoder_backward", f_enc_bwd, 3 * act, "GB/s");
    ROW("layernorm_forward", f_ln_fwd, 2 * act, "GB/s");
    ROW("layernorm_backward", f_ln_bwd, 4 * act, "GB/s");
    for (int i = 0; i < 4; i++) {
        char name[64];
        a.which = i;
        double fl = 2.0 * N_ * MM[i][0] * MM[i][1];
        snprintf(name, sizeof name, "matmul_forward %s", MM_NAME[i]);
        ROW(name, f_mm_fwd, fl, "TFLOP/s");
        snprintf(name, sizeof name, "matmul_backward %s", MM_NAME[i]);
        ROW(name, f_mm_bwd, 2 * fl, "TFLOP/s");
    }
    double afl = 2.0 * B_ * NH_ * (double)T_ * T_ * (C_ / NH_);
    ROW("attention_forward", f_att_fwd, afl, "TFLOP/s");
    ROW("attention_backward", f_att_bwd, 2.5 * afl, "TFLOP/s");
    ROW("gelu_forward", f_gelu_fwd, 2 * 4 * act, "GB/s");
    ROW("gelu_backward", f_gelu_bwd, 3 * 4 * act, "GB/s");
    ROW("residual_forward", f_resid, 3 * act, "GB/s");
    ROW("residual_layernorm_forward", f_resid_ln, 4 * act, "GB/s");
    {
        double fl = 2.0 * N_ * C_ * 4 * C_;
        ROW("matmul_gelu_forward fc", f_mm_gelu_fwd, fl, "TFLOP/s");
        ROW("matmul_backward_gelu fc proj", f_mm_bwd_gelu, 2 * fl, "TFLOP/s");
    }
    ROW("head_forward_backward", f_head, 6.0 * N_ * C_ * (double)V_, "TFLOP/s");
    ROW("  its forward (gemm + loss)", f_head_eval, 2.0 * N_ * C_ * (double)V_, "TFLOP/s");
    {
        /* one chunk (a.chunk = N_ at this shape: the whole head) */
        static const char *part[4] = {"  its logits gemm", "  its loss + dlogits kernel",
                                      "  its dx gemm", "  its dwte gemm"};
        const double gfl = 2.0 * a.chunk * C_ * (double)VP_;
        const double lbytes = 2.0 * a.chunk * (double)VP_ * ab; /* read + write logits */
        float t[4], head = median_ms(&a, f_head);
        for (int i = 0; i < 4; i++) {
            a.which = i == 1 ? HEAD_PART_LOSS : i == 0 ? HEAD_PART_LOGITS : i == 2 ? HEAD_PART_DX
                                                                                   : HEAD_PART_DWTE;
            t[i] = median_ms(&a, f_head_part);
            printf("%-28s %10.4f %9.1f %s\n", part[i], t[i],
                   (i == 1 ? lbytes : gfl) / (t[i] * 1e-3) / (i == 1 ? 1e9 : 1e12),
                   i == 1 ? "GB/s" : "TFLOP/s");
        }
        float gemms = t[0] + t[2] + t[3];
        printf("%-28s %10.4f %9.3f x  (head / its three gemms; goal <= 1.3)\n",
               "  head vs its three gemms", head, head / gemms);
    }
    if (be->ops->rmsnorm_forward && be->ops->rope_forward && be->ops->swiglu_forward) {
        double qk = 2.0 * N_ * C_ * ab, nf = (double)N_ * FFN_ * ab; /* q and k; (N, F) */
        ROW("rmsnorm_forward", f_rn_fwd, 2 * act, "GB/s");
        ROW("rmsnorm_backward", f_rn_bwd, 4 * act, "GB/s");
        ROW("rope_forward", f_rope_fwd, 2 * qk, "GB/s");
        ROW("rope_backward", f_rope_bwd, 2 * qk, "GB/s");
        ROW("swiglu_forward", f_sg_fwd, 3 * nf, "GB/s");
        ROW("swiglu_backward", f_sg_bwd, 5 * nf, "GB/s");
    }
    if (be->ops->qknorm_forward) {
        double qk = 2.0 * N_ * C_ * ab; /* q and k */
        ROW("qknorm_forward", f_qn_fwd, 2 * qk, "GB/s");
        ROW("qknorm_backward", f_qn_bwd, 5 * qk, "GB/s");
    }
    ROW("adamw_update (124M)", f_adamw,
        (double)a.nparams * (2 * ab + 16 + (bf16 ? 8 : 0)), "GB/s");
    ROW("grad_norm_sq (124M)", f_norm, (double)a.nparams * ab, "GB/s");
    printf("(head_forward_backward: chunk %d tokens)\n", a.chunk);
    const char *text = getenv("CHECK_TIMING_TOKENS");
    int rc = text && *text ? time_encoder_text(&a, text, ab, &s) : 0;

    void *devs[] = {a.x, a.y, a.z, a.p, a.qkv, a.dqkv, a.w, a.bias, a.dbias, a.wte, a.wpe, a.dw,
                    a.w2, a.m, a.v, a.master, a.mean, a.rstd, a.lse, a.losses, a.buf, a.tokens,
                    a.table, a.qkrstd};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
        if (devs[i]) be->ops->mem_free(be, devs[i]);
    return rc;
}
#endif
