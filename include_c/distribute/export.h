/** @file
 * distribute — symbol visibility and attribute macros shared by every public header.
 *
 * DIST_API marks an exported function. DIST_NODISCARD asks the compiler to warn when a
 * returned dist_status_t is ignored. SWIG and bindgen see both as empty (SWIG does not
 * define `__GNUC__`; bindgen ignores the attributes). */
#ifndef DISTRIBUTE_EXPORT_H_
#define DISTRIBUTE_EXPORT_H_

#if defined(_WIN32)
#if defined(DIST_BUILDING)
#define DIST_API __declspec(dllexport)
#else
#define DIST_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define DIST_API __attribute__((visibility("default")))
#else
#define DIST_API
#endif

#if defined(__GNUC__)
#define DIST_NODISCARD __attribute__((warn_unused_result))
#else
#define DIST_NODISCARD
#endif

#ifdef __cplusplus
#define DIST_EXTERN_C_BEGIN extern "C" {
#define DIST_EXTERN_C_END }
#else
#define DIST_EXTERN_C_BEGIN
#define DIST_EXTERN_C_END
#endif

#endif /* DISTRIBUTE_EXPORT_H_ */
