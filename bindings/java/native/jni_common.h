/* Shared helpers of the Java binding's JNI glue (hand-written and generated parts). */
#ifndef DIST_JAVA_JNI_COMMON_H_
#define DIST_JAVA_JNI_COMMON_H_

#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"
#include "distribute/dlpack_interop.h"

/* The one place a dist_status_t becomes a Java exception: a DistributeException with the
 * code and this thread's dist_last_error_message(), read in the same native call. */
void dj_throw_status(JNIEnv* env, dist_status_t status);
/* Throws java.lang.IllegalArgumentException (bad input caught before the library). */
void dj_throw_illegal(JNIEnv* env, const char* message);
/* A Java string from a C string (NULL -> null). */
jstring dj_string(JNIEnv* env, const char* s);
/* Modified UTF-8 of a Java string, or NULL for null; release with dj_utf_release. */
const char* dj_utf(JNIEnv* env, jstring s);
void dj_utf_release(JNIEnv* env, jstring s, const char* c);

#endif
