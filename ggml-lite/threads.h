/* threads.h - how many threads to run, from the machine's topology. */
#ifndef QLM_GL_THREADS_H
#define QLM_GL_THREADS_H

/* Physical cores (hwloc), at least 1; hyperthreads do not help the
 * memory-bound decode loop and hurt it when oversubscribed. */
int gl_physical_cores(void);
/* Makes later parallel ops use n threads. */
void gl_set_threads(int n);

#endif
