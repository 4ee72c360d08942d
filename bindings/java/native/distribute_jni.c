/* The hand-written part of the Java binding's JNI glue: the status -> exception mapping,
 * thread attachment, callbacks (every callback kind of the C API) and the functions that
 * take arrays or raw memory. Adds no logic of its own beyond the checks every binding
 * makes before it reads a tensor's memory (the dtype of a typed read, host memory). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "jni_common.h"

static JavaVM* g_vm;
static jclass g_exception_class;  /* org.distribute.DistributeException */
static jmethodID g_exception_ctor;
static jclass g_callbacks_class;  /* org.distribute.Callbacks */
static jmethodID g_cb_replica, g_cb_value, g_cb_update, g_cb_merge, g_cb_generator, g_cb_map,
    g_cb_dataset, g_cb_release, g_cb_registered_update, g_cb_closure;
static jclass g_string_class; /* java.lang.String, for the hyperparameter names of callbacks */
static pthread_key_t g_detach_key;

/* Library threads are attached once (as daemons, so a strategy left open does not keep the
 * JVM alive) and stay attached; they are detached when the thread exits. */
static void detach_at_thread_exit(void* unused) {
  (void)unused;
  if (g_vm) (*g_vm)->DetachCurrentThread(g_vm);
}

static JNIEnv* dj_env(void) {
  JNIEnv* env = NULL;
  jint rc = (*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"dist-native", NULL};
  if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, &args) != JNI_OK) return NULL;
  pthread_setspecific(g_detach_key, (void*)1);
  return env;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env;
  g_vm = vm;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  if (pthread_key_create(&g_detach_key, detach_at_thread_exit) != 0) return JNI_ERR;
  jclass c = (*env)->FindClass(env, "org/distribute/DistributeException");
  if (!c) return JNI_ERR;
  g_exception_class = (jclass)(*env)->NewGlobalRef(env, c);
  g_exception_ctor = (*env)->GetMethodID(env, c, "<init>", "(ILjava/lang/String;)V");
  c = (*env)->FindClass(env, "org/distribute/Callbacks");
  if (!c) return JNI_ERR;
  g_callbacks_class = (jclass)(*env)->NewGlobalRef(env, c);
  g_cb_replica = (*env)->GetStaticMethodID(env, c, "replica", "(Ljava/lang/Object;J[JI)[J");
  g_cb_value = (*env)->GetStaticMethodID(env, c, "value", "(Ljava/lang/Object;II)[J");
  g_cb_update = (*env)->GetStaticMethodID(env, c, "update", "(Ljava/lang/Object;J[J)[J");
  g_cb_merge = (*env)->GetStaticMethodID(env, c, "merge", "(Ljava/lang/Object;J[J)[J");
  g_cb_generator = (*env)->GetStaticMethodID(env, c, "generator", "(Ljava/lang/Object;JI)[J");
  g_cb_map = (*env)->GetStaticMethodID(env, c, "map", "(Ljava/lang/Object;[JI)[J");
  g_cb_dataset = (*env)->GetStaticMethodID(env, c, "dataset", "(Ljava/lang/Object;J)[J");
  g_cb_release = (*env)->GetStaticMethodID(env, c, "release", "(Ljava/lang/Object;)V");
  g_cb_registered_update = (*env)->GetStaticMethodID(env, c, "registeredUpdate",
                                                     "(Ljava/lang/Object;[J[J[Ljava/lang/String;[D)[J");
  g_cb_closure = (*env)->GetStaticMethodID(env, c, "closure", "(Ljava/lang/Object;JJ)[J");
  if (!g_cb_closure) return JNI_ERR;
  if (!g_exception_ctor || !g_cb_replica || !g_cb_value || !g_cb_update || !g_cb_merge ||
      !g_cb_generator || !g_cb_map || !g_cb_dataset || !g_cb_release || !g_cb_registered_update)
    return JNI_ERR;
  c = (*env)->FindClass(env, "java/lang/String");
  if (!c) return JNI_ERR;
  g_string_class = (jclass)(*env)->NewGlobalRef(env, c);
  return JNI_VERSION_1_8;
}

void dj_throw_status(JNIEnv* env, dist_status_t status) {
  const char* msg = dist_last_error_message();
  jstring jmsg = (*env)->NewStringUTF(env, msg ? msg : "");
  jobject ex = (*env)->NewObject(env, g_exception_class, g_exception_ctor, (jint)status, jmsg);
  if (ex) (*env)->Throw(env, (jthrowable)ex);
}

void dj_throw_illegal(JNIEnv* env, const char* message) {
  jclass c = (*env)->FindClass(env, "java/lang/IllegalArgumentException");
  if (c) (*env)->ThrowNew(env, c, message);
}

jstring dj_string(JNIEnv* env, const char* s) { return s ? (*env)->NewStringUTF(env, s) : NULL; }

const char* dj_utf(JNIEnv* env, jstring s) {
  return s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
}

void dj_utf_release(JNIEnv* env, jstring s, const char* c) {
  if (s && c) (*env)->ReleaseStringUTFChars(env, s, c);
}

/* ---- Arrays ---- */

/* Handles from a long[] (NULL for null); free with free(). */
static const dist_value_t** handles(JNIEnv* env, jlongArray a, int32_t* n) {
  *n = a ? (*env)->GetArrayLength(env, a) : 0;
  const dist_value_t** out = (const dist_value_t**)calloc((size_t)(*n ? *n : 1), sizeof(void*));
  if (!out) return NULL;
  if (*n) {
    jlong* e = (*env)->GetLongArrayElements(env, a, NULL);
    for (int32_t i = 0; i < *n; i++) out[i] = (const dist_value_t*)(intptr_t)e[i];
    (*env)->ReleaseLongArrayElements(env, a, e, JNI_ABORT);
  }
  return out;
}

