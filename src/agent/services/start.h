/* memsight_start() (start.c): what init.c needs to know of a start asked by the program
 * (options given as an argument; initialisation left to memsight_start when dlopen'ed).
 * Runs inside the target: no malloc. */
#ifndef MS_START_H
#define MS_START_H

#include "agent/services/services.h"

/* Options given to memsight_start(); NULL: read MEMSIGHT_OPTIONS. Read by ms_init. */
extern const char *ms_start_options MS_INTERNAL;
/* What the warnings about bad options call them: "memsight_start options", or
 * "memsight_attach options" when an attach started the agent. */
extern const char *ms_start_options_source MS_INTERNAL;
/* 1 when the agent was dlopen'ed (the program's malloc is not the agent's): the
 * constructor then does not initialise, memsight_start() does and installs GOT hooks. */
int ms_start_deferred(void) MS_INTERNAL;
/* Set by memsight_start() before it initialises a dlopen'ed agent: the real functions
 * are then looked up from the program's scope (RTLD_DEFAULT), not after the agent. */
extern int ms_start_deferred_mode MS_INTERNAL;

#endif
