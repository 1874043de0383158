/* Thread-locals read on every call: the initial-exec model reads them at a fixed offset from
 * the thread pointer instead of calling __tls_get_addr (4-5 calls per small collective).
 * Such variables come from the static TLS block, of which glibc keeps only a few hundred
 * bytes spare for libraries loaded with dlopen (a plugin or a language extension linked to
 * nodecoll): only the small, hot ones use it, so that loading still works. */
#ifndef NC_HOT_TLS_H
#define NC_HOT_TLS_H

#define NC_HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

#endif