static jlongArray to_longs(JNIEnv* env, dist_value_t* const* vals, int32_t n) {
  jlongArray a = (*env)->NewLongArray(env, n);
  if (!a || n == 0) return a;
  jlong small[16];
  jlong* e = n <= 16 ? small : (jlong*)malloc(sizeof(jlong) * (size_t)n);
  if (!e) return a;
  for (int32_t i = 0; i < n; i++) e[i] = (jlong)(intptr_t)vals[i];
  (*env)->SetLongArrayRegion(env, a, 0, n, e);
  if (e != small) free(e);
  return a;
}

/* Callback arguments: null for none (the Java side substitutes an empty array). */
static jlongArray to_longs_const(JNIEnv* env, const dist_value_t* const* vals, int32_t n) {
  return n == 0 ? NULL : to_longs(env, (dist_value_t* const*)vals, n);
}

/* C strings from a String[] (NULL for null). */
typedef struct {
  int32_t n;
  const char** c;
  jstring* j;
} strings;

static int strings_get(JNIEnv* env, jobjectArray a, strings* s) {
  s->n = a ? (*env)->GetArrayLength(env, a) : 0;
  s->c = (const char**)calloc((size_t)(s->n ? s->n : 1), sizeof(char*));
  s->j = (jstring*)calloc((size_t)(s->n ? s->n : 1), sizeof(jstring));
  if (!s->c || !s->j) return 0;
  for (int32_t i = 0; i < s->n; i++) {
    s->j[i] = (jstring)(*env)->GetObjectArrayElement(env, a, i);
    if (!s->j[i]) {
      dj_throw_illegal(env, "null string in array");
      return 0;
    }
    s->c[i] = dj_utf(env, s->j[i]);
  }
  return 1;
}

static void strings_free(JNIEnv* env, strings* s) {
  for (int32_t i = 0; i < s->n && s->j; i++) {
    if (s->j[i]) {
      dj_utf_release(env, s->j[i], s->c[i]);
      (*env)->DeleteLocalRef(env, s->j[i]);
    }
  }
  free(s->c);
  free(s->j);
}

/* ---- Callbacks ----
 * user_data is a global reference to the Java-side state (the lambda and the first
 * Throwable); the Java dispatchers in Callbacks catch every Throwable and answer a long[]
 * whose element 0 is the status, the rest the handles handed to the library. */

static jlongArray call_java(JNIEnv* env, jmethodID m, ...) {
  va_list ap;
  va_start(ap, m);
  jlongArray r = (jlongArray)(*env)->CallStaticObjectMethodV(env, g_callbacks_class, m, ap);
  va_end(ap);
  if ((*env)->ExceptionCheck(env)) { /* only on JVM errors: the dispatchers catch the rest */
    (*env)->ExceptionClear(env);
    return NULL;
  }
  return r;
}

/* Copies r[1 + i] into outs[i] (i < n) and returns r[0] (the status). */
static dist_status_t unpack(JNIEnv* env, jlongArray r, dist_value_t** outs, int32_t n) {
  if (!r) return DIST_INTERNAL;
  jsize len = (*env)->GetArrayLength(env, r);
  jlong small[16];
  jlong* e = len <= 16 ? small : (jlong*)malloc(sizeof(jlong) * (size_t)len);
  dist_status_t st = DIST_INTERNAL;
  if (e && len > 0) {
    (*env)->GetLongArrayRegion(env, r, 0, len, e);
    st = (dist_status_t)e[0];
    for (int32_t i = 0; i < n && 1 + i < len; i++) outs[i] = (dist_value_t*)(intptr_t)e[1 + i];
  }
  if (e != small) free(e);
  (*env)->DeleteLocalRef(env, r);
  return st;
}

static dist_status_t replica_tramp(dist_context_t* ctx, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray jargs = to_longs_const(env, args, num_args);
  jlongArray r = call_java(env, g_cb_replica, (jobject)ud, (jlong)(intptr_t)ctx, jargs,
                           (jint)num_results);
  if (jargs) (*env)->DeleteLocalRef(env, jargs);
  return unpack(env, r, results, num_results);
}

static dist_status_t value_tramp(int32_t replica_id, int32_t num_replicas, dist_value_t** out,
                                 void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray r = call_java(env, g_cb_value, (jobject)ud, (jint)replica_id, (jint)num_replicas);
  return unpack(env, r, out, 1);
}

static dist_status_t update_tramp(dist_value_t* variable, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** out, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray jargs = to_longs_const(env, args, num_args);
  jlongArray r = call_java(env, g_cb_update, (jobject)ud, (jlong)(intptr_t)variable, jargs);
  if (jargs) (*env)->DeleteLocalRef(env, jargs);
  return unpack(env, r, out, 1);
}

static dist_status_t merge_tramp(dist_strategy_t* strategy, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** out, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray jargs = to_longs_const(env, args, num_args);
  jlongArray r = call_java(env, g_cb_merge, (jobject)ud, (jlong)(intptr_t)strategy, jargs);
  if (jargs) (*env)->DeleteLocalRef(env, jargs);
  return unpack(env, r, out, 1);
}

