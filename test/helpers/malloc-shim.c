/*
 * A malloc stand-in for redis-server under libfaketime (see faketime.ts): glibc's allocator in
 * place of the jemalloc Debian's redis-server links, whose start calls clock_gettime while
 * libfaketime is not ready yet and hangs (libfaketime issues #130, #327, #478). Preloaded
 * before libfaketime, so every allocation, jemalloc's own lookups included, goes to glibc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t count, size_t n) { return __libc_calloc(count, n); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
void *aligned_alloc(size_t align, size_t n) { return __libc_memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
/* Redis sizes its allocations with malloc_usable_size: glibc's, not jemalloc's. */
size_t malloc_usable_size(void *p) {
  static size_t (*glibc)(void *);
  if (!glibc) glibc = (size_t (*)(void *))dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "malloc_usable_size");
  return glibc(p);
}
