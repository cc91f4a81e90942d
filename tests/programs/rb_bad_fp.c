/* Calls malloc and free with the frame-pointer register holding values no frame record
 * can be at: the top of the address space (0xfffffffffffffff0, where fp + 16 wraps to 0),
 * just below it, and misaligned or small values. Code built without frame pointers may
 * leave any value there (python3 did). A walk of frame records must stop, not read it.
 * Prints one line per value; exits 0.
 * usage: rb_bad_fp [env]
 *   env: the frame pointer points into the text of an environment variable (RB_TEXT) at
 *   the top of the main thread's stack: a walk must not take text for return addresses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *rb_malloc_with_fp(size_t n, uintptr_t fp);
void rb_free_with_fp(void *p, uintptr_t fp);

#if defined(__x86_64__)
/* with CFI, as a compiler gives code without frame pointers: the DWARF walks are right */
__asm__(".text\n"
        ".globl rb_malloc_with_fp\n"
        "rb_malloc_with_fp:\n"
        "  .cfi_startproc\n"
        "  push %rbp\n" /* entry: rsp = 8 mod 16; now aligned for the call */
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  mov %rsi, %rbp\n"
        "  call malloc@PLT\n"
        "  pop %rbp\n"
        "  .cfi_restore %rbp\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".globl rb_free_with_fp\n"
        "rb_free_with_fp:\n"
        "  .cfi_startproc\n"
        "  push %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  mov %rsi, %rbp\n"
        "  call free@PLT\n"
        "  pop %rbp\n"
        "  .cfi_restore %rbp\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        "  .cfi_endproc\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl rb_malloc_with_fp\n"
        "rb_malloc_with_fp:\n"
        "  .cfi_startproc\n"
        "  stp x29, x30, [sp, #-16]!\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset x29, -16\n"
        "  .cfi_offset x30, -8\n"
        "  mov x29, x1\n"
        "  bl malloc\n"
        "  ldp x29, x30, [sp], #16\n"
        "  .cfi_restore x30\n"
        "  .cfi_restore x29\n"
        "  .cfi_def_cfa_offset 0\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".globl rb_free_with_fp\n"
        "rb_free_with_fp:\n"
        "  .cfi_startproc\n"
        "  stp x29, x30, [sp, #-16]!\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset x29, -16\n"
        "  .cfi_offset x30, -8\n"
        "  mov x29, x1\n"
        "  bl free\n"
        "  ldp x29, x30, [sp], #16\n"
        "  .cfi_restore x30\n"
        "  .cfi_restore x29\n"
        "  .cfi_def_cfa_offset 0\n"
        "  ret\n"
        "  .cfi_endproc\n");
#else
#error rb_bad_fp: no assembly for this CPU
#endif

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "env") == 0) {
        const char *t = getenv("RB_TEXT");
        if (!t || strlen(t) < 64)
            return 2;
        uintptr_t fp = ((uintptr_t)t + 8) & ~(uintptr_t)7;
        void *p = rb_malloc_with_fp(4000, fp); /* kept: its stack is in the snapshot */
        printf("fp in the environment: %s\n", p ? "ok" : "no memory");
        return p ? 0 : 2;
    }
    static const uintptr_t fps[] = {
        (uintptr_t)0xfffffffffffffff0ull, (uintptr_t)0xfffffffffffffff8ull,
        (uintptr_t)0xffffffffffffffe8ull, (uintptr_t)0xffffffffffffff00ull,
        (uintptr_t)0x8000000000000000ull, (uintptr_t)0x7ffffffffff0ull, 8, 0, 0x1001,
    };
    for (size_t i = 0; i < sizeof fps / sizeof fps[0]; i++) {
        for (int k = 0; k < 100; k++) {
            void *p = rb_malloc_with_fp(24 + (size_t)k, fps[i]);
            if (!p)
                return 2;
            rb_free_with_fp(p, fps[i]);
        }
        printf("fp %#lx: ok\n", (unsigned long)fps[i]);
    }
    return 0;
}