static dist_status_t generator_tramp(int64_t index, dist_value_t** components,
                                     int32_t num_components, int32_t* out_end, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray r = call_java(env, g_cb_generator, (jobject)ud, (jlong)index, (jint)num_components);
  if (!r) return DIST_INTERNAL;
  /* r = {status, end, components...} */
  dist_value_t* tmp[1 + 64];
  dist_value_t** buf = num_components < 64 ? tmp
                                           : (dist_value_t**)calloc((size_t)num_components + 1,
                                                                    sizeof(void*));
  if (!buf) return DIST_RESOURCE_EXHAUSTED;
  memset(buf, 0, sizeof(void*) * (size_t)(num_components + 1));
  dist_status_t st = unpack(env, r, buf, num_components + 1);
  *out_end = (int32_t)(intptr_t)buf[0];
  for (int32_t i = 0; i < num_components; i++) components[i] = buf[1 + i];
  if (buf != tmp) free(buf);
  return st;
}

static dist_status_t map_tramp(const dist_value_t* const* inputs, int32_t num_inputs,
                               dist_value_t** outputs, int32_t num_outputs, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray jargs = to_longs_const(env, inputs, num_inputs);
  jlongArray r = call_java(env, g_cb_map, (jobject)ud, jargs, (jint)num_outputs);
  if (jargs) (*env)->DeleteLocalRef(env, jargs);
  return unpack(env, r, outputs, num_outputs);
}

static dist_status_t dataset_tramp(const dist_input_context_t* ictx, dist_dataset_t** out,
                                   void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  jlongArray r = call_java(env, g_cb_dataset, (jobject)ud, (jlong)(intptr_t)ictx);
  dist_value_t* v = NULL;
  dist_status_t st = unpack(env, r, &v, 1);
  *out = (dist_dataset_t*)v;
  return st;
}

/* A closure function, called on a worker server's thread for the coordinator. */
static dist_status_t closure_tramp(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                   dist_value_t** out_result, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  if ((*env)->PushLocalFrame(env, 8) != 0) {
    (*env)->ExceptionClear(env);
    return DIST_RESOURCE_EXHAUSTED;
  }
  jlongArray r = call_java(env, g_cb_closure, (jobject)ud, (jlong)(intptr_t)strategy, (jlong)(intptr_t)args);
  dist_status_t st = unpack(env, r, out_result, 1);
  (*env)->PopLocalFrame(env, NULL);
  return st;
}

/* A registered update function, called on whichever thread applies the update (a ps
 * task's server thread, or the caller's in local mode). The thread may stay attached for
 * long, so every local reference made here is dropped with the frame. */
static dist_status_t registered_update_tramp(dist_value_t* const* variables, int32_t num_variables,
                                             const dist_value_t* const* args, int32_t num_args,
                                             const char* const* names, const double* values,
                                             int32_t num_hyperparameters, void* ud) {
  JNIEnv* env = dj_env();
  if (!env) return DIST_INTERNAL;
  if ((*env)->PushLocalFrame(env, 8 + num_hyperparameters) != 0) {
    (*env)->ExceptionClear(env);
    return DIST_RESOURCE_EXHAUSTED;
  }
  dist_status_t st = DIST_RESOURCE_EXHAUSTED;
  jlongArray jvariables = to_longs(env, variables, num_variables);
  jlongArray jargs = to_longs_const(env, args, num_args);
  jobjectArray jnames = (*env)->NewObjectArray(env, num_hyperparameters, g_string_class, NULL);
  jdoubleArray jvalues = (*env)->NewDoubleArray(env, num_hyperparameters);
  int made = jvariables && jnames && jvalues;
  for (int32_t i = 0; made && i < num_hyperparameters; i++) {
    jstring name = (*env)->NewStringUTF(env, names[i]);
    made = name != NULL;
    if (made) (*env)->SetObjectArrayElement(env, jnames, i, name);
  }
  if (made && num_hyperparameters > 0) {
    (*env)->SetDoubleArrayRegion(env, jvalues, 0, num_hyperparameters, values);
  }
  if (made) {
    jlongArray r = call_java(env, g_cb_registered_update, (jobject)ud, jvariables, jargs, jnames, jvalues);
    st = unpack(env, r, NULL, 0);
  } else {
    (*env)->ExceptionClear(env);
  }
  (*env)->PopLocalFrame(env, NULL);
  return st;
}

/* free_fn: drops the global reference to the Java state (any thread). */
static void free_tramp(void* ud) {
  JNIEnv* env = dj_env();
  if (env && ud) (*env)->DeleteGlobalRef(env, (jobject)ud);
}

/* release of wrapped memory: runs the Java release callback, then drops the reference
 * that kept the buffer (or array holder) alive. */
static void release_tramp(void* data, void* ud) {
  (void)data;
  JNIEnv* env = dj_env();
  if (!env || !ud) return;
  (*env)->CallStaticVoidMethod(env, g_callbacks_class, g_cb_release, (jobject)ud);
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  (*env)->DeleteGlobalRef(env, (jobject)ud);
}

#define NATIVE(ret, name) JNIEXPORT ret JNICALL Java_org_distribute_NativeHand_##name
#define CHECK_OR(st, ...)         \
  if ((st) != DIST_OK) {          \
    dj_throw_status(env, (st));   \
    return __VA_ARGS__;           \
  }

/* ---- Strategies ---- */

