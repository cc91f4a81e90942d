/* Test helper: describes this very test executable as a snapshot module (load bias, PT_LOAD
 * segments, GNU build-id), for tests that symbolize their own return addresses. Test-only. */
#ifndef MS_TEST_SELF_MODULE_H
#define MS_TEST_SELF_MODULE_H

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot.h"

/* dl_iterate_phdr callback: fills the ms_module `data` from the main program (the first
 * object, with an empty name) and stops there. */
static int ms_test_self_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0])
        return 0; /* the main program comes first with an empty name */
    ms_module *m = data;
    m->load_bias = info->dlpi_addr;
    m->segs = calloc(info->dlpi_phnum, sizeof *m->segs);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            ms_snap_segment *g = &m->segs[m->nseg++];
            g->vaddr = ph->p_vaddr;
            g->memsz = ph->p_memsz;
            g->offset = ph->p_offset;
            g->flags = ph->p_flags;
        } else if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            const uint8_t *end = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= end) {
                const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                const uint8_t *name = p + sizeof *nh;
                const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
                if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                    !memcmp(name, "GNU", 4) && nh->n_descsz <= sizeof m->build_id) {
                    memcpy(m->build_id, desc, nh->n_descsz);
                    m->build_id_len = nh->n_descsz;
                }
                p = desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    return 1;
}

#endif
