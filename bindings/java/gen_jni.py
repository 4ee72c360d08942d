#!/usr/bin/env python3
"""Generates the mechanical part of the Java binding from the public C header.

Every DIST_API function whose parameters are all simple (handles, integers, strings, and
one trailing out-parameter) becomes one JNI function in native/generated_jni.c and one
`static native` method in src/org/distribute/NativeGen.java. The rest (arrays, callbacks,
raw memory) are written by hand in native/distribute_jni.c and listed in HAND_WRITTEN; the
script fails when a header function is in neither set, so nothing goes missing silently.

Usage: gen_jni.py INCLUDE_DIR [--check]   (--check: exit 1 when the committed files are stale)
"""
import os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADERS = ["version", "status", "device", "value", "tensor", "cross_device_ops", "strategy", "context",
           "variable", "dataset", "input", "cluster", "server", "dlpack_interop", "parameter_server", "coordinator"]
# Written by hand in native/distribute_jni.c (arrays, callbacks, raw memory).
HAND_WRITTEN = {
    "dist_strategy_create_mirrored": "NativeHand.createMirrored (Strategy.mirrored)",
    "dist_strategy_create_central_storage": "NativeHand.createCentralStorage (Strategy.centralStorage)",
    "dist_cluster_from_slurm": "NativeHand.clusterFromSlurm (Cluster.fromSlurm)",
    "dist_strategy_run": "NativeHand.run (Strategy.run)",
    "dist_strategy_distribute_values_from_function": "NativeHand.distributeValuesFromFunction (Strategy.distributeValuesFromFunction)",
    "dist_strategy_batch_reduce_to": "NativeHand.batchReduceTo (Strategy.batchReduceTo)",
    "dist_strategy_update": "NativeHand.update (Strategy.update)",
    "dist_context_batch_all_reduce": "NativeHand.batchAllReduce (ReplicaContext.batchAllReduce)",
    "dist_context_merge_call": "NativeHand.mergeCall (ReplicaContext.mergeCall)",
    "dist_value_create_per_replica": "NativeHand.createPerReplica (Value.perReplica)",
    "dist_value_create_mirrored": "NativeHand.createPerReplica (Value.mirrored)",
    "dist_tensor_create": "NativeHand.tensorCreate (Tensor.create, Tensor.scalar)",
    "dist_tensor_wrap": "NativeHand.tensorWrap (Tensor.wrap)",
    "dist_tensor_shape": "NativeHand.tensorShape (Tensor.shape)",
    "dist_tensor_data": "NativeHand.tensorData, tensorCopyTo (Tensor.data, toFloatArray, ...)",
    "dist_dataset_from_tensor_slices": "NativeHand.datasetFromTensorSlices (Dataset.fromTensorSlices)",
    "dist_dataset_from_generator": "NativeHand.datasetFromGenerator (Dataset.fromGenerator)",
    "dist_dataset_from_text_files": "NativeHand.datasetFromFiles (Dataset.fromTextFiles)",
    "dist_dataset_from_fixed_length_records": "NativeHand.datasetFromFiles (Dataset.fromFixedLengthRecords)",
    "dist_dataset_from_tfrecord_files": "NativeHand.datasetFromFiles (Dataset.fromTFRecordFiles)",
    "dist_dataset_from_compressed_tfrecord_files": "NativeHand.datasetFromFiles (Dataset.fromTFRecordFiles(Compression, String...))",
    "dist_dataset_map": "NativeHand.datasetMap (Dataset.map)",
    "dist_iterator_get_next": "NativeHand.iteratorGetNext (DistributedIterator.next)",
    "dist_iterator_get_next_as_optional": "NativeHand.iteratorGetNext (DistributedIterator.nextOrNull)",
    "dist_strategy_distribute_datasets_from_function": "NativeHand.distributeDatasetsFromFunction (Strategy.distributeDatasetsFromFunction)",
    "dist_strategy_make_input_fn_iterator": "NativeHand.makeInputFnIterator (Strategy.makeInputFnIterator)",
    "dist_server_key_value_set": "NativeHand.serverKeyValueSet (Server.keyValueSet)",
    "dist_function_register": "NativeHand.functionRegister (UpdateFunctions.register)",
    "dist_variable_apply_update": "NativeHand.variableApplyUpdate (Variable.applyUpdate)",
    "dist_variables_apply_update": "NativeHand.variablesApplyUpdate (Variable.applyUpdates)",
    "dist_variables_read": "NativeHand.variablesRead (Variable.readAll)",
    "dist_closure_register": "NativeHand.closureRegister (Coordinator.registerClosure)",
    "dist_dataset_function_register": "NativeHand.datasetFunctionRegister (Coordinator.registerDatasetFunction)",
    "dist_last_error_message": "NativeHand.lastErrorMessage (Distribute.lastErrorMessage; every DistributeException's message)",
}
INT32 = {"int32_t"} | set()
HANDLE = re.compile(r"^(const )?(dist_[a-z_]+_t|DLManagedTensor)\*$")


