/* an5dpy's <tgmath.h>, found before pycparser-fake-libc's own (an empty stand-in).
 *
 * C99 7.22 makes each name below a type-generic macro: the call picks the float or the
 * double function from its arguments' types. pycparser cannot read glibc's implementation,
 * so each macro here renames the call to __an5dpy_tgmath_NAME instead: the frontend
 * (an5dpy/frontend/tgmath.py) sees exactly the calls that C's macros would expand, after
 * any #undef and never for a parenthesised name such as (sqrt)(x), and applies C's rule
 * itself (an5dpy.ir.tgmath_variant). The names are an5dpy.ir.TGMATH_GENERIC (a test
 * checks that they agree).
 */
#include_next <tgmath.h>

#define acos(...) __an5dpy_tgmath_acos(__VA_ARGS__)
#define acosh(...) __an5dpy_tgmath_acosh(__VA_ARGS__)
#define asin(...) __an5dpy_tgmath_asin(__VA_ARGS__)
#define asinh(...) __an5dpy_tgmath_asinh(__VA_ARGS__)
#define atan(...) __an5dpy_tgmath_atan(__VA_ARGS__)
#define atan2(...) __an5dpy_tgmath_atan2(__VA_ARGS__)
#define atanh(...) __an5dpy_tgmath_atanh(__VA_ARGS__)
#define cbrt(...) __an5dpy_tgmath_cbrt(__VA_ARGS__)
#define ceil(...) __an5dpy_tgmath_ceil(__VA_ARGS__)
#define copysign(...) __an5dpy_tgmath_copysign(__VA_ARGS__)
#define cos(...) __an5dpy_tgmath_cos(__VA_ARGS__)
#define cosh(...) __an5dpy_tgmath_cosh(__VA_ARGS__)
#define erf(...) __an5dpy_tgmath_erf(__VA_ARGS__)
#define erfc(...) __an5dpy_tgmath_erfc(__VA_ARGS__)
#define exp(...) __an5dpy_tgmath_exp(__VA_ARGS__)
#define exp2(...) __an5dpy_tgmath_exp2(__VA_ARGS__)
#define expm1(...) __an5dpy_tgmath_expm1(__VA_ARGS__)
#define fabs(...) __an5dpy_tgmath_fabs(__VA_ARGS__)
#define fdim(...) __an5dpy_tgmath_fdim(__VA_ARGS__)
#define floor(...) __an5dpy_tgmath_floor(__VA_ARGS__)
#define fma(...) __an5dpy_tgmath_fma(__VA_ARGS__)
#define fmax(...) __an5dpy_tgmath_fmax(__VA_ARGS__)
#define fmin(...) __an5dpy_tgmath_fmin(__VA_ARGS__)
#define fmod(...) __an5dpy_tgmath_fmod(__VA_ARGS__)
#define hypot(...) __an5dpy_tgmath_hypot(__VA_ARGS__)
#define ldexp(...) __an5dpy_tgmath_ldexp(__VA_ARGS__)
#define lgamma(...) __an5dpy_tgmath_lgamma(__VA_ARGS__)
#define log(...) __an5dpy_tgmath_log(__VA_ARGS__)
#define log10(...) __an5dpy_tgmath_log10(__VA_ARGS__)
#define log1p(...) __an5dpy_tgmath_log1p(__VA_ARGS__)
#define log2(...) __an5dpy_tgmath_log2(__VA_ARGS__)
#define logb(...) __an5dpy_tgmath_logb(__VA_ARGS__)
#define nearbyint(...) __an5dpy_tgmath_nearbyint(__VA_ARGS__)
#define nextafter(...) __an5dpy_tgmath_nextafter(__VA_ARGS__)
#define pow(...) __an5dpy_tgmath_pow(__VA_ARGS__)
#define remainder(...) __an5dpy_tgmath_remainder(__VA_ARGS__)
#define rint(...) __an5dpy_tgmath_rint(__VA_ARGS__)
#define round(...) __an5dpy_tgmath_round(__VA_ARGS__)
#define scalbln(...) __an5dpy_tgmath_scalbln(__VA_ARGS__)
#define scalbn(...) __an5dpy_tgmath_scalbn(__VA_ARGS__)
#define sin(...) __an5dpy_tgmath_sin(__VA_ARGS__)
#define sinh(...) __an5dpy_tgmath_sinh(__VA_ARGS__)
#define sqrt(...) __an5dpy_tgmath_sqrt(__VA_ARGS__)
#define tan(...) __an5dpy_tgmath_tan(__VA_ARGS__)
#define tanh(...) __an5dpy_tgmath_tanh(__VA_ARGS__)
#define tgamma(...) __an5dpy_tgmath_tgamma(__VA_ARGS__)
#define trunc(...) __an5dpy_tgmath_trunc(__VA_ARGS__)
