#include <zmq.h>
#include <sys/eventfd.h>
#include <errno.h>
static inline int sofa_errno(void) { return errno; }