def parse(include_dir):
    funcs = []
    for h in HEADERS:
        path = os.path.join(include_dir, "distribute", h + ".h")
        if not os.path.exists(path):  # version.h is configured; its declarations are in .in
            path += ".in"
        text = open(path).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        int_typedefs = set(re.findall(r"typedef int32_t (dist_\w+_t);", text))
        INT32.update(int_typedefs)
        for m in re.finditer(r"DIST_API\s+(?:DIST_NODISCARD\s+)?([^;]*?)\s*(\w+)\s*\(([^)]*)\)\s*;",
                             text, flags=re.S):
            ret, name, params = m.group(1).strip(), m.group(2), " ".join(m.group(3).split())
            ps = []
            if params and params != "void":
                for p in params.split(","):
                    p = p.strip()
                    pm = re.match(r"^(.*?)\s*(\w+)$", p)
                    ps.append((pm.group(1).replace(" *", "*").replace("* ", "*").strip(), pm.group(2)))
            funcs.append((ret.replace(" *", "*"), name, ps))
    return funcs


def jname(cname):
    parts = cname[len("dist_"):].split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def in_param(t):
    """(java type, jni type, C conversion expression template) for an input parameter."""
    if t in INT32:
        return "int", "jint", "(%s)%%s" % t
    if t in ("int64_t", "uint64_t", "size_t"):
        return "long", "jlong", "(%s)%%s" % t
    if t == "const char*":
        return "String", "jstring", None
    if HANDLE.match(t):
        return "long", "jlong", "(%s)(intptr_t)%%s" % t
    return None


def out_param(t):
    """(java return type, jni type, C local type) for the trailing out-parameter."""
    base = t[:-1]
    if base in INT32:
        return "int", "jint", base
    if base in ("int64_t", "size_t"):
        return "long", "jlong", base
    if base == "float":
        return "float", "jfloat", base
    if base == "double":
        return "double", "jdouble", base
    if base == "const char*":
        return "String", "jstring", base
    if HANDLE.match(base) and t.endswith("**"):
        return "long", "jlong", base
    return None


