/* The vDSO's own functions, found once from the ELF image the kernel maps into every
 * process (getauxval(AT_SYSINFO_EHDR)): the recording path stamps every block with the
 * coarse clock, and calling the vDSO's clock_gettime directly skips the C library's
 * wrapper (a load of its pointer, a call, the error test: ~10 instructions per block).
 * Only the exported symbol is used; the kernel's vvar data behind it is never read here
 * (its layout changes between kernels). Runs inside the target: no malloc. */
#define _GNU_SOURCE
#include "agent/platform/vdso.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include "agent/platform/elf_mod.h"

ms_clock_fn ms_clock_coarse_fn = clock_gettime;

static uint64_t ms_vdso_take(const ms_mod_view *m, ElfW(Sym) *sym, void *arg)
{
    uintptr_t a = m->base + sym->st_value;
    if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
        !ms_mod_has(m, a, 1) || *(uintptr_t *)arg)
        return 0;
    *(uintptr_t *)arg = a;
    return 1;
}

void *ms_vdso_func(const char *name)
{
    uintptr_t eh = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!eh || (eh & 4095))
        return NULL;
    /* the kernel maps the image from its first byte: the header's page is readable, and
     * only program headers inside that page are read */
    const ElfW(Ehdr) *e = (const ElfW(Ehdr) *)eh;
    if (e->e_ident[EI_MAG0] != ELFMAG0 || e->e_ident[EI_MAG1] != ELFMAG1 ||
        e->e_ident[EI_MAG2] != ELFMAG2 || e->e_ident[EI_MAG3] != ELFMAG3 ||
        e->e_phentsize != sizeof(ElfW(Phdr)) || e->e_phnum == 0 ||
        e->e_phoff > 4096 || (4096 - e->e_phoff) / sizeof(ElfW(Phdr)) < e->e_phnum)
        return NULL;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(eh + e->e_phoff);
    struct dl_phdr_info info = {.dlpi_phdr = ph, .dlpi_phnum = e->e_phnum};
    int have_base = 0;
    for (int i = 0; i < e->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
            info.dlpi_addr = eh - ph[i].p_vaddr; /* where the image's address 0 lies */
            have_base = 1;
            break;
        }
    ms_mod_view m;
    ms_mod_dyn d;
    if (!have_base || ms_mod_open(&info, &m, &d) != 1)
        return NULL;
    ms_mod_syms y = ms_mod_syms_of(&m, &d);
    uintptr_t fn = 0;
    ms_mod_each_named(&m, &y, name, ms_vdso_take, &fn);
    return (void *)fn;
}

void ms_vdso_init(void)
{
    void *f = ms_vdso_func(MS_ARCH_VDSO_CLOCK_GETTIME);
    if (f)
        ms_clock_coarse_fn = (ms_clock_fn)f;
}
