#include <zmq.h>
#include <sys/eventfd.h>
#include <errno.h>
static inline int sofa_errno(void) { return errno; }
static inline int sofa_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
