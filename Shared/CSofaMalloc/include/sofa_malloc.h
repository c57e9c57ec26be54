// How glibc's allocator is set up in a Sofa process (see sofa_malloc.c).
#ifndef SOFA_MALLOC_H
#define SOFA_MALLOC_H

/// Left as glibc sets it (a process that is not one of Sofa's executables, such as a test runner).
#define SOFA_MALLOC_UNTUNED 0
/// Sofa's settings for many small blocks and large message buffers.
#define SOFA_MALLOC_GENERAL 1
/// The general settings, plus those of a process that streams blob chunks.
#define SOFA_MALLOC_LARGE_BUFFERS 2

/// The profile this process's allocator was set up with, before `main`.
int sofa_malloc_profile(void);

/// Gives the free pages inside the heap back to the system (glibc's `malloc_trim(0)`); 1 if any
/// were given back.
int sofa_malloc_release_free(void);

#endif
