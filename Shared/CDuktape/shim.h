// Duktape (Debian's duktape-dev), and its API's macros as functions Swift can call.
#include <duktape.h>

/// A heap with Duktape's own allocator and `fatal` for what it cannot throw.
static inline duk_context *sofa_duk_create(duk_fatal_function fatal) {
    return duk_create_heap(NULL, NULL, NULL, NULL, fatal);
}

/// Evaluates `source` (a program); 0 when it ran, else its error is on the stack.
static inline duk_int_t sofa_duk_eval(duk_context *ctx, const char *source) {
    return duk_peval_string(ctx, source);
}

/// Calls the global function `name` with one string argument; 0 when it returned, else the
/// error is on the stack (where the result is otherwise).
static inline duk_int_t sofa_duk_call1(duk_context *ctx, const char *name, const char *argument) {
    duk_get_global_string(ctx, name);
    duk_push_string(ctx, argument);
    return duk_pcall(ctx, 1);
}

/// The value on top of the stack as a string (valid until it is popped).
static inline const char *sofa_duk_top_string(duk_context *ctx) {
    return duk_safe_to_string(ctx, -1);
}

static inline void sofa_duk_destroy(duk_context *ctx) {
    duk_destroy_heap(ctx);
}

static inline void sofa_duk_pop(duk_context *ctx) {
    duk_pop(ctx);
}