NATIVE(jlong, createMirrored)(JNIEnv* env, jclass cls, jobjectArray devices, jlong ops) {
  (void)cls;
  strings s;
  dist_strategy_t* out = NULL;
  if (!strings_get(env, devices, &s)) { strings_free(env, &s); return 0; }
  dist_status_t st = dist_strategy_create_mirrored(devices ? s.c : NULL, s.n,
                                                   (const dist_cross_device_ops_t*)(intptr_t)ops, &out);
  strings_free(env, &s);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

NATIVE(jlong, clusterFromSlurm)(JNIEnv* env, jclass cls, jobjectArray jobs, jintArray counts, jint port_base,
                                jint tasks_per_node) {
  (void)cls;
  strings s;
  dist_cluster_t* out = NULL;
  jint* c = NULL;
  if (!strings_get(env, jobs, &s)) { strings_free(env, &s); return 0; }
  if (counts && (*env)->GetArrayLength(env, counts) != s.n) {
    strings_free(env, &s);
    dj_throw_illegal(env, "Cluster.fromSlurm: as many task counts as jobs are needed");
    return 0;
  }
  if (counts) c = (*env)->GetIntArrayElements(env, counts, NULL);
  dist_status_t st = dist_cluster_from_slurm(jobs ? s.c : NULL, (const int32_t*)c, s.n, port_base,
                                             tasks_per_node, &out);
  if (c) (*env)->ReleaseIntArrayElements(env, counts, c, JNI_ABORT);
  strings_free(env, &s);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

NATIVE(jlong, createCentralStorage)(JNIEnv* env, jclass cls, jobjectArray devices,
                                    jstring parameter_device) {
  (void)cls;
  strings s;
  dist_strategy_t* out = NULL;
  if (!strings_get(env, devices, &s)) { strings_free(env, &s); return 0; }
  const char* p = dj_utf(env, parameter_device);
  dist_status_t st = dist_strategy_create_central_storage(devices ? s.c : NULL, s.n, p, &out);
  dj_utf_release(env, parameter_device, p);
  strings_free(env, &s);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* state: the Java RunState (lambda + first Throwable); results: new handles, the caller's. */
NATIVE(jlongArray, run)(JNIEnv* env, jclass cls, jlong strategy, jobject state, jlongArray args,
                        jint num_results) {
  (void)cls;
  int32_t n;
  if (num_results < 0) { dj_throw_illegal(env, "num_results < 0"); return NULL; }
  const dist_value_t** a = handles(env, args, &n);
  dist_value_t** results = (dist_value_t**)calloc((size_t)(num_results ? num_results : 1), sizeof(void*));
  if (!a || !results) { free(a); free(results); dj_throw_status(env, DIST_RESOURCE_EXHAUSTED); return NULL; }
  /* a global reference: the replica threads cannot use this thread's local one */
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_strategy_run((dist_strategy_t*)(intptr_t)strategy, replica_tramp,
                                       (void*)ref, a, n, results, num_results);
  (*env)->DeleteGlobalRef(env, ref);
  free(a);
  if (st != DIST_OK) {
    free(results);
    dj_throw_status(env, st);
    return NULL;
  }
  jlongArray r = to_longs(env, results, num_results);
  free(results);
  return r;
}

NATIVE(jlong, distributeValuesFromFunction)(JNIEnv* env, jclass cls, jlong strategy, jobject state) {
  (void)cls;
  dist_value_t* out = NULL;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_strategy_distribute_values_from_function(
      (dist_strategy_t*)(intptr_t)strategy, value_tramp, (void*)ref, &out);
  (*env)->DeleteGlobalRef(env, ref);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

NATIVE(jlongArray, batchReduceTo)(JNIEnv* env, jclass cls, jlong strategy, jint op,
                                  jlongArray values, jlongArray destinations) {
  (void)cls;
  int32_t n, m;
  const dist_value_t** v = handles(env, values, &n);
  const dist_value_t** d = handles(env, destinations, &m);
  dist_value_t** outs = (dist_value_t**)calloc((size_t)(n ? n : 1), sizeof(void*));
  if (n != m) {
    free(v); free(d); free(outs);
    dj_throw_illegal(env, "values and destinations differ in length");
    return NULL;
  }
  dist_status_t st = dist_strategy_batch_reduce_to((dist_strategy_t*)(intptr_t)strategy, op, v, d,
                                                   n, outs);
  free(v);
  free(d);
  if (st != DIST_OK) { free(outs); dj_throw_status(env, st); return NULL; }
  jlongArray r = to_longs(env, outs, n);
  free(outs);
  return r;
}

NATIVE(jlong, update)(JNIEnv* env, jclass cls, jlong strategy, jlong variable, jobject state,
                      jlongArray args, jint group) {
  (void)cls;
  int32_t n;
  const dist_value_t** a = handles(env, args, &n);
  dist_value_t* out = NULL;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_strategy_update((dist_strategy_t*)(intptr_t)strategy,
                                          (dist_value_t*)(intptr_t)variable, update_tramp,
                                          (void*)ref, a, n, group, &out);
  (*env)->DeleteGlobalRef(env, ref);
  free(a);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* ---- Replica context ---- */

NATIVE(jlongArray, batchAllReduce)(JNIEnv* env, jclass cls, jlong ctx, jint op, jlongArray values) {
  (void)cls;
  int32_t n;
  const dist_value_t** v = handles(env, values, &n);
  dist_value_t** outs = (dist_value_t**)calloc((size_t)(n ? n : 1), sizeof(void*));
  dist_status_t st = dist_context_batch_all_reduce((dist_context_t*)(intptr_t)ctx, op, v, n, outs);
  free(v);
  if (st != DIST_OK) { free(outs); dj_throw_status(env, st); return NULL; }
  jlongArray r = to_longs(env, outs, n);
  free(outs);
  return r;
}

NATIVE(jlong, mergeCall)(JNIEnv* env, jclass cls, jlong ctx, jobject state, jlongArray args) {
  (void)cls;
  int32_t n;
  const dist_value_t** a = handles(env, args, &n);
  dist_value_t* out = NULL;
  jobject ref = (*env)->NewGlobalRef(env, state); /* merge_fn may run on another replica's thread */
  dist_status_t st = dist_context_merge_call((dist_context_t*)(intptr_t)ctx, merge_tramp,
                                             (void*)ref, a, n, &out);
  (*env)->DeleteGlobalRef(env, ref);
  free(a);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* ---- Values ---- */

NATIVE(jlong, createPerReplica)(JNIEnv* env, jclass cls, jlongArray components, jboolean mirrored) {
  (void)cls;
  int32_t n;
  const dist_value_t** c = handles(env, components, &n);
  dist_value_t* out = NULL;
  dist_status_t st = mirrored ? dist_value_create_mirrored(c, n, &out)
                              : dist_value_create_per_replica(c, n, &out);
  free(c);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* ---- Tensors ---- */

static int shape_get(JNIEnv* env, jlongArray shape, int64_t* dims, int32_t* rank) {
  *rank = shape ? (*env)->GetArrayLength(env, shape) : 0;
  if (*rank > DIST_MAX_RANK) {
    dj_throw_illegal(env, "rank above DIST_MAX_RANK");
    return 0;
  }
  if (*rank) (*env)->GetLongArrayRegion(env, shape, 0, *rank, (jlong*)dims);
  return 1;
}

/* From a direct ByteBuffer (address + offset) or a primitive array (copied straight from
 * the pinned array into the tensor: one copy, the library's). */
NATIVE(jlong, tensorCreate)(JNIEnv* env, jclass cls, jint dtype, jlongArray shape, jobject data,
                            jlong offset, jlong byte_size, jstring device) {
  (void)cls;
  int64_t dims[DIST_MAX_RANK];
  int32_t rank;
  if (!shape_get(env, shape, dims, &rank)) return 0;
  void* ptr = NULL;
  int critical = 0;
  if (data) {
    ptr = (*env)->GetDirectBufferAddress(env, data);
    if (!ptr) {
      jclass buf = (*env)->FindClass(env, "java/nio/Buffer");
      if ((*env)->IsInstanceOf(env, data, buf)) {
        dj_throw_illegal(env, "tensor data must be a direct buffer or a primitive array");
        return 0;
      }
      critical = 1;
    } else {
      ptr = (char*)ptr + offset;
    }
  }
  const char* dev = dj_utf(env, device);
  dist_value_t* out = NULL;
  dist_status_t st;
  if (critical) {
    void* a = (*env)->GetPrimitiveArrayCritical(env, (jarray)data, NULL);
    st = dist_tensor_create(dtype, dims, rank, a ? (char*)a + offset : NULL, (size_t)byte_size,
                            dev, &out);
    (*env)->ReleasePrimitiveArrayCritical(env, (jarray)data, a, JNI_ABORT);
  } else {
    st = dist_tensor_create(dtype, dims, rank, ptr, (size_t)byte_size, dev, &out);
  }
  dj_utf_release(env, device, dev);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* Borrows a direct ByteBuffer without copying; `keep` (a Java object holding the buffer and
 * the release lambda) stays referenced until the library's release callback. */
NATIVE(jlong, tensorWrap)(JNIEnv* env, jclass cls, jint dtype, jlongArray shape, jobject buffer,
                          jstring device, jobject keep) {
  (void)cls;
  int64_t dims[DIST_MAX_RANK];
  int32_t rank;
  if (!shape_get(env, shape, dims, &rank)) return 0;
  void* ptr = buffer ? (*env)->GetDirectBufferAddress(env, buffer) : NULL;
  if (buffer && !ptr) {
    dj_throw_illegal(env, "Tensor.wrap needs a direct ByteBuffer");
    return 0;
  }
  jlong cap = buffer ? (*env)->GetDirectBufferCapacity(env, buffer) : 0;
  jobject ref = (*env)->NewGlobalRef(env, keep);
  const char* dev = dj_utf(env, device);
  dist_value_t* out = NULL;
  dist_status_t st = dist_tensor_wrap(dtype, dims, rank, ptr, (size_t)cap, dev, release_tramp,
                                      ref, &out);
  dj_utf_release(env, device, dev);
  if (st != DIST_OK) {
    (*env)->DeleteGlobalRef(env, ref);
    dj_throw_status(env, st);
    return 0;
  }
  return (jlong)(intptr_t)out;
}

NATIVE(jlongArray, tensorShape)(JNIEnv* env, jclass cls, jlong tensor) {
  (void)cls;
  int32_t rank = 0;
  int64_t dims[DIST_MAX_RANK];
  dist_status_t st = dist_tensor_rank((const dist_value_t*)(intptr_t)tensor, &rank);
  CHECK_OR(st, NULL);
  st = dist_tensor_shape((const dist_value_t*)(intptr_t)tensor, dims, DIST_MAX_RANK);
  CHECK_OR(st, NULL);
  jlongArray r = (*env)->NewLongArray(env, rank);
  if (r && rank) (*env)->SetLongArrayRegion(env, r, 0, rank, (const jlong*)dims);
  return r;
}

/* Throws a DistributeException with `code` and `message` (a check made by the binding,
 * not the library: dist_last_error_message() is not this failure's). */
static void throw_code(JNIEnv* env, dist_status_t code, const char* message) {
  jstring jmsg = (*env)->NewStringUTF(env, message);
  if (!jmsg) return;
  jobject ex = (*env)->NewObject(env, g_exception_class, g_exception_ctor, (jint)code, jmsg);
  if (ex) (*env)->Throw(env, (jthrowable)ex);
}

/* The Java method reading a tensor of `dtype` (0: the byte reads). */
static const char* read_name(dist_dtype_t dtype) {
  switch (dtype) {
    case DIST_FLOAT32: return "toFloatArray";
    case DIST_FLOAT64: return "toDoubleArray";
    case DIST_INT32: return "toIntArray";
    case DIST_INT64: return "toLongArray";
    default: return "toByteArray";
  }
}

/* 1 when the tensor's buffer is host memory (its device is a CPU); otherwise throws a
 * DistributeException (FAILED_PRECONDITION for device memory, as the Go and Rust bindings
 * answer) and returns 0. Java must never read device memory: a GPU pointer faults. */
static int host_only(JNIEnv* env, const dist_value_t* t, const char* op) {
  const char* name = NULL;
  dist_status_t st = dist_tensor_device(t, &name);
  CHECK_OR(st, 0);
  dist_device_t* device = NULL;
  st = dist_device_parse(name, &device);
  CHECK_OR(st, 0);
  dist_device_type_t type = 0;
  st = dist_device_type(device, &type);
  if (st != DIST_OK) {
    dj_throw_status(env, st);
    dist_device_destroy(device);
    return 0;
  }
  if (type == DIST_DEVICE_CPU) {
    dist_device_destroy(device);
    return 1;
  }
  char msg[512];
  snprintf(msg, sizeof msg,
           "Tensor.%s: the tensor is on %s, in device memory, which Java cannot read: "
           "copy it to the host first (copyToDevice(\"CPU:0\"))",
           op, name ? name : "?");
  dist_device_destroy(device);  /* `name` is the tensor's, still valid */
  throw_code(env, DIST_FAILED_PRECONDITION, msg);
  return 0;
}

/* A direct ByteBuffer over the tensor's memory (no copy), valid while the tensor lives.
 * A tensor in device memory is refused (the buffer would point at GPU memory). */
NATIVE(jobject, tensorData)(JNIEnv* env, jclass cls, jlong tensor) {
  (void)cls;
  const dist_value_t* t = (const dist_value_t*)(intptr_t)tensor;
  void* data = NULL;
  size_t size = 0;
  if (!host_only(env, t, "data")) return NULL;
  dist_status_t st = dist_tensor_data(t, &data);
  CHECK_OR(st, NULL);
  st = dist_tensor_byte_size(t, &size);
  CHECK_OR(st, NULL);
  static char empty;
  return (*env)->NewDirectByteBuffer(env, data ? data : &empty, (jlong)size);
}

/* Copies the tensor's bytes straight into a primitive array (one copy). `dtype` is the
 * dtype the array's element type stands for (0: any, the byte reads): another dtype is
 * INVALID_ARGUMENT naming both, checked before anything is read, as the Go and Rust
 * bindings do; a tensor in device memory is FAILED_PRECONDITION. */
NATIVE(void, tensorCopyTo)(JNIEnv* env, jclass cls, jlong tensor, jint dtype, jobject array, jlong byte_size) {
  (void)cls;
  const dist_value_t* t = (const dist_value_t*)(intptr_t)tensor;
  const char* op = read_name((dist_dtype_t)dtype);
  dist_dtype_t actual = 0;
  dist_status_t st = dist_tensor_dtype(t, &actual);
  CHECK_OR(st);
  if (dtype != 0 && actual != (dist_dtype_t)dtype) {
    char msg[256];
    const char* have = dist_dtype_name(actual);
    const char* want = dist_dtype_name((dist_dtype_t)dtype);
    snprintf(msg, sizeof msg, "Tensor.%s: the tensor is %s, asked for %s", op, have ? have : "?",
             want ? want : "?");
    throw_code(env, DIST_INVALID_ARGUMENT, msg);
    return;
  }
  if (!host_only(env, t, op)) return;
  void* data = NULL;
  size_t size = 0;
  st = dist_tensor_data(t, &data);
  CHECK_OR(st);
  st = dist_tensor_byte_size(t, &size);
  CHECK_OR(st);
  if ((size_t)byte_size != size) {
    dj_throw_illegal(env, "array size does not match the tensor's byte size");
    return;
  }
  void* a = (*env)->GetPrimitiveArrayCritical(env, (jarray)array, NULL);
  if (!a) return;
  if (size) memcpy(a, data, size);
  (*env)->ReleasePrimitiveArrayCritical(env, (jarray)array, a, 0);
}

/* ---- Datasets ---- */

NATIVE(jlong, datasetFromTensorSlices)(JNIEnv* env, jclass cls, jlongArray components) {
  (void)cls;
  int32_t n;
  const dist_value_t** c = handles(env, components, &n);
  dist_dataset_t* out = NULL;
  dist_status_t st = dist_dataset_from_tensor_slices(c, n, &out);
  free(c);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* state: a new global reference owned by the library on success (released by free_fn). */
NATIVE(jlong, datasetFromGenerator)(JNIEnv* env, jclass cls, jobject state, jint num_components) {
  (void)cls;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_dataset_t* out = NULL;
  dist_status_t st = dist_dataset_from_generator(generator_tramp, ref, free_tramp, num_components, &out);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

NATIVE(jlong, datasetMap)(JNIEnv* env, jclass cls, jlong dataset, jobject state, jint num_outputs,
                          jint num_parallel_calls) {
  (void)cls;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_dataset_t* out = NULL;
  dist_status_t st = dist_dataset_map((const dist_dataset_t*)(intptr_t)dataset, map_tramp, ref,
                                      free_tramp, num_outputs, num_parallel_calls, &out);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* kind 0: text files, 1: fixed-length records, 2: TFRecord files. */
/* kind: 0 text, 1 fixed-length records, 2 TFRecord, 3 compressed TFRecord (`compression`). */
NATIVE(jlong, datasetFromFiles)(JNIEnv* env, jclass cls, jint kind, jobjectArray paths,
                                jlong record_bytes, jlong header_bytes, jlong footer_bytes,
                                jint compression) {
  (void)cls;
  strings s;
  dist_dataset_t* out = NULL;
  if (!strings_get(env, paths, &s)) { strings_free(env, &s); return 0; }
  const char* const* p = paths ? s.c : NULL;
  dist_status_t st =
      kind == 0   ? dist_dataset_from_text_files(p, s.n, &out)
      : kind == 1 ? dist_dataset_from_fixed_length_records(p, s.n, record_bytes, header_bytes,
                                                           footer_bytes, &out)
      : kind == 2 ? dist_dataset_from_tfrecord_files(p, s.n, &out)
                  : dist_dataset_from_compressed_tfrecord_files(p, s.n, (dist_compression_t)compression,
                                                                &out);
  strings_free(env, &s);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* Returns the next element's handles, or null at the end (get_next_as_optional when
 * `optional`, else get_next, which fails with DIST_OUT_OF_RANGE at the end). */
NATIVE(jlongArray, iteratorGetNext)(JNIEnv* env, jclass cls, jlong it, jint count, jboolean optional) {
  (void)cls;
  if (count < 0) { dj_throw_illegal(env, "count < 0"); return NULL; }
  dist_value_t** outs = (dist_value_t**)calloc((size_t)(count ? count : 1), sizeof(void*));
  int32_t has = 1;
  dist_status_t st = optional ? dist_iterator_get_next_as_optional((dist_iterator_t*)(intptr_t)it,
                                                                   outs, count, &has)
                              : dist_iterator_get_next((dist_iterator_t*)(intptr_t)it, outs, count);
  if (st != DIST_OK) { free(outs); dj_throw_status(env, st); return NULL; }
  jlongArray r = has ? to_longs(env, outs, count) : NULL;
  free(outs);
  return r;
}

NATIVE(jlong, distributeDatasetsFromFunction)(JNIEnv* env, jclass cls, jlong strategy,
                                              jobject state, jlong options) {
  (void)cls;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_distributed_dataset_t* out = NULL;
  dist_status_t st = dist_strategy_distribute_datasets_from_function(
      (dist_strategy_t*)(intptr_t)strategy, dataset_tramp, ref, free_tramp,
      (const dist_input_options_t*)(intptr_t)options, &out);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  CHECK_OR(st, 0);
  return (jlong)(intptr_t)out;
}

/* The C function takes no free_fn: the global reference to `state` is returned next to the
 * iterator ({iterator, reference}) and dropped with deleteGlobalRef when the iterator closes. */
NATIVE(jlongArray, makeInputFnIterator)(JNIEnv* env, jclass cls, jlong strategy, jobject state) {
  (void)cls;
  dist_iterator_t* out = NULL;
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_strategy_make_input_fn_iterator((dist_strategy_t*)(intptr_t)strategy,
                                                          dataset_tramp, (void*)ref, &out);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  CHECK_OR(st, NULL);
  jlong r[2] = {(jlong)(intptr_t)out, (jlong)(intptr_t)ref};
  jlongArray a = (*env)->NewLongArray(env, 2);
  if (a) (*env)->SetLongArrayRegion(env, a, 0, 2, r);
  return a;
}

NATIVE(void, deleteGlobalRef)(JNIEnv* env, jclass cls, jlong ref) {
  (void)cls;
  if (ref) (*env)->DeleteGlobalRef(env, (jobject)(intptr_t)ref);
}

/* ---- Server ---- */

NATIVE(void, serverKeyValueSet)(JNIEnv* env, jclass cls, jlong server, jstring key, jbyteArray value) {
  (void)cls;
  const char* k = dj_utf(env, key);
  jsize n = value ? (*env)->GetArrayLength(env, value) : 0;
  jbyte* v = value ? (*env)->GetByteArrayElements(env, value, NULL) : NULL;
  dist_status_t st = dist_server_key_value_set((dist_server_t*)(intptr_t)server, k, v, (size_t)n);
  if (v) (*env)->ReleaseByteArrayElements(env, value, v, JNI_ABORT);
  dj_utf_release(env, key, k);
  CHECK_OR(st);
}

NATIVE(jstring, lastErrorMessage)(JNIEnv* env, jclass cls) {
  (void)cls;
  return dj_string(env, dist_last_error_message());
}

/* ---- Parameter servers ---- */

/* state: a new global reference owned by the library on success (released by free_fn when
 * the function is unregistered). The Java side checks that the parallel arrays agree. */
NATIVE(void, functionRegister)(JNIEnv* env, jclass cls, jstring name, jobject state, jint num_args,
                               jobjectArray slot_names, jdoubleArray slot_initial_values,
                               jobjectArray hyperparameter_names, jdoubleArray hyperparameter_defaults) {
  (void)cls;
  strings slots, hypers;
  int ok_slots = strings_get(env, slot_names, &slots);
  int ok_hypers = ok_slots && strings_get(env, hyperparameter_names, &hypers);
  if (!ok_hypers) {
    strings_free(env, &slots);
    if (ok_slots) strings_free(env, &hypers);
    return;
  }
  jdouble* initial = slot_initial_values ? (*env)->GetDoubleArrayElements(env, slot_initial_values, NULL) : NULL;
  jdouble* defaults =
      hyperparameter_defaults ? (*env)->GetDoubleArrayElements(env, hyperparameter_defaults, NULL) : NULL;
  const char* c_name = dj_utf(env, name);
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_function_register(
      c_name, registered_update_tramp, ref, free_tramp, num_args, slot_names ? slots.c : NULL,
      initial, slots.n, hyperparameter_names ? hypers.c : NULL, defaults, hypers.n);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  dj_utf_release(env, name, c_name);
  if (initial) (*env)->ReleaseDoubleArrayElements(env, slot_initial_values, initial, JNI_ABORT);
  if (defaults) (*env)->ReleaseDoubleArrayElements(env, hyperparameter_defaults, defaults, JNI_ABORT);
  strings_free(env, &slots);
  strings_free(env, &hypers);
  CHECK_OR(st);
}

/* ---- Coordinator ---- */

/* state: a new global reference owned by the library on success (released by free_fn when
 * the function is unregistered). */
NATIVE(void, closureRegister)(JNIEnv* env, jclass cls, jstring name, jobject state) {
  (void)cls;
  const char* c_name = dj_utf(env, name);
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_closure_register(c_name, closure_tramp, ref, free_tramp);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  dj_utf_release(env, name, c_name);
  CHECK_OR(st);
}

NATIVE(void, datasetFunctionRegister)(JNIEnv* env, jclass cls, jstring name, jobject state) {
  (void)cls;
  const char* c_name = dj_utf(env, name);
  jobject ref = (*env)->NewGlobalRef(env, state);
  dist_status_t st = dist_dataset_function_register(c_name, dataset_tramp, ref, free_tramp);
  if (st != DIST_OK) (*env)->DeleteGlobalRef(env, ref);
  dj_utf_release(env, name, c_name);
  CHECK_OR(st);
}

NATIVE(void, variableApplyUpdate)(JNIEnv* env, jclass cls, jlong variable, jstring function,
                                  jlongArray args, jobjectArray hyperparameter_names,
                                  jdoubleArray hyperparameter_values) {
  (void)cls;
  strings hypers;
  if (!strings_get(env, hyperparameter_names, &hypers)) { strings_free(env, &hypers); return; }
  int32_t n;
  const dist_value_t** a = handles(env, args, &n);
  jdouble* values =
      hyperparameter_values ? (*env)->GetDoubleArrayElements(env, hyperparameter_values, NULL) : NULL;
  const char* c_function = dj_utf(env, function);
  dist_status_t st = a ? dist_variable_apply_update((dist_value_t*)(intptr_t)variable, c_function, a, n,
                                                    hyperparameter_names ? hypers.c : NULL, values, hypers.n)
                       : DIST_RESOURCE_EXHAUSTED;
  dj_utf_release(env, function, c_function);
  if (values) (*env)->ReleaseDoubleArrayElements(env, hyperparameter_values, values, JNI_ABORT);
  free(a);
  strings_free(env, &hypers);
  CHECK_OR(st);
}

/* The variables' new tensors, in their order (none on error). */
NATIVE(jlongArray, variablesRead)(JNIEnv* env, jclass cls, jlongArray variables) {
  (void)cls;
  int32_t n;
  const dist_value_t** v = handles(env, variables, &n);
  dist_value_t** outs = (dist_value_t**)calloc((size_t)(n ? n : 1), sizeof(void*));
  dist_status_t st = v && outs ? dist_variables_read(v, n, outs) : DIST_RESOURCE_EXHAUSTED;
  free(v);
  if (st != DIST_OK) { free(outs); dj_throw_status(env, st); return NULL; }
  jlongArray r = to_longs(env, outs, n);
  if (!r) for (int32_t i = 0; i < n; i++) dist_value_destroy(outs[i]); /* OutOfMemoryError pending */
  free(outs);
  return r;
}

/* `args` holds num_args handles per variable, row-major, as the C call reads them. */
NATIVE(void, variablesApplyUpdate)(JNIEnv* env, jclass cls, jlongArray variables, jstring function,
                                   jlongArray args, jint num_args, jobjectArray hyperparameter_names,
                                   jdoubleArray hyperparameter_values) {
  (void)cls;
  strings hypers;
  if (!strings_get(env, hyperparameter_names, &hypers)) { strings_free(env, &hypers); return; }
  int32_t n, num_handles;
  const dist_value_t** v = handles(env, variables, &n);
  const dist_value_t** a = handles(env, args, &num_handles);
  jdouble* values =
      hyperparameter_values ? (*env)->GetDoubleArrayElements(env, hyperparameter_values, NULL) : NULL;
  const char* c_function = dj_utf(env, function);
  dist_status_t st = v && a ? dist_variables_apply_update((dist_value_t* const*)v, n, c_function, a, num_args,
                                                          hyperparameter_names ? hypers.c : NULL, values, hypers.n)
                            : DIST_RESOURCE_EXHAUSTED;
  dj_utf_release(env, function, c_function);
  if (values) (*env)->ReleaseDoubleArrayElements(env, hyperparameter_values, values, JNI_ABORT);
  free(a);
  free(v);
  strings_free(env, &hypers);
  CHECK_OR(st);
}