def generate(include_dir):
    funcs = parse(include_dir)
    c = ["/* Generated by bindings/java/gen_jni.py from include_c/distribute: do not edit. */",
         '#include "jni_common.h"', ""]
    j = ["// Generated by bindings/java/gen_jni.py from include_c/distribute: do not edit.",
         "package org.distribute;", "",
         "/** One static method per simple C function: handles are longs, statuses throw. */",
         "final class NativeGen {", "  private NativeGen() {}", "", "  static {", "    Lib.load();", "  }", ""]
    missing = []
    generated = []
    for ret, name, ps in funcs:
        if name in HAND_WRITTEN:
            continue
        status = ret == "dist_status_t"
        outs = None
        ins = ps
        # A trailing `out*` is an out-parameter, unless it is a handle passed by value (the
        # existing tensor dist_context_all_reduce_into writes into): that is an input.
        if status and ps and (ps[-1][1].startswith("out") or ps[-1][0].endswith("**")) \
                and not (HANDLE.match(ps[-1][0]) and ps[-1][0][:-1] not in INT32):
            outs = out_param(ps[-1][0])
            if outs is None:
                missing.append(name); continue
            ins = ps[:-1]
        conv = [in_param(t) for t, _ in ins]
        if any(x is None for x in conv):
            missing.append(name); continue
        if status:
            jret, jniret = (outs[0], outs[1]) if outs else ("void", "void")
        elif ret == "void":
            jret, jniret = "void", "void"
        elif ret == "const char*":
            jret, jniret = "String", "jstring"
        elif ret == "int32_t":
            jret, jniret = "int", "jint"
        elif HANDLE.match(ret):
            jret, jniret = "long", "jlong"
        else:
            missing.append(name); continue
        jm = jname(name)
        jargs = ", ".join("%s %s" % (cv[0], n) for cv, (t, n) in zip(conv, ins))
        j.append("  static native %s %s(%s);" % (jret, jm, jargs))
        cargs = "".join(", %s %s" % (cv[1], n) for cv, (t, n) in zip(conv, ins))
        c.append("JNIEXPORT %s JNICALL Java_org_distribute_NativeGen_%s(JNIEnv* env, jclass cls%s) {"
                 % (jniret, jm.replace("_", "_1"), cargs))
        c.append("  (void)cls;")
        body, calls, frees = [], [], []
        for cv, (t, n) in zip(conv, ins):
            if cv[1] == "jstring":
                body.append("  const char* c_%s = dj_utf(env, %s);" % (n, n))
                body.append("  if (%s && !c_%s) return%s;" % (n, n, "" if jniret == "void" else " 0"))
                frees.append("  dj_utf_release(env, %s, c_%s);" % (n, n))
                calls.append("c_" + n)
            else:
                calls.append(cv[2] % n)
        if outs:
            init = "NULL" if outs[2].endswith("*") else "0"
            body.append("  %s out_value = %s;" % (outs[2], init))
            calls.append("&out_value")
        call = "%s(%s)" % (name, ", ".join(calls))
        if status:
            body.append("  dist_status_t st = %s;" % call)
            body.extend(frees)
            ret0 = "" if jniret == "void" else " 0"
            body.append("  if (st != DIST_OK) { dj_throw_status(env, st); return%s; }" % ret0)
            if outs:
                if outs[1] == "jstring":
                    body.append("  return dj_string(env, out_value);")
                elif outs[1] == "jlong" and outs[2].endswith("*"):
                    body.append("  return (jlong)(intptr_t)out_value;")
                else:
                    body.append("  return (%s)out_value;" % outs[1])
        elif ret == "void":
            body.append("  %s;" % call)
            body.extend(frees)
        elif ret == "const char*":
            body.append("  const char* r = %s;" % call)
            body.extend(frees)
            body.append("  return dj_string(env, r);")
        elif ret == "int32_t":
            body.append("  return (jint)%s;" % call)
        else:
            body.append("  jlong r = (jlong)(intptr_t)%s;" % call)
            body.extend(frees)
            body.append("  return r;")
        c.extend(body)
        c.append("}")
        c.append("")
        generated.append(name)
    j.append("}")
    listing = ["# Every public C function and where the Java binding wraps it (generated by gen_jni.py).",
               "# <C function> generated NativeGen.<method> (native/generated_jni.c), or",
               "# <C function> hand NativeHand.<method> (public API) (native/distribute_jni.c)"]
    for ret, name, ps in funcs:
        if name in HAND_WRITTEN:
            listing.append("%s hand %s" % (name, HAND_WRITTEN[name]))
        elif name in generated:
            listing.append("%s generated NativeGen.%s" % (name, jname(name)))
    return "\n".join(c) + "\n", "\n".join(j) + "\n", "\n".join(listing) + "\n", missing, funcs


def main():
    include_dir = sys.argv[1]
    check = "--check" in sys.argv
    c, j, listing, missing, funcs = generate(include_dir)
    names = {n for _, n, _ in funcs}
    stale_hand = set(HAND_WRITTEN) - names
    if missing or stale_hand:
        print("gen_jni.py: not wrapped: %s; hand-written but not in header: %s"
              % (sorted(missing), sorted(stale_hand)), file=sys.stderr)
        sys.exit(1)
    outputs = {os.path.join(HERE, "native", "generated_jni.c"): c,
               os.path.join(HERE, "src", "org", "distribute", "NativeGen.java"): j,
               os.path.join(HERE, "COVERAGE.txt"): listing}
    stale = False
    for path, content in outputs.items():
        old = open(path).read() if os.path.exists(path) else None
        if old != content:
            stale = True
            if not check:
                open(path, "w").write(content)
    if check and stale:
        print("gen_jni.py: generated files are stale; run bindings/java/gen_jni.py include_c", file=sys.stderr)
        sys.exit(1)
    print("gen_jni.py: %d functions (%d generated, %d hand-written)%s"
          % (len(funcs), len(funcs) - len(HAND_WRITTEN), len(HAND_WRITTEN), ", up to date" if check else ""))


main()
